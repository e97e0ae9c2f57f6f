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

// thumbEvery is how often a live show's thumbnail is refreshed.
const thumbEvery = 60 * time.Second

// stream is one accepted publication of a show. It is the rtmp.Sink: media
// goes straight into the HLS packager on the connection's goroutine; all
// slower work (going live, thumbnails) runs on the stream's own worker.
type stream struct {
	m      *Module
	showID int64
	dir    string
	req    rtmp.PublishRequest
	pkg    *hls.Packager
	jobs   chan func()
	closed chan struct{}

	// Touched only on the connection's goroutine (inside OnSegment).
	announced bool
	lastThumb time.Time
}

// publish is the rtmp.Handler: it checks the key against the shows, takes
// over from a half-open earlier connection, and opens the packager.
func (m *Module) publish(ctx context.Context, req rtmp.PublishRequest) (rtmp.Sink, error) {
	if m.app != "" && req.App != m.app {
		return nil, fmt.Errorf("live: unknown application %q", req.App)
	}
	sh, err := m.shows.Authorize(ctx, req.Key)
	if err != nil {
		m.core.Log.Warn("publish refused", "remote", req.RemoteAddr.String(), "reason", err)
		return nil, fmt.Errorf("%w: %v", rtmp.ErrUnauthorized, err)
	}
	s := &stream{m: m, showID: sh.ID, dir: m.showDir(sh.ID), req: req, jobs: make(chan func(), 16), closed: make(chan struct{})}
	// Take the show's slot: a publisher already there (a half-open earlier
	// connection, or one racing this one) is cut off, and this one waits
	// until it has let go of the files before claiming them.
	deadline := time.After(replaceWait)
	for {
		m.mu.Lock()
		old := m.streams[sh.ID]
		if old == nil {
			m.streams[sh.ID] = s
			m.mu.Unlock()
			break
		}
		m.mu.Unlock()
		m.core.Log.Info("publisher replaced", "show", sh.ID)
		old.req.Disconnect(errReplaced)
		select {
		case <-old.closed:
		case <-deadline:
			return nil, fmt.Errorf("live: show %d: previous publisher did not let go", sh.ID)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	s.pkg, err = hls.Open(s.dir, hls.Options{Logger: m.core.Log.With("show", sh.ID), OnSegment: s.onSegment})
	if err != nil {
		m.mu.Lock()
		delete(m.streams, sh.ID)
		m.mu.Unlock()
		close(s.closed)
		return nil, fmt.Errorf("live: show %d: %w", sh.ID, err)
	}
	go s.work()
	m.core.Log.Info("publisher connected", "show", sh.ID, "remote", req.RemoteAddr.String())
	return s, nil
}

func (s *stream) Metadata(meta map[string]any)      { s.pkg.Metadata(meta) }
func (s *stream) Video(ts int64, body []byte) error { return s.pkg.Video(ts, body) }
func (s *stream) Audio(ts int64, body []byte) error { return s.pkg.Audio(ts, body) }

// onSegment runs on the connection's goroutine after each finished
// segment; it only hands work to the stream's worker.
func (s *stream) onSegment(seg hls.Segment) {
	if !s.announced {
		s.announced = true
		media := shows.Media{}
		if s.pkg.HasVideo() {
			v := s.m.mediaURL(s.showID, hls.PlaylistAV)
			media.VideoURL = &v
		}
		if s.pkg.HasAudio() {
			a := s.m.mediaURL(s.showID, hls.PlaylistAudio)
			media.AudioURL = &a
		}
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

// Close is called once when the publisher leaves or is cut off: the
// packager finishes its segments and the show waits in the reconnect
// window (unless it was stopped, which made it not live already).
func (s *stream) Close(reason error) {
	if err := s.pkg.Close(); err != nil {
		s.m.core.Log.Error("live: close packager", "show", s.showID, "err", err)
	}
	close(s.jobs)
	m := s.m
	m.mu.Lock()
	if m.streams[s.showID] == s {
		delete(m.streams, s.showID)
	}
	m.mu.Unlock()
	if !errors.Is(reason, errReplaced) {
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
		s := m.disconnect(ev.Show.ID, errStopped)
		radio := ev.Show.Radio
		m.background(func() {
			if s != nil {
				<-s.closed
			}
			if !radio {
				m.archive(ev.Show.ID)
			}
		})
	case shows.EventDeleted:
		m.viewers.forget(ev.Show.ID)
		s := m.disconnect(ev.Show.ID, errStopped)
		m.background(func() {
			if s != nil {
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

func (m *Module) disconnect(showID int64, reason error) *stream {
	m.mu.Lock()
	s := m.streams[showID]
	m.mu.Unlock()
	if s != nil {
		s.req.Disconnect(reason)
	}
	return s
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
	media := shows.Media{}
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
