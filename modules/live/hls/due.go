package hls

import (
	"math"
	"sync/atomic"

	"github.com/onair/onair/modules/live/streamcore"
)

// due tells the stream core which units may make the Packager act, so
// that its reader's goroutine is woken for those only (streamcore.Lazy):
// between the boundaries of its parts and segments a unit is only muxed
// into memory, and it may wait for the next due one. The Packager stores
// after each call, from its own goroutine, the earliest timestamp (in the
// source's milliseconds) from which a video unit and an audio unit may end
// a part or a segment; Due reads them from the source's. A stale value is
// an earlier one (boundaries only move on), so it errs towards waking.
//
// For Inline it also stores from which timestamps a unit may end a segment
// (which writes files), and whether a part goes to memory only.
type due struct {
	video, audio atomic.Int64 // a unit at or after this DTS is due
	lastVideo    atomic.Int64 // the last video DTS packaged: one not after it is due
	// segVideo, segAudio: a unit at or after this DTS may end a segment.
	segVideo, segAudio atomic.Int64
	// memory: every rendition publishes its parts to memory only
	// (growing memory files), so a part touches no file.
	memory atomic.Bool
}

// dueMargin is what an audio timestamp regenerated from the sample count
// may stray from the publisher's beyond the drift measured at the last
// frame (its jitter), on the 90 kHz clock: 30 ms.
const dueMargin = 30 * 90

func (d *due) init() {
	d.video.Store(math.MinInt64)
	d.audio.Store(math.MinInt64)
	d.lastVideo.Store(math.MaxInt64)
	d.segVideo.Store(math.MinInt64)
	d.segAudio.Store(math.MinInt64)
	d.memory.Store(false)
}

// Due reports whether packaging u may publish or write something (a part,
// a segment, the start of a rendition): see streamcore.Lazy. It is safe
// to call concurrently with the Packager's other methods.
func (p *Packager) Due(u *streamcore.Unit) bool {
	if u.Video {
		return u.DTS >= p.due.video.Load() || u.DTS <= p.due.lastVideo.Load()
	}
	return u.DTS >= p.due.audio.Load()
}

// Inline reports whether packaging u, and the units queued before it, may
// at most end a part published to memory (streamcore.Inline): not the
// start or the end of a segment, which create and write files, nor a part
// written to a file. Safe to call concurrently with the Packager's other
// methods, like Due; a stale value errs towards false.
func (p *Packager) Inline(u *streamcore.Unit) bool {
	if !p.due.memory.Load() {
		return false
	}
	if u.Video {
		return u.DTS < p.due.segVideo.Load() && u.DTS > p.due.lastVideo.Load()
	}
	return u.DTS < p.due.segAudio.Load()
}

// updateDue recomputes the thresholds Due reads, after a unit or tracks.
func (p *Packager) updateDue() {
	if !p.started || p.err != nil {
		p.due.init()
		return
	}
	video, audio := int64(math.MaxInt64), int64(math.MaxInt64)
	segVideo, segAudio := int64(math.MaxInt64), int64(math.MaxInt64)
	memory := true
	for _, r := range []*rendition{p.av, p.aud} {
		if r == nil {
			continue
		}
		if r.video {
			video = min(video, p.videoDue(r, r.nextEvent()))
			segVideo = min(segVideo, p.videoSegmentDue(r))
		} else {
			audio = min(audio, p.audioDue(r, r.nextEvent()))
			segAudio = min(segAudio, p.audioDue(r, r.segmentEvent()))
		}
		memory = memory && r.partLen > 0 && r.growing != nil && !r.diskParts
	}
	p.due.video.Store(video)
	p.due.audio.Store(audio)
	p.due.segVideo.Store(segVideo)
	p.due.segAudio.Store(segAudio)
	p.due.memory.Store(memory)
	if p.sawVideo {
		p.due.lastVideo.Store(p.msOf(p.lastDTS))
	}
}

// nextEvent is the earliest time at which a sample may end the part or
// segment in progress: the sample (t, lasting fd) does only when
// t+fd+jitter reaches it (see writeVideo, writeAudio, partDue, partEnds).
func (r *rendition) nextEvent() int64 {
	e := r.curStart + min(r.length, r.longest)
	if r.partLen > 0 {
		e = min(e, r.curStart+int64(len(r.curParts)+1)*r.partLen, r.partStart+r.partTarget)
	}
	return e
}

// segmentEvent is the earliest time at which a sample may end the segment
// in progress (nextEvent without the parts).
func (r *rendition) segmentEvent() int64 { return r.curStart + min(r.length, r.longest) }

// videoDue is the first video DTS that may make r act by e (nextEvent,
// or segmentEvent for a segment's end only). A frame at t
// lasting fd (t minus the last frame's time, when at most a second)
// acts only if t + fd + jitter ≥ nextEvent, jitter being at most fd/2:
// so only from (2e + 3·last)/5 on, or past a second after the last.
func (p *Packager) videoDue(r *rendition, e int64) int64 {
	if r.cur == nil || !p.sawVideo {
		return math.MinInt64 // waiting for the keyframe that starts it
	}
	t := min((2*e+3*p.lastDTS)/5, p.lastDTS+90000)
	return p.msOf(t)
}

// videoSegmentDue is the first video DTS that may end r's segment. The
// bound of videoDue holds for a frame at most a second after the last;
// one later keeps the last interval (at most a second, jitter at most
// half of it) and ends the segment only from a second before
// segmentEvent on.
func (p *Packager) videoSegmentDue(r *rendition) int64 {
	if r.cur == nil || !p.sawVideo {
		return math.MinInt64
	}
	e := r.segmentEvent()
	t := min((2*e+3*p.lastDTS)/5, max(p.lastDTS+90000, e-90000))
	return p.msOf(t)
}

// audioDue is the first audio DTS that may make r (a rendition cut on
// audio) act by e: a frame at t lasting fd acts only if t + fd ≥ nextEvent,
// where t is the sample count's time, which was drift ahead of the
// publisher's at the last frame, or the publisher's own after a resync.
func (p *Packager) audioDue(r *rendition, e int64) int64 {
	if r.cur == nil || p.asc == nil || p.asc.SampleRate == 0 {
		return math.MinInt64
	}
	fd := 1024 * 90000 / int64(p.asc.SampleRate)
	return p.msOf(e - fd - max(p.audioDrift, 0) - dueMargin)
}

// msOf maps a time on the 90 kHz clock back onto the publisher's
// milliseconds, rounding down (clock.t's inverse).
func (p *Packager) msOf(t int64) int64 {
	v := t - tsOffset
	ms := v / 90
	if v%90 < 0 {
		ms--
	}
	return ms + p.clock.media - 1
}
