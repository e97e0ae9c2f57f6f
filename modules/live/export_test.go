package live

import (
	"time"

	"github.com/onair/onair/modules/live/hls"
)

// SignToken and ValidToken expose the media signer to the tests of other
// nodes' agreement on it.
func (m *Module) SignToken(showID int64, now time.Time) string { return m.signer.token(showID, now) }

func (m *Module) ValidToken(showID int64, token string, now time.Time) bool {
	return m.signer.valid(showID, token, now)
}

// NodeID is the cluster id of this node ("" without Redis).
func (m *Module) NodeID() string {
	if m.cluster == nil {
		return ""
	}
	return m.cluster.id
}

// NodeURLFor exposes the derivation of the default ONAIR_NODE_URL.
func NodeURLFor(setting, httpAddr string) (string, error) { return nodeURL(setting, httpAddr) }

// ParseNodeURL exposes the check of ONAIR_NODE_URL.
func ParseNodeURL(v string) (any, error) { return parseNodeURL(v) }

// InMemory tells whether the show's file is served from memory.
func (m *Module) InMemory(showID int64, file string) bool { return m.media.has(showID, file) }

// SetMediaLimits changes the in-memory live edge's bounds, in bytes,
// before a publication starts (each publication's start reads them under
// the cache's lock).
func (m *Module) SetMediaLimits(max, perShow int64) {
	m.media.mu.Lock()
	m.media.max, m.media.perShow = max, perShow
	m.media.mu.Unlock()
}

// ParsedTags counts the FLV tags the show's publisher on this node has had
// parsed into access units; ok is false without one.
func (m *Module) ParsedTags(showID int64) (n uint64, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.streams[showID]
	if s == nil {
		return 0, false
	}
	return s.demux.Parsed(), true
}

// OpenLive makes the show's live state on this node, as a publication's
// start does (before any playlist), so blocking requests wait for it.
func (m *Module) OpenLive(showID int64) { m.liveFor(showID) }

// Blocking counts the LL-HLS requests this node holds now.
func (m *Module) Blocking() int64 { return m.waiting.now.Load() }

// ParseTranscode exposes the parser of ONAIR_TRANSCODE, whose value tests
// set with Config.Set.
func ParseTranscode(v string) (any, error) { return parseTranscode(v) }

// TranscoderPID is the process id of the show's ffmpeg transcoder on
// this node, 0 when none runs.
func (m *Module) TranscoderPID(showID int64) int {
	m.mu.Lock()
	s := m.streams[showID]
	m.mu.Unlock()
	if s == nil {
		return 0
	}
	tc := s.transcoder.Load()
	if tc == nil {
		return 0
	}
	tc.mu.Lock()
	defer tc.mu.Unlock()
	return tc.pid
}

// ShowDir is the show's working directory on this node.
func (m *Module) ShowDir(id int64) string { return m.showDir(id) }

// HoldLive starts the show's live files in memory, as a publication does,
// and returns what puts one there (the packager's Put).
func (m *Module) HoldLive(showID int64) func(name string, data []byte, mod time.Time) {
	return m.media.start(showID).Put
}

// SetFront turns the server's front off (false) or on for live media.
func (m *Module) SetFront(on bool) { m.front.off.Store(!on) }

// SetFrontHook runs hook where the front answers a request (nil: none).
func (m *Module) SetFrontHook(hook func()) {
	if hook == nil {
		m.front.hook.Store(nil)
		return
	}
	m.front.hook.Store(&hook)
}

// PackageLive opens a packager of the show's live stream on this node as
// a publication does (its working directory, its live files in memory,
// its blocking reloads), for tests that feed it units themselves.
func (m *Module) PackageLive(showID int64) (*hls.Packager, error) {
	opts := hls.Options{Live: m.liveFor(showID), DVR: m.dvr}
	if files := m.media.start(showID); files != nil {
		opts.Files = files
	}
	return hls.Open(m.showDir(showID), opts)
}
