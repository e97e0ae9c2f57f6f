package live

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/onair/onair/modules/live/hls"
	"github.com/onair/onair/modules/live/rtmp"
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

// announceAudioAfter is how many audio segments a show waits for its
// video to become playable before it goes live with audio alone.
const announceAudioAfter = 3

// thumbEvery is how often a live show's thumbnail is refreshed.
const thumbEvery = 60 * time.Second

// stream is one accepted publication of a show. It is the rtmp.Sink:
// until its tracks are decided it buffers in a trackProbe and touches
// nothing; then it takes the show's slot and media goes straight into the
// HLS packager on the connection's goroutine, while slower work (going
// live, thumbnails) runs on the stream's own worker.
type stream struct {
	m      *Module
	showID int64
	dir    string
	req    rtmp.PublishRequest
	// ctx is the publisher's connection: it ends when the connection does.
	ctx    context.Context
	closed chan struct{}
	stats  *streamStats // what the publication sends (stats.go)

	// Touched only on the connection's goroutine.
	probe    *trackProbe // until the tracks are decided, then nil
	err      error       // what ended the publication; a refusal from onMetaData is returned at the next tag
	pkg      *hls.Packager
	jobs     chan func()
	worked   chan struct{} // closed when the worker has run every job
	replayAt time.Time     // arrival of the buffered tag being replayed
	// Inside OnSegment: which tracks have a playable segment, what the
	// show has been told, and when the thumbnail was refreshed.
	videoPlayable, audioPlayable    bool
	audioSegments                   int
	announced, sentVideo, sentAudio bool
	lastThumb                       time.Time
}

// publish is the rtmp.Handler: it checks the key against the shows and
// returns a stream that decides the tracks before it claims the show.
func (m *Module) publish(ctx context.Context, req rtmp.PublishRequest) (rtmp.Sink, error) {
	if m.app != "" && req.App != m.app {
		return nil, fmt.Errorf("live: unknown application %q", req.App)
	}
	sh, err := m.shows.Authorize(ctx, req.Key)
	if err != nil {
		m.core.Log.Warn("publish refused", "remote", req.RemoteAddr.String(), "reason", err)
		if !errors.Is(err, shows.ErrRefused) {
			// Not the key's fault: neither "unauthorized" nor counted by
			// the stream key throttle.
			return nil, &rtmp.StatusError{Code: "NetStream.Publish.Rejected",
				Description: "The server could not check the stream key; try again.", Err: err}
		}
		return nil, fmt.Errorf("%w: %v", rtmp.ErrUnauthorized, err)
	}
	s := &stream{m: m, showID: sh.ID, dir: m.showDir(sh.ID), req: req, ctx: ctx, closed: make(chan struct{}),
		probe: newTrackProbe(m.trackWait), stats: newStreamStats(time.Now())}
	m.mu.Lock()
	m.probing[s] = struct{}{}
	m.mu.Unlock()
	m.core.Log.Info("publisher connected", "show", sh.ID, "remote", req.RemoteAddr.String())
	return s, nil
}

// Metadata takes the encoder's announcement of its tracks while they are
// being decided; later ones change nothing.
func (s *stream) Metadata(meta map[string]any) {
	s.stats.metadata(meta)
	if s.probe == nil || s.err != nil {
		return
	}
	if err := s.probe.metadata(meta); err != nil {
		s.err = s.refuse(err)
	}
}

func (s *stream) Video(ts int64, body []byte) error { return s.media(true, ts, body) }
func (s *stream) Audio(ts int64, body []byte) error { return s.media(false, ts, body) }

func (s *stream) media(video bool, ts int64, body []byte) error {
	if s.err != nil {
		return s.err
	}
	keep, header, err := classify(video, body)
	if err == nil && keep {
		s.stats.tag(video, ts, body, header, time.Now())
	}
	switch {
	case err != nil:
		s.err = s.refuse(err)
	case !keep:
	case s.pkg != nil:
		s.err = s.feed(video, ts, body)
	case s.probe.add(video, ts, body, header, time.Now()):
		s.err = s.start()
	}
	return s.err
}

// refuse logs a codec refusal, naming the codec, and counts it.
func (s *stream) refuse(err error) error {
	var ce codecError
	if errors.As(err, &ce) {
		s.m.codecRefusals.Add(1)
		s.m.core.Log.Warn("publish refused: unsupported codec", "show", s.showID, "codec", ce.codec.String(),
			"remote", s.req.RemoteAddr.String())
	}
	return err
}

func (s *stream) feed(video bool, ts int64, body []byte) error {
	if video {
		return s.pkg.Video(ts, body)
	}
	return s.pkg.Audio(ts, body)
}

// now is the packager's clock: while buffered tags are replayed, the time
// they arrived.
func (s *stream) now() time.Time {
	if !s.replayAt.IsZero() {
		return s.replayAt
	}
	return time.Now()
}

// start runs once the tracks are decided: it takes the show's slot (a
// publisher already there, a half-open earlier connection or one racing
// this one, is cut off, and this one waits until it has let go of the
// files), opens the packager and replays what was buffered.
func (s *stream) start() error {
	probe := s.probe
	s.probe = nil
	if err := s.m.claim(s); err != nil {
		return err
	}
	var err error
	s.pkg, err = hls.Open(s.dir, hls.Options{Logger: s.m.core.Log.With("show", s.showID), OnSegment: s.onSegment,
		Now: s.now, ProbeDuration: s.m.trackWait})
	if err != nil {
		return fmt.Errorf("live: show %d: %w", s.showID, err)
	}
	s.jobs, s.worked = make(chan func(), 16), make(chan struct{})
	go s.work()
	hints := probe.hints()
	s.m.core.Log.Info("publisher tracks decided", "show", s.showID, "video", hints["videocodecid"] != nil, "audio", hints["audiocodecid"] != nil)
	s.pkg.Metadata(hints)
	defer func() { s.replayAt = time.Time{} }()
	for _, t := range probe.replay() {
		s.replayAt = t.at
		if err := s.feed(t.video, t.ts, t.body); err != nil {
			return err
		}
	}
	return nil
}

// claim makes s the show's publisher.
func (m *Module) claim(s *stream) error {
	deadline := time.After(replaceWait)
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

// onSegment runs on the connection's goroutine after each finished
// segment; it only hands work to the stream's worker. The show goes live
// once every track it has can be played (the A/V playlist has a segment
// with video, the audio playlist one with audio); a track that joins later
// gets its URL with its first segment.
func (s *stream) onSegment(seg hls.Segment) {
	switch {
	case seg.Rendition == hls.RenditionAV && s.pkg.HasVideo():
		s.videoPlayable = true
	case seg.Rendition == hls.RenditionAudio:
		s.audioPlayable = true
		s.audioSegments++
	}
	video := s.videoPlayable && !s.sentVideo
	audio := s.audioPlayable && !s.sentAudio
	// Wait for the other track, unless video that never becomes playable
	// (no keyframe) would hold back audio that is.
	waiting := s.pkg.HasVideo() && !s.videoPlayable && s.audioSegments < announceAudioAfter ||
		s.pkg.HasAudio() && !s.audioPlayable
	if !s.announced && waiting {
		video, audio = false, false
	}
	if video || audio {
		// The show starts with its first media sample; a resume keeps it.
		start := s.pkg.Start()
		media := shows.Media{Start: &start}
		if video {
			v := s.m.mediaURL(s.showID, hls.PlaylistAV)
			media.VideoURL = &v
		}
		if audio {
			a := s.m.mediaURL(s.showID, hls.PlaylistAudio)
			media.AudioURL = &a
		}
		s.announced, s.sentVideo, s.sentAudio = true, s.sentVideo || video, s.sentAudio || audio
		s.enqueue(func() { s.goLive(media) })
	}
	if s.m.thumbs != nil && seg.Rendition == hls.RenditionAV && time.Since(s.lastThumb) >= thumbEvery {
		s.lastThumb = time.Now()
		file := filepath.Join(s.dir, seg.File)
		s.enqueue(func() {
			s.m.thumbs.request(thumbJob{showID: s.showID, dir: s.dir, segment: file, done: s.m.thumbnailed})
		})
	}
}

func (s *stream) enqueue(job func()) {
	select {
	case s.jobs <- job:
	default:
		s.m.core.Log.Warn("live: stream worker busy, job dropped", "show", s.showID)
	}
}

// work runs the stream's jobs until the publisher is gone.
func (s *stream) work() {
	defer close(s.worked)
	for job := range s.jobs {
		job()
	}
}

func (s *stream) goLive(media shows.Media) {
	if _, err := s.m.shows.GoLive(s.m.ctx, s.showID, media); err != nil {
		s.m.core.Log.Error("live: go live", "show", s.showID, "err", err)
		s.req.Disconnect(err)
	}
}

// Close is called once when the publisher leaves or is cut off. A stream
// that never claimed the show (refused, or gone before its tracks were
// decided) leaves it unchanged. Otherwise the packager finishes its
// segments, the worker its jobs (going live among them), and the show
// waits in the reconnect window (unless it was stopped, which made it not
// live already).
func (s *stream) Close(reason error) {
	m := s.m
	m.mu.Lock()
	claimed := m.streams[s.showID] == s
	if claimed {
		delete(m.streams, s.showID)
		m.leaving[s.showID] = s
	}
	delete(m.probing, s)
	m.mu.Unlock()
	if s.pkg != nil {
		if err := s.pkg.Close(); err != nil {
			m.core.Log.Error("live: close packager", "show", s.showID, "err", err)
		}
		close(s.jobs)
	}
	m.mu.Lock()
	if m.leaving[s.showID] == s {
		delete(m.leaving, s.showID)
	}
	m.mu.Unlock()
	if s.pkg != nil {
		<-s.worked // going live comes before leaving
	}
	if claimed && !errors.Is(reason, errReplaced) {
		if err := m.shows.PublisherLeft(context.Background(), s.showID); err != nil {
			m.core.Log.Error("live: publisher left", "show", s.showID, "err", err)
		}
	}
	m.core.Log.Info("publisher left", "show", s.showID, "reason", fmt.Sprint(reason))
	close(s.closed)
}

// onShowEvent reacts to the lifecycle: a stopped show loses its publisher
// and (unless radio) is archived; a deleted one loses its media.
func (m *Module) onShowEvent(_ context.Context, ev shows.Event) {
	m.vis.forget(ev.Show.ID)
	switch ev.Type {
	case shows.EventStopped:
		m.viewers.forget(ev.Show.ID)
		gone := m.disconnect(ev.Show.ID, errStopped)
		radio := ev.Show.Radio
		m.background(func() {
			for _, s := range gone {
				<-s.closed
			}
			if !radio {
				m.archive(ev.Show.ID)
			}
		})
	case shows.EventDeleted:
		m.viewers.forget(ev.Show.ID)
		gone := m.disconnect(ev.Show.ID, errStopped)
		m.background(func() {
			for _, s := range gone {
				<-s.closed
			}
			m.mediaMu.Lock()
			defer m.mediaMu.Unlock()
			if err := os.RemoveAll(m.showDir(ev.Show.ID)); err != nil {
				m.core.Log.Error("live: remove media", "show", ev.Show.ID, "err", err)
			}
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

// archive finalises a complete show's recording into VOD playlists and
// points the show at them. It holds mediaMu so that it never races the
// removal of a show deleted meanwhile.
func (m *Module) archive(showID int64) {
	m.mediaMu.Lock()
	defer m.mediaMu.Unlock()
	if _, err := m.shows.Get(context.Background(), showID); err != nil {
		return // deleted since it stopped: its media is going away
	}
	dir := m.showDir(showID)
	segs, err := hls.ReadIndex(dir)
	if err != nil || len(segs) == 0 {
		if err != nil {
			m.core.Log.Error("live: read segment index", "show", showID, "err", err)
		}
		return
	}
	if err := hls.Finalize(dir, hls.Options{}); err != nil {
		m.core.Log.Error("live: finalize archive", "show", showID, "err", err)
		return
	}
	// Duration from the media: first sample to the end of the last.
	_, span := hls.Span(segs)
	media := shows.Media{Duration: &span}
	if fileExists(filepath.Join(dir, hls.ArchiveAV)) {
		v := m.mediaURL(showID, hls.ArchiveAV)
		media.VideoURL = &v
	}
	if fileExists(filepath.Join(dir, hls.ArchiveAudio)) {
		a := m.mediaURL(showID, hls.ArchiveAudio)
		media.AudioURL = &a
	}
	if _, err := m.shows.Archive(context.Background(), showID, media); err != nil {
		m.core.Log.Error("live: archive", "show", showID, "err", err)
		return
	}
	m.core.Log.Info("show archived", "show", showID, "segments", len(segs))
}

// reconcile repairs what a crash or restart left: a live show has no
// publisher any more (it now waits in the reconnect window, and the shows
// janitor completes it after), and a complete show whose recording was not
// yet finalised is archived now.
func (m *Module) reconcile(ctx context.Context) error {
	entries, err := os.ReadDir(m.root)
	if err != nil {
		return err
	}
	for _, e := range entries {
		var id int64
		if _, err := fmt.Sscan(e.Name(), &id); err != nil || !e.IsDir() {
			continue
		}
		sh, err := m.shows.Get(ctx, id)
		if errors.Is(err, shows.ErrNotFound) {
			os.RemoveAll(m.showDir(id))
			continue
		}
		if err != nil {
			return err
		}
		switch {
		case sh.Live:
			if err := m.shows.PublisherLeft(ctx, id); err != nil {
				return err
			}
			m.core.Log.Info("live show lost its publisher in a restart; waiting for it to reconnect", "show", id)
		case sh.Complete && !sh.Archive && !sh.Radio:
			m.background(func() { m.archive(id) })
		}
	}
	return nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
