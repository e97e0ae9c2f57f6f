package live

import (
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/onair/onair/modules/live/hls"
	"github.com/onair/onair/modules/live/rtmp"
	"github.com/onair/onair/modules/live/streamcore"
	"github.com/onair/onair/modules/shows"
)

// What follows a segment. The HLS packager is a reader of the stream core
// (hlsReader); after each finished segment it tells the followers the
// wiring registered for the publication (Module.followers): the uploader
// copies the segment to the store, the announcer makes the show live once
// every track plays, the thumbnailer refreshes the picture. A follower is
// called on the packager's goroutine and must not block it; close runs
// once, after the packager has finished its last segment.
type follower interface {
	onSegment(ev segmentEvent)
	close()
}

// segmentEvent is a finished segment with what the packager knows then.
type segmentEvent struct {
	hls.Segment
	video, audio bool      // the tracks being packaged
	start        time.Time // the publication's first sample
}

// announceAudioAfter is how many audio segments a show waits for its
// video to become playable before it goes live with audio alone.
const announceAudioAfter = 3

// thumbEvery is how often a live show's thumbnail is refreshed.
const thumbEvery = 60 * time.Second

// followers are the followers of a publication's segments, in the order
// they hear of each and are closed: the uploader first (the store has the
// recording before the show is let go), then going live, then thumbnails.
func (m *Module) followers(s *stream, up *uploader) []follower {
	var list []follower
	if up != nil {
		list = append(list, up)
	}
	list = append(list, newAnnouncer(s.showID, m.core.Log, m.mediaURL, func(media shows.Media) error {
		// Shows go live in batches (golive.go); while the database is
		// away, going live waits for it on the announcer's worker. The
		// publisher streams on meanwhile.
		return m.goLive(s.showID, media)
	}, s.req.Disconnect))
	if m.thumbs != nil {
		list = append(list, &thumbFollower{showID: s.showID, dir: s.dir, thumbs: m.thumbs, done: m.thumbnailed})
	}
	return list
}

// hlsReader feeds the stream core's units to the publication's HLS
// packager and tells the followers of each segment.
type hlsReader struct {
	showID    int64
	dir       string
	log       *slog.Logger
	pkg       *hls.Packager
	followers []follower
}

var _ streamcore.Inline = (*hlsReader)(nil)

func (r *hlsReader) Tracks(t streamcore.Tracks) error { return r.failed(r.pkg.Tracks(t)) }
func (r *hlsReader) Unit(u *streamcore.Unit) error    { return r.failed(r.pkg.Unit(u)) }

// Due wakes the packager's goroutine only for the units that may end a
// part or a segment (hls.Packager.Due): the others wait, queued, for the
// next such unit.
func (r *hlsReader) Due(u *streamcore.Unit) bool { return r.pkg.Due(u) }

// Inline lets the connection's goroutine package the units that end a
// part published to memory, instead of waking the packager's goroutine
// for them (hls.Packager.Inline); a segment's end, which writes files, is
// still the packager's goroutine's.
func (r *hlsReader) Inline(u *streamcore.Unit) bool { return r.pkg.Inline(u) }

// failed words the packager's failure for the publisher: a full disk ends
// the publication with NetStream.Failed (the segment being written is
// dropped when the packager closes; the show waits in the reconnect
// window, where a publisher is refused until the disk has room again).
func (r *hlsReader) failed(err error) error {
	if err != nil && diskFull(err) {
		r.log.Error("live: media disk full; the publication ends", "show", r.showID, "dir", r.dir, "err", err)
		return &rtmp.StatusError{Code: errDiskFullFailed.Code, Description: errDiskFullFailed.Description, Err: err}
	}
	return err
}

func (r *hlsReader) Close() {
	if err := r.pkg.Close(); err != nil {
		r.log.Error("live: close packager", "show", r.showID, "err", err)
	}
	for _, f := range r.followers {
		f.close()
	}
}

// segment is the packager's OnSegment.
func (r *hlsReader) segment(seg hls.Segment) {
	ev := segmentEvent{Segment: seg, video: r.pkg.HasVideo(), audio: r.pkg.HasAudio(), start: r.pkg.Start()}
	for _, f := range r.followers {
		f.onSegment(ev)
	}
}

// announcer makes the show live once every track it has can be played
// (the A/V playlist has a segment with video, the audio playlist one with
// audio); a track that joins later gets its URL with its first segment.
// The calls to the shows service run on its own worker.
type announcer struct {
	showID     int64
	log        *slog.Logger
	url        func(show int64, file string) string
	goLive     func(shows.Media) error
	disconnect func(error)
	jobs       chan func()
	worked     chan struct{}

	videoPlayable, audioPlayable    bool
	audioSegments                   int
	announced, sentVideo, sentAudio bool
}

func newAnnouncer(showID int64, log *slog.Logger, url func(int64, string) string, goLive func(shows.Media) error, disconnect func(error)) *announcer {
	a := &announcer{showID: showID, log: log, url: url, goLive: goLive, disconnect: disconnect,
		jobs: make(chan func(), 16), worked: make(chan struct{})}
	go func() {
		defer close(a.worked)
		for job := range a.jobs {
			job()
		}
	}()
	return a
}

func (a *announcer) onSegment(ev segmentEvent) {
	switch {
	case ev.Rendition == hls.RenditionAV && ev.video:
		a.videoPlayable = true
	case ev.Rendition == hls.RenditionAudio:
		a.audioPlayable = true
		a.audioSegments++
	}
	video := a.videoPlayable && !a.sentVideo
	audio := a.audioPlayable && !a.sentAudio
	// Wait for the other track, unless video that never becomes playable
	// (no keyframe) would hold back audio that is.
	waiting := ev.video && !a.videoPlayable && a.audioSegments < announceAudioAfter ||
		ev.audio && !a.audioPlayable
	if !a.announced && waiting {
		video, audio = false, false
	}
	if !video && !audio {
		return
	}
	// The show starts with its first media sample; a resume keeps it.
	start := ev.start
	media := shows.Media{Start: &start}
	// The URLs are master playlists (codecs, bandwidth, the audio-only
	// alternative), written before the followers hear of the segment.
	if video {
		v := a.url(a.showID, hls.MasterAV)
		media.VideoURL = &v
	}
	if audio {
		u := a.url(a.showID, hls.MasterAudio)
		media.AudioURL = &u
	}
	a.announced, a.sentVideo, a.sentAudio = true, a.sentVideo || video, a.sentAudio || audio
	select {
	case a.jobs <- func() {
		if err := a.goLive(media); err != nil {
			a.log.Error("live: go live", "show", a.showID, "err", err)
			a.disconnect(err)
		}
	}:
	default:
		a.log.Warn("live: stream worker busy, job dropped", "show", a.showID)
	}
}

// close waits for going live: it comes before leaving.
func (a *announcer) close() {
	close(a.jobs)
	<-a.worked
}

// thumbFollower asks for a fresh thumbnail from an A/V segment every
// thumbEvery. Until the show has its first one, a job that failed, timed
// out or was dropped (a saturated node) is asked again at the next A/V
// segment, not a minute later: a show shorter than that would otherwise
// keep image_url null. One job of the show at most is queued or running
// at a time, so a starved node does not pile them up.
type thumbFollower struct {
	showID int64
	dir    string
	thumbs *thumbnailer
	done   func(showID int64, scratch string) bool
	last   time.Time // the last request, on the packager's goroutine
	// pending is set while the show's job is queued or running; made once
	// a job has made the show's thumbnail. Both are written by the job's
	// end, on the thumbnailer's goroutine (or in request, dropped).
	pending, made atomic.Bool
}

func (t *thumbFollower) onSegment(ev segmentEvent) {
	if ev.Rendition != hls.RenditionAV || (t.made.Load() && time.Since(t.last) < thumbEvery) {
		return
	}
	if !t.pending.CompareAndSwap(false, true) {
		return
	}
	t.last = time.Now()
	t.thumbs.request(thumbJob{showID: t.showID, dir: t.dir, segment: filepath.Join(t.dir, ev.File), done: t.done, ended: t.ended})
}

// ended clears pending once the job is over, however it ended.
func (t *thumbFollower) ended(made bool) {
	if made {
		t.made.Store(true)
	}
	t.pending.Store(false)
}

func (t *thumbFollower) close() {}
