package live

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/onair/onair/modules/live/flv"
	"github.com/onair/onair/modules/shows"
)

// Stream health: each publication measures what it receives, from the
// tags the ingest accepts (stream.media), and Module.Health reports it
// (shows.HealthReporter) to the studio, the API and the console. Nothing
// here decodes media: sizes and timestamps of FLV tags, the keyframe flag,
// the codec ids and what the encoder announces in onMetaData.
//
// Late media: an encoder sends media in real time, so the media time it
// has sent grows as fast as the wall clock. Its lag, wall time since the
// first tag minus media time since the first tag, stays level (within
// network jitter); when the upload or the encoder cannot keep up it grows
// by the shortfall every second. behind is the lag now minus the least lag
// seen (the moment the encoder was furthest ahead, e.g. after it sent its
// buffer at start), so a sender that catches up (OBS empties its buffer
// after a hiccup) goes back to 0.
//
// Dropped frames: RTMP carries no count of the frames OBS dropped or
// skipped. What reaches the server is their absence: a jump in the video
// timestamps several frame intervals long. Those jumps are counted
// (timestamp_gaps) rather than called dropped frames, since a source with
// a variable frame rate (a screen capture that only sends changes) makes
// the same jumps without losing anything.

// statsWindow is the span the bitrates and the frame rate are measured
// over.
const statsWindow = 5 * time.Second

// receivingWithin: a publication that sent nothing for longer is reported
// as not receiving (the encoder stalled or the network dropped).
const receivingWithin = 3 * time.Second

// Thresholds of the warnings, chosen for what OnAir's 2 s HLS segments and
// phone listeners need.
const (
	maxBehind           = 3.0  // seconds behind real time
	maxGaps             = 3    // timestamp gaps a minute
	maxKeyframeInterval = 4.0  // seconds; longer makes segments long and viewers wait
	highVideoBitrate    = 8000 // kb/s
	lowVideoBitrate     = 300  // kb/s
	lowFPS              = 20.0
	lowAudioBitrate     = 64 // kb/s
)

type sample struct {
	at    time.Time
	bytes int
}

// streamStats is the measure of one publication. It is written on the
// connection's goroutine and read by Health, so it has its own lock.
type streamStats struct {
	mu                     sync.Mutex
	since, last            time.Time
	videoCodec, audioCodec string
	width, height          int
	video, audio           []sample // within statsWindow of the latest
	ignored                []sample // video an audio-only show drops, within statsWindow
	frames                 []int64  // media timestamps (ms) of video frames within the window
	lastKey                int64    // media time of the latest keyframe, -1 none
	keyInterval            float64  // seconds between the last two keyframes
	// Late media: the wall and media time of the first tag of the
	// timeline, the latest media time, the lag at the latest tag and the
	// least lag seen.
	timed       bool
	t0          time.Time
	ts0, tsMax  int64
	lag, minLag time.Duration
	// Gaps: the previous video frame's media time, the usual interval
	// between frames (ms, a moving average), and when gaps were seen.
	lastFrame int64
	interval  float64
	gaps      []time.Time // within gapWindow
}

// gapWindow is the span timestamp gaps are counted over.
const gapWindow = time.Minute

// timelineReset: a media time further back than this starts a new
// timeline (an encoder that restarted its clock) rather than a late tag.
const timelineReset = 1000 // ms

func newStreamStats(now time.Time) *streamStats {
	return &streamStats{since: now, lastKey: -1}
}

// metadata takes the encoder's announcement (width, height).
func (st *streamStats) metadata(meta map[string]any) {
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

// tag records a media tag the ingest accepted.
func (st *streamStats) tag(video bool, ts int64, body []byte, header bool, now time.Time) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.last = now
	st.timing(ts, now)
	cut := now.Add(-statsWindow)
	if !video {
		if st.audioCodec == "" {
			if c, err := flv.AudioCodec(body); err == nil {
				st.audioCodec = codecName(c)
			}
		}
		st.audio = append(trim(st.audio, cut), sample{now, len(body)})
		return
	}
	if st.videoCodec == "" {
		if c, ok, err := flv.VideoCodec(body); err == nil && ok {
			st.videoCodec = codecName(c)
		}
	}
	st.video = append(trim(st.video, cut), sample{now, len(body)})
	if header {
		return
	}
	st.gap(ts, now)
	st.frames = append(st.frames, ts)
	for len(st.frames) > 0 && ts-st.frames[0] > statsWindow.Milliseconds() {
		st.frames = st.frames[1:]
	}
	if t, err := flv.ParseVideoTag(body); err == nil && t.IsKeyframe() {
		if st.lastKey >= 0 && ts > st.lastKey {
			st.keyInterval = float64(ts-st.lastKey) / 1000
		}
		st.lastKey = ts
	}
}

// timing follows the lag of media time behind the wall clock.
func (st *streamStats) timing(ts int64, now time.Time) {
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
func (st *streamStats) gap(ts int64, now time.Time) {
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

// ignoredVideo records a video tag an audio-only show drops unread: the
// stream is being received, and the broadcaster may stop sending it.
func (st *streamStats) ignoredVideo(size int, now time.Time) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.last = now
	st.ignored = append(trim(st.ignored, now.Add(-statsWindow)), sample{now, size})
}

// ignoredKbps is the bitrate of the video dropped over the window.
func (st *streamStats) ignoredKbps(now time.Time) int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return kbps(st.ignored, now, st.since)
}

// codecName is a codec's common name ("H.264", "AAC"), without the id
// the logs add.
func codecName(c flv.Codec) string {
	name := c.String()
	if i := strings.Index(name, " ("); i > 0 {
		name = name[:i]
	}
	return name
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
	span := statsWindow
	if d := now.Sub(since); d < span {
		span = d
	}
	if span < time.Second {
		span = time.Second
	}
	total := 0
	for _, x := range s {
		if !x.at.Before(now.Add(-statsWindow)) {
			total += x.bytes
		}
	}
	return int(float64(total) * 8 / 1000 / span.Seconds())
}

// snapshot is the health now.
func (st *streamStats) snapshot(now time.Time) shows.Health {
	st.mu.Lock()
	defer st.mu.Unlock()
	h := shows.Health{
		Receiving: !st.last.IsZero() && now.Sub(st.last) <= receivingWithin, Since: shows.SinceOf(st.since),
		VideoCodec: st.videoCodec, AudioCodec: st.audioCodec, Width: st.width, Height: st.height,
		VideoBitrate: kbps(st.video, now, st.since), AudioBitrate: kbps(st.audio, now, st.since),
		KeyframeInterval: math.Round(st.keyInterval*10) / 10, Warnings: []string{},
		BehindSeconds: math.Round((st.lag-st.minLag).Seconds()*10) / 10, TimestampGaps: len(st.gaps),
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

// warn puts the problems of a health into words a broadcaster can act on.
func warn(h *shows.Health, started time.Time, now time.Time) {
	if !h.Receiving {
		h.Warnings = append(h.Warnings, "OnAir is not receiving your stream: check that OBS is streaming and your connection is up.")
		return
	}
	settled := now.Sub(started) > 2*statsWindow // the first seconds prove nothing
	if h.BehindSeconds >= maxBehind {
		h.Warnings = append(h.Warnings, fmt.Sprintf("The stream is arriving slower than real time (%g s behind): your upload or encoder can't keep up. Lower the bitrate or the resolution in OBS, or use a faster encoder preset.", h.BehindSeconds))
	}
	if h.TimestampGaps >= maxGaps {
		h.Warnings = append(h.Warnings, fmt.Sprintf("%d gaps in the video in the last minute: frames are dropped before they reach OnAir. OBS's Stats dock says whether by the network (lower the bitrate) or the encoder (a faster preset).", h.TimestampGaps))
	}
	if h.KeyframeInterval > maxKeyframeInterval {
		h.Warnings = append(h.Warnings, fmt.Sprintf("The keyframe interval is %g s; set 2 s in OBS (Settings → Output → Keyframe Interval), or viewers wait and lag behind.", h.KeyframeInterval))
	}
	if h.VideoCodec != "" && settled {
		switch {
		case h.VideoBitrate > highVideoBitrate:
			h.Warnings = append(h.Warnings, fmt.Sprintf("The video bitrate is %d kb/s; viewers on phones will buffer. 2500–6000 kb/s is plenty.", h.VideoBitrate))
		case h.VideoBitrate < lowVideoBitrate:
			h.Warnings = append(h.Warnings, fmt.Sprintf("The video bitrate is only %d kb/s; the picture will be blocky. Use 2500 kb/s or more, or check your upload speed.", h.VideoBitrate))
		}
		if h.FPS > 0 && h.FPS < lowFPS {
			h.Warnings = append(h.Warnings, fmt.Sprintf("The frame rate is %g fps; 30 fps looks smooth. Your computer or connection may be overloaded.", h.FPS))
		}
	}
	if h.AudioCodec == "" && settled {
		h.Warnings = append(h.Warnings, "No audio is arriving: check the audio source in OBS.")
	} else if h.AudioBitrate > 0 && h.AudioBitrate < lowAudioBitrate && settled {
		h.Warnings = append(h.Warnings, fmt.Sprintf("The audio bitrate is %d kb/s; music needs 128–160 kb/s (Settings → Output → Audio Bitrate).", h.AudioBitrate))
	}
}

var _ shows.HealthReporter = (*Module)(nil)

// Health is the stream health of the show's publication, with its viewers
// now; ok is false when nobody publishes the show on this node.
func (m *Module) Health(showID int64) (shows.Health, bool) {
	m.mu.Lock()
	s := m.streams[showID]
	if s == nil {
		for p := range m.probing {
			if p.showID == showID {
				s = p
			}
		}
	}
	m.mu.Unlock()
	if s == nil || s.stats == nil {
		return shows.Health{}, false
	}
	now := time.Now()
	h := s.stats.snapshot(now)
	h.Viewers = m.Viewers(showID)
	h.PeakViewers, _ = m.peaks.observe(showID, h.Viewers, now)
	warn(&h, s.stats.since, now)
	if kb := s.stats.ignoredKbps(now); kb > 0 && h.Receiving {
		h.Warnings = append(h.Warnings, fmt.Sprintf("This show is audio only: the video you send (%d kb/s) is ignored. Turn video off in OBS to save upload.", kb))
	}
	return h, true
}
