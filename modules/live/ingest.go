package live

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/onair/onair/modules/live/hls"
	"github.com/onair/onair/modules/live/rtmp"
	"github.com/onair/onair/modules/live/srt"
	"github.com/onair/onair/modules/live/streamcore"
	"github.com/onair/onair/modules/shows"
)

// Reasons a publisher is cut off.
var (
	errReplaced = errors.New("live: a new connection took over the stream key")
	errStopped  = errors.New("live: the show was stopped")
)

// replaceWait bounds how long a new publisher waits for the connection it
// replaces to let go of the show's files.
const replaceWait = 5 * time.Second

// authorizeWait bounds the stream key check of a publish.
const authorizeWait = 15 * time.Second

// stream is one accepted publication of a show: the RTMP source of the
// stream core. It is the rtmp.Sink: each FLV tag is parsed once, into
// units (streamcore.FLV), and written to the core, which decides the
// tracks before anything is touched, measures the publication and feeds
// its readers (the HLS packager, followers.go). What the stream needs of
// the module it asks through publications, set in wiring.
type stream struct {
	pubs   publications
	log    *slog.Logger
	showID int64
	userID int64 // the show's owner
	dir    string
	req    rtmp.PublishRequest
	// ctx is the publisher's connection: it ends when the connection does.
	ctx    context.Context
	closed chan struct{}
	core   *streamcore.Stream
	// refusals counts publications refused for their codec (the
	// module's metric).
	refusals *atomic.Uint64
	// protocol is the source's: rtmp, rtmps or srt (sources.go); link,
	// for SRT, measures the connection.
	protocol string
	link     func() srt.LinkStats

	// transcoder makes the show's ladder (transcode.go), if it has one.
	transcoder atomic.Pointer[transcoder]

	// Touched only on the connection's goroutine.
	demux  streamcore.FLV
	err    error // what ended the publication; a refusal from onMetaData is returned at the next tag
	leased bool  // holds the show's cluster lease (cluster.go)
}

// publications is what a stream asks of the module (ingest.go): to make
// it the show's publisher once its tracks are decided (claim the show,
// open the packager, register its readers and followers), and to let go
// of the show when it leaves.
type publications interface {
	decided(s *stream, t streamcore.Tracks) error
	left(s *stream, reason error)
}

// publish is the rtmp.Handler of the plain RTMP listener.
func (m *Module) publish(ctx context.Context, req rtmp.PublishRequest) (rtmp.Sink, error) {
	return m.publishOver(ctx, protoRTMP, req)
}

// publishOver is the rtmp.Handler of a listener of proto (RTMP, RTMPS).
func (m *Module) publishOver(ctx context.Context, proto string, req rtmp.PublishRequest) (rtmp.Sink, error) {
	if m.app != "" && req.App != m.app {
		return nil, fmt.Errorf("live: unknown application %q", req.App)
	}
	return m.newStream(ctx, proto, req)
}

// newStream checks the key against the shows and returns a stream of
// proto that decides the tracks before it claims the show. Every source
// comes here: req describes its publisher (an SRT one has no App).
func (m *Module) newStream(ctx context.Context, proto string, req rtmp.PublishRequest) (*stream, error) {
	// The admission deadline does not run meanwhile (rtmp.Handler): the
	// check has its own bound.
	actx, cancel := context.WithTimeout(ctx, authorizeWait)
	sh, err := m.shows.Keys.Authorize(actx, req.Key)
	cancel()
	if err != nil {
		m.core.Log.Warn("publish refused", "protocol", proto, "remote", req.RemoteAddr.String(), "reason", err)
		if !errors.Is(err, shows.ErrRefused) {
			// Not the key's fault: neither "unauthorized" nor counted by
			// the stream key throttle.
			return nil, &rtmp.StatusError{Code: "NetStream.Publish.Rejected",
				Description: "The server could not check the stream key; try again.", Err: err}
		}
		return nil, fmt.Errorf("%w: %v", rtmp.ErrUnauthorized, err)
	}
	if err := m.checkRoom(sh.ID, req.RemoteAddr.String()); err != nil {
		return nil, err
	}
	refusals := m.codecRefusalsBy[proto]
	if refusals == nil {
		refusals = &m.codecRefusals
	}
	s := &stream{pubs: m, log: m.core.Log, showID: sh.ID, userID: sh.UserID, dir: m.showDir(sh.ID), req: req, ctx: ctx,
		closed: make(chan struct{}), refusals: refusals, protocol: proto}
	s.core = streamcore.New(time.Now(), streamcore.Options{TrackWait: m.trackWait, AudioOnly: sh.AudioOnly,
		Decided: func(t streamcore.Tracks) error { return s.pubs.decided(s, t) }})
	m.mu.Lock()
	m.probing[s] = struct{}{}
	m.mu.Unlock()
	m.core.Log.Info("publisher connected", "show", sh.ID, "protocol", proto, "remote", req.RemoteAddr.String())
	return s, nil
}

// Metadata takes the encoder's announcement of its tracks while they are
// being decided; later ones change nothing but the picture size.
func (s *stream) Metadata(meta map[string]any) {
	if err := s.core.Metadata(meta); err != nil && s.err == nil {
		s.err = s.refuse(err)
	}
}

func (s *stream) Video(ts int64, body []byte) error { return s.media(true, ts, body) }
func (s *stream) Audio(ts int64, body []byte) error { return s.media(false, ts, body) }

// media parses a tag, once, and writes it to the core. An audio-only
// show's video is dropped unread.
func (s *stream) media(video bool, ts int64, body []byte) error {
	if s.err != nil {
		return s.err
	}
	now := time.Now()
	var (
		u   streamcore.Unit
		ok  bool
		err error
	)
	switch {
	case video && s.core.AudioOnly():
		err = s.core.IgnoreVideo(ts, len(body), now)
	case video:
		u, ok, err = s.demux.Video(ts, body, now)
	default:
		u, ok, err = s.demux.Audio(ts, body, now)
	}
	if err == nil && ok {
		err = s.core.Write(u)
	}
	if err != nil {
		s.err = s.refuse(err)
	}
	return s.err
}

// refuse turns the core's refusals into RTMP ones: a codec refusal is
// logged, naming the codec, and counted.
func (s *stream) refuse(err error) error {
	var ce streamcore.CodecError
	switch {
	case errors.As(err, &ce):
		s.refusals.Add(1)
		s.log.Warn("publish refused: unsupported codec", "show", s.showID, "codec", ce.Codec.String(),
			"remote", s.req.RemoteAddr.String())
		return unsupportedCodec(ce.Codec)
	case errors.Is(err, streamcore.ErrNoAudio):
		return errNoAudio
	}
	var re *streamcore.ReaderError
	if errors.As(err, &re) {
		return re.Err // the packager's own words (a full disk: hlsReader)
	}
	return err
}

// Close is called once when the publisher leaves or is cut off.
func (s *stream) Close(reason error) {
	s.pubs.left(s, reason)
	s.log.Info("publisher left", "show", s.showID, "reason", fmt.Sprint(reason))
	close(s.closed)
}

// decided runs once the tracks are decided, on the connection's
// goroutine: it takes the show's slot (a publisher already there, a
// half-open earlier connection or one racing this one, is cut off, and
// this one waits until it has let go of the files), opens the packager and
// subscribes it to the stream with the segment's followers.
func (m *Module) decided(s *stream, t streamcore.Tracks) error {
	if err := m.claim(s); err != nil {
		return err
	}
	var up *uploader
	if m.mirror {
		archived, err := m.restoreDir(s.ctx, s.showID, s.dir)
		if err != nil {
			if !fileExists(filepath.Join(s.dir, hls.IndexFile)) {
				// Without the stored index the numbering would start
				// over and overwrite stored segments: the encoder retries.
				return fmt.Errorf("live: show %d: media store: %w", s.showID, err)
			}
			m.core.Log.Warn("live: media store unreachable; the recording continues from this node's files", "show", s.showID, "err", err)
		}
		up = m.newUploader(s.showID, s.dir, archived)
		up.start()
	}
	part := m.partDuration
	if part == 0 {
		part = -1 // LL-HLS off
	}
	r := &hlsReader{showID: s.showID, dir: s.dir, log: m.core.Log}
	opts := hls.Options{Logger: m.core.Log.With("show", s.showID), OnSegment: r.segment,
		PartDuration: part, Live: m.liveFor(s.showID), AudioOnly: s.core.AudioOnly(), DVR: m.dvr}
	if files := m.media.start(s.showID); files != nil {
		opts.Files = files
	}
	pkg, err := hls.Open(s.dir, opts)
	if err != nil {
		if up != nil {
			up.finish()
		}
		return fmt.Errorf("live: show %d: %w", s.showID, err)
	}
	r.pkg = pkg
	r.followers = m.followers(s, up)
	m.core.Log.Info("publisher tracks decided", "show", s.showID, "video", t.Video != nil, "audio", t.Audio != nil)
	s.core.AddReader(r, streamcore.ReaderOptions{Name: "hls", Essential: true})
	if m.ladder != nil && t.Video != nil && !s.core.AudioOnly() {
		tc := newTranscoder(m.ladder, s.showID, m.core.Log, pkg)
		s.transcoder.Store(tc)
		s.core.AddReader(tc, streamcore.ReaderOptions{Name: "transcode", Queue: transcodeQueue})
	}
	m.published(s)
	return nil
}

// claim makes s the show's publisher: on this node, then, with a
// cluster, across the nodes (the show's live lease).
func (m *Module) claim(s *stream) error {
	deadline := time.After(replaceWait)
	if err := m.claimLocal(s, deadline); err != nil {
		return err
	}
	if m.cluster == nil {
		return nil
	}
	if err := m.cluster.acquire(s.ctx, s.showID, deadline); err != nil {
		m.mu.Lock()
		if m.streams[s.showID] == s {
			delete(m.streams, s.showID)
		}
		m.mu.Unlock()
		return err
	}
	s.leased = true
	return nil
}

// claimLocal makes s the show's publisher on this node.
func (m *Module) claimLocal(s *stream, deadline <-chan time.Time) error {
	for {
		m.mu.Lock()
		if err := context.Cause(s.ctx); err != nil {
			m.mu.Unlock()
			return err
		}
		old := m.streams[s.showID]
		if old == nil {
			old = m.leaving[s.showID]
		}
		if old == nil {
			m.streams[s.showID] = s
			delete(m.probing, s)
			m.mu.Unlock()
			return nil
		}
		m.mu.Unlock()
		m.core.Log.Info("publisher replaced", "show", s.showID)
		old.req.Disconnect(errReplaced)
		select {
		case <-old.closed:
		case <-deadline:
			return fmt.Errorf("live: show %d: previous publisher did not let go", s.showID)
		case <-s.ctx.Done():
			return context.Cause(s.ctx)
		}
	}
}

// left lets go of the show when its publisher leaves. A stream that never
// claimed the show (refused, or gone before its tracks were decided)
// leaves it unchanged. Otherwise the core closes its readers (the packager
// finishes its segments, then the followers: the uploader puts the rest
// in the store, the announcer finishes going live), and the show waits in
// the reconnect window (unless it was stopped, which made it not live
// already).
func (m *Module) left(s *stream, reason error) {
	m.mu.Lock()
	claimed := m.streams[s.showID] == s
	if claimed {
		delete(m.streams, s.showID)
		m.leaving[s.showID] = s
	}
	delete(m.probing, s)
	m.mu.Unlock()
	s.core.Close()
	m.mu.Lock()
	if m.leaving[s.showID] == s {
		delete(m.leaving, s.showID)
	}
	m.mu.Unlock()
	if claimed && !errors.Is(reason, errReplaced) {
		m.endPeak(s.showID)
		if err := m.untilStored("publisher left", s.showID, func(ctx context.Context) error { return m.shows.PublisherLeft(ctx, s.showID) }); err != nil {
			m.core.Log.Error("live: publisher left", "show", s.showID, "err", err)
		}
	}
	if s.leased {
		// Last: a node taking the show over finds everything in place.
		ctx, cancel := m.opContext(5 * time.Second)
		m.cluster.release(ctx, s.showID)
		cancel()
	}
}

// onShowEvent reacts to the lifecycle: a stopped show loses its publisher
// and (unless radio) is archived; a deleted one loses its media.
func (m *Module) onShowEvent(ctx context.Context, ev shows.Event) {
	m.vis.event(ev)
	switch ev.Type {
	case shows.EventStopped:
		m.endPeak(ev.Show.ID)
		m.forgetViewers(ctx, ev.Show.ID)
		m.forgetLive(ev.Show.ID)
		m.media.drop(ev.Show.ID)
		radio := ev.Show.Radio
		// With a cluster, one node archives (decided before the publisher
		// is cut off, while this node still holds the show's lease).
		archive := !radio && (m.cluster == nil || m.cluster.takeArchive(ctx, ev.Show.ID, m.cluster.holds(ev.Show.ID)))
		gone := m.disconnect(ev.Show.ID, errStopped)
		m.background(func() {
			for _, s := range gone {
				<-s.closed
			}
			if archive {
				m.archiveShow(ev.Show.ID)
			}
		})
	case shows.EventDeleted:
		m.peaks.take(ev.Show.ID)
		m.forgetViewers(ctx, ev.Show.ID)
		m.forgetLive(ev.Show.ID)
		m.media.drop(ev.Show.ID)
		gone := m.disconnect(ev.Show.ID, errStopped)
		m.background(func() {
			for _, s := range gone {
				<-s.closed
			}
			m.removeMedia(ev.Show.ID)
		})
	}
}

// disconnect cuts off the show's publisher and those still deciding their
// tracks with its key, and returns them all.
func (m *Module) disconnect(showID int64, reason error) []*stream {
	m.mu.Lock()
	var gone []*stream
	for _, s := range []*stream{m.streams[showID], m.leaving[showID]} {
		if s != nil {
			gone = append(gone, s)
		}
	}
	for s := range m.probing {
		if s.showID == showID {
			gone = append(gone, s)
		}
	}
	m.mu.Unlock()
	for _, s := range gone {
		s.req.Disconnect(reason)
	}
	return gone
}

func (m *Module) background(job func()) {
	m.work.Add(1)
	go func() {
		defer m.work.Done()
		job()
	}()
}

// archiveShow archives the show; with a cluster, giving up lets another
// node (or a restart) try again.
func (m *Module) archiveShow(showID int64) {
	if m.archive(showID) && m.cluster != nil {
		m.cluster.archiveFailed(showID)
	}
}

// archive finalises a complete show's recording into VOD playlists and
// points the show at them. It holds mediaMu so that it never races the
// removal of a show deleted meanwhile. With a mirrored store it tries again
// (with a pause) while the store fails, as it does while the disk is full,
// and reports whether it gave up.
func (m *Module) archive(showID int64) (failed bool) {
	pause := time.Second
	for attempt := 1; ; attempt++ {
		if retry := m.archiveOnce(showID); !retry {
			return false
		}
		if attempt >= archiveAttempts {
			return true
		}
		select {
		case <-m.ctx.Done():
			return true
		case <-time.After(pause):
		}
		pause *= 4
	}
}

// archiveOnce archives the show and tells whether a failure may pass.
func (m *Module) archiveOnce(showID int64) (retry bool) {
	m.mediaMu.Lock()
	defer m.mediaMu.Unlock()
	var sh *shows.Show
	err := m.untilStored("archive", showID, func(ctx context.Context) (err error) {
		sh, err = m.shows.Get(ctx, showID)
		return err
	})
	if errors.Is(err, shows.ErrNotFound) {
		return false // deleted since it stopped: its media is going away
	}
	if err != nil {
		m.core.Log.Error("live: archive: read the show", "show", showID, "err", err)
		return true
	}
	if sh.Archive {
		return false // another node was first
	}
	dir := m.showDir(showID)
	var segs []hls.Segment
	var video, audio bool
	if m.mirror {
		ctx, cancel := context.WithTimeout(m.ctx, 5*time.Minute)
		var err error
		segs, video, audio, err = m.archiveStored(ctx, showID)
		cancel()
		if err != nil {
			m.core.Log.Error("live: archive to the media store", "show", showID, "err", err)
			return true
		}
	} else {
		var err error
		segs, err = hls.ReadRecorded(dir) // as Finalize archives them
		if err != nil {
			m.core.Log.Error("live: read segment index", "show", showID, "err", err)
			return false
		}
		if len(segs) > 0 {
			if err := hls.Finalize(dir, hls.Options{DVR: m.dvr}); err != nil {
				m.core.Log.Error("live: finalize archive", "show", showID, "err", err)
				// A full disk may have room again at the next try.
				return diskFull(err)
			}
		}
		video, audio = fileExists(filepath.Join(dir, hls.ArchiveMasterAV)), fileExists(filepath.Join(dir, hls.ArchiveMasterAudio))
	}
	if len(segs) == 0 {
		return false
	}
	// Duration from the media: first sample to the end of the last.
	_, span := hls.Span(segs)
	// The archive's master playlists: Finalize writes the A/V one only
	// when the recording has video, so an audio-only show keeps a null
	// video_url.
	media := shows.Media{Duration: &span}
	if video {
		v := m.mediaURL(showID, hls.ArchiveMasterAV)
		media.VideoURL = &v
	}
	if audio {
		a := m.mediaURL(showID, hls.ArchiveMasterAudio)
		media.AudioURL = &a
	}
	if err := m.untilStored("archive", showID, func(ctx context.Context) error {
		_, err := m.shows.Archive(ctx, showID, media)
		return err
	}); err != nil {
		m.core.Log.Error("live: archive", "show", showID, "err", err)
		return false
	}
	if m.mirror {
		// The store has it all: the working files are no longer needed.
		if err := os.RemoveAll(dir); err != nil {
			m.core.Log.Warn("live: remove working files", "show", showID, "err", err)
		}
	}
	m.core.Log.Info("show archived", "show", showID, "segments", len(segs))
	return false
}

// removeMedia deletes a show's media: the stored objects and the working
// directory.
func (m *Module) removeMedia(id int64) {
	m.mediaMu.Lock()
	defer m.mediaMu.Unlock()
	ctx, cancel := m.opContext(time.Minute)
	defer cancel()
	if err := m.core.Store.DeletePrefix(ctx, mediaPrefix(id)); err != nil {
		m.core.Log.Error("live: remove stored media", "show", id, "err", err)
	}
	if err := os.RemoveAll(m.showDir(id)); err != nil {
		m.core.Log.Error("live: remove media", "show", id, "err", err)
	}
}

// reconcile repairs what a crash or restart left: a live show has no
// publisher any more (it now waits in the reconnect window, and the shows
// janitor completes it after), and a complete show whose recording was not
// yet finalised is archived now. With a mirrored store the database is
// asked too, since a show's media may be in the store only (another node
// ingested it, or this node lost its disk).
func (m *Module) reconcile(ctx context.Context) error {
	entries, err := os.ReadDir(m.root)
	if err != nil {
		return err
	}
	seen := map[int64]bool{}
	handle := func(sh *shows.Show) error {
		seen[sh.ID] = true
		id := sh.ID
		switch {
		case sh.Live && m.cluster != nil && m.cluster.ownedElsewhere(ctx, id):
			// Another node streams the show now.
		case sh.Live:
			if err := m.shows.PublisherLeft(ctx, id); err != nil {
				return err
			}
			m.core.Log.Info("live show lost its publisher in a restart; waiting for it to reconnect", "show", id)
		case sh.Complete && !sh.Archive && !sh.Radio:
			if m.cluster == nil || m.cluster.takeArchive(ctx, id, false) {
				m.background(func() { m.archiveShow(id) })
			}
		}
		return nil
	}
	for _, e := range entries {
		var id int64
		if _, err := fmt.Sscan(e.Name(), &id); err != nil || !e.IsDir() {
			continue
		}
		sh, err := m.shows.Get(ctx, id)
		if errors.Is(err, shows.ErrNotFound) {
			m.background(func() { m.removeMedia(id) })
			continue
		}
		if err != nil {
			return err
		}
		if err := handle(sh); err != nil {
			return err
		}
	}
	if !m.mirror {
		return nil
	}
	list, err := m.pendingShows(ctx)
	if err != nil {
		return err
	}
	for i := range list {
		if !seen[list[i].ID] {
			if err := handle(&list[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// forgetViewers drops a show's audience, here and (with a cluster) the
// one the nodes share.
func (m *Module) forgetViewers(ctx context.Context, show int64) {
	m.viewers.forget(show)
	if m.cluster != nil {
		m.cluster.forgetViewers(ctx, show)
	}
}
