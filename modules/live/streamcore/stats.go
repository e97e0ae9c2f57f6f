package streamcore

import (
	"math"
	"sync"
	"time"
)

// Stream health: the core measures what each publication sends, from the
// units its source writes, before the tracks are decided and after. Nothing
// here decodes media: sizes and timestamps, the keyframe flag, the codecs
// and what the encoder announces in onMetaData. The live module words the
// warnings (its stats.go).
//
// Late media: an encoder sends media in real time, so the media time it
// has sent grows as fast as the wall clock. Its lag, wall time since the
// first unit minus media time since the first unit, stays level (within
// network jitter); when the upload or the encoder cannot keep up it grows
// by the shortfall every second. Behind is the lag now minus the least lag
// seen (the moment the encoder was furthest ahead, e.g. after it sent its
// buffer at start), so a sender that catches up goes back to 0.
//
// Dropped frames: RTMP carries no count of the frames an encoder dropped.
// What reaches the server is their absence: a jump in the video timestamps
// several frame intervals long. Those jumps are counted (TimestampGaps)
// rather than called dropped frames, since a source with a variable frame
// rate (a screen capture that only sends changes) makes the same jumps
// without losing anything.

// StatsWindow is the span the bitrates and the frame rate are measured
// over.
const StatsWindow = 5 * time.Second

// receivingWithin: a publication that sent nothing for longer is reported
// as not receiving (the encoder stalled or the network dropped).
const receivingWithin = 3 * time.Second

// gapWindow is the span timestamp gaps are counted over.
const gapWindow = time.Minute

// timelineReset: a media time further back than this starts a new
// timeline (an encoder that restarted its clock) rather than a late unit.
const timelineReset = 1000 // ms

// Stats is a publication's health at one moment.
type Stats struct {
	Receiving              bool
	Since                  time.Time // the publication's start
	VideoCodec, AudioCodec string    // "H.264", "AAC", or "" before the first unit
	Width, Height          int       // from onMetaData
	FPS                    float64
	VideoBitrate           int // kb/s over StatsWindow
	AudioBitrate           int
	IgnoredBitrate         int     // video an audio-only stream drops, kb/s
	KeyframeInterval       float64 // seconds between the last two keyframes
	BehindSeconds          float64
	TimestampGaps          int // within the last minute
}

type sample struct {
	at    time.Time
	bytes int
}

// stats is the measure of one publication. It is written by the source's
// goroutine and read by Stream.Stats, so it has its own lock.
type stats struct {
	mu                     sync.Mutex
	since, last            time.Time
	videoCodec, audioCodec string
	width, height          int
	video, audio           []sample // within StatsWindow of the latest
	ignored                []sample // video an audio-only stream drops
	frames                 []int64  // media timestamps (ms) of video frames within the window
	lastKey                int64    // media time of the latest keyframe, -1 none
	keyInterval            float64
	timed                  bool
	t0                     time.Time
	ts0, tsMax             int64
	lag, minLag            time.Duration
	lastFrame              int64
	interval               float64     // usual interval between frames, ms (a moving average)
	gaps                   []time.Time // within gapWindow
}

func newStats(now time.Time) *stats { return &stats{since: now, lastKey: -1} }

// metadata takes the encoder's announcement (width, height).
func (st *stats) metadata(meta map[string]any) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if w, ok := number(meta["width"]); ok && w > 0 && w < 100000 {
		st.width = int(w)
	}
	if h, ok := number(meta["height"]); ok && h > 0 && h < 100000 {
		st.height = int(h)
	}
}

func number(v any) (float64, bool) {
	f, ok := v.(float64)
	return f, ok && !math.IsNaN(f) && !math.IsInf(f, 0)
}

// unit records a unit the source wrote (configurations included).
func (st *stats) unit(u *Unit) {
	st.mu.Lock()
	defer st.mu.Unlock()
	now := u.At
	st.last = now
	st.timing(u.DTS, now)
	cut := now.Add(-StatsWindow)
	if !u.Video {
		st.audioCodec = "AAC"
		st.audio = append(trim(st.audio, cut), sample{now, u.Size})
		return
	}
	st.videoCodec = "H.264"
	st.video = append(trim(st.video, cut), sample{now, u.Size})
	if u.config() {
		return
	}
	st.gap(u.DTS, now)
	st.frames = append(st.frames, u.DTS)
	for len(st.frames) > 0 && u.DTS-st.frames[0] > StatsWindow.Milliseconds() {
		st.frames = st.frames[1:]
	}
	if u.Key {
		if st.lastKey >= 0 && u.DTS > st.lastKey {
			st.keyInterval = float64(u.DTS-st.lastKey) / 1000
		}
		st.lastKey = u.DTS
	}
}

// timing follows the lag of media time behind the wall clock.
func (st *stats) timing(ts int64, now time.Time) {
	if !st.timed || ts < st.tsMax-timelineReset {
		st.timed, st.t0, st.ts0, st.tsMax, st.lag, st.minLag = true, now, ts, ts, 0, 0
		return
	}
	st.tsMax = max(st.tsMax, ts)
	st.lag = now.Sub(st.t0) - time.Duration(st.tsMax-st.ts0)*time.Millisecond
	st.minLag = min(st.minLag, st.lag)
}

// gap counts a video frame that comes more than three usual intervals (and
// at least 100 ms) after the previous one.
func (st *stats) gap(ts int64, now time.Time) {
	i := 0
	for i < len(st.gaps) && now.Sub(st.gaps[i]) > gapWindow {
		i++
	}
	st.gaps = st.gaps[i:]
	prev := st.lastFrame
	st.lastFrame = ts
	d := float64(ts - prev)
	switch {
	case len(st.frames) == 0 || d <= 0:
	case st.interval == 0:
		st.interval = d
	case d > 3*st.interval && d >= 100:
		st.gaps = append(st.gaps, now)
	default:
		st.interval += (d - st.interval) / 8
	}
}

// ignoredVideo records video an audio-only stream drops unread: the
// stream is being received, and the broadcaster may stop sending it.
func (st *stats) ignoredVideo(size int, now time.Time) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.last = now
	st.ignored = append(trim(st.ignored, now.Add(-StatsWindow)), sample{now, size})
}

func trim(s []sample, cut time.Time) []sample {
	i := 0
	for i < len(s) && s[i].at.Before(cut) {
		i++
	}
	return s[i:]
}

// kbps is the bitrate of the samples over the window ending now.
func kbps(s []sample, now time.Time, since time.Time) int {
	span := StatsWindow
	if d := now.Sub(since); d < span {
		span = d
	}
	if span < time.Second {
		span = time.Second
	}
	total := 0
	for _, x := range s {
		if !x.at.Before(now.Add(-StatsWindow)) {
			total += x.bytes
		}
	}
	return int(float64(total) * 8 / 1000 / span.Seconds())
}

// snapshot is the health now.
func (st *stats) snapshot(now time.Time) Stats {
	st.mu.Lock()
	defer st.mu.Unlock()
	h := Stats{
		Receiving: !st.last.IsZero() && now.Sub(st.last) <= receivingWithin, Since: st.since,
		VideoCodec: st.videoCodec, AudioCodec: st.audioCodec, Width: st.width, Height: st.height,
		VideoBitrate: kbps(st.video, now, st.since), AudioBitrate: kbps(st.audio, now, st.since),
		IgnoredBitrate:   kbps(st.ignored, now, st.since),
		KeyframeInterval: math.Round(st.keyInterval*10) / 10,
		BehindSeconds:    math.Round((st.lag-st.minLag).Seconds()*10) / 10, TimestampGaps: len(st.gaps),
	}
	if n := len(st.frames); n > 1 {
		if span := float64(st.frames[n-1]-st.frames[0]) / 1000; span > 0 {
			h.FPS = math.Round(float64(n-1)/span*10) / 10
		}
	}
	if !h.Receiving {
		h.VideoBitrate, h.AudioBitrate, h.FPS, h.BehindSeconds = 0, 0, 0, 0
	}
	return h
}
