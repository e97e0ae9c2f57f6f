package live

import (
	"fmt"
	"math"
	"time"

	"github.com/onair/onair/modules/live/srt"
	"github.com/onair/onair/modules/live/streamcore"
	"github.com/onair/onair/modules/shows"
)

// Stream health: the stream core measures each publication
// (streamcore/stats.go: bitrates, frame rate, keyframe interval, media
// time behind the wall clock, timestamp gaps); Module.Health reports it
// (shows.HealthReporter) to the studio, the API and the console, with the
// viewers, and puts its problems into words a broadcaster can act on.

// Thresholds of the warnings, chosen for what OnAir's 2 s HLS segments and
// phone listeners need.
const (
	maxBehind           = 3.0  // seconds behind real time
	maxGaps             = 3    // timestamp gaps a minute
	maxKeyframeInterval = 4.0  // seconds; longer makes segments long and viewers wait
	highVideoBitrate    = 8000 // kb/s
	lowVideoBitrate     = 300  // kb/s
	lowFPS              = 20.0
	lowAudioBitrate     = 64    // kb/s
	maxSRTDropped       = 0.001 // share of SRT packets lost for good
)

// warn puts the problems of a health into words a broadcaster can act on.
func warn(h *shows.Health, started time.Time, now time.Time) {
	if !h.Receiving {
		h.Warnings = append(h.Warnings, "OnAir is not receiving your stream: check that OBS is streaming and your connection is up.")
		return
	}
	settled := now.Sub(started) > 2*streamcore.StatsWindow // the first seconds prove nothing
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
	if s == nil {
		return shows.Health{}, false
	}
	now := time.Now()
	st := s.core.Stats(now)
	h := shows.Health{
		Receiving: st.Receiving, Since: shows.SinceOf(st.Since), VideoCodec: st.VideoCodec, AudioCodec: st.AudioCodec,
		Width: st.Width, Height: st.Height, FPS: st.FPS, VideoBitrate: st.VideoBitrate, AudioBitrate: st.AudioBitrate,
		KeyframeInterval: st.KeyframeInterval, BehindSeconds: st.BehindSeconds, TimestampGaps: st.TimestampGaps,
		Warnings: []string{},
	}
	h.Protocol = s.protocol
	if s.link != nil {
		h.SRT = srtHealth(s.link())
		if d := h.SRT.PacketsDropped; h.Receiving && d > 0 && float64(d) >= maxSRTDropped*float64(h.SRT.PacketsReceived) {
			h.Warnings = append(h.Warnings, fmt.Sprintf("SRT could not recover %d packets in time: the picture breaks up. Raise the latency in the encoder's SRT settings (4 × the round trip of %g ms or more) or lower the bitrate.", d, h.SRT.RTTMillis))
		}
	}
	if tc := s.transcoder.Load(); tc != nil {
		h.Transcode = tc.health()
	}
	h.Viewers = m.Viewers(showID)
	h.PeakViewers, _ = m.peaks.observe(showID, h.Viewers, now)
	warn(&h, st.Since, now)
	if kb := st.IgnoredBitrate; kb > 0 && h.Receiving {
		h.Warnings = append(h.Warnings, fmt.Sprintf("This show is audio only: the video you send (%d kb/s) is ignored. Turn video off in OBS to save upload.", kb))
	}
	return h, true
}

// srtHealth is an SRT connection's state in the API's terms.
func srtHealth(l srt.LinkStats) *shows.SRTHealth {
	h := &shows.SRTHealth{RTTMillis: math.Round(float64(l.RTT.Microseconds())/100) / 10,
		PacketsReceived: l.Received, PacketsLost: l.Lost, PacketsRetransmitted: l.Retransmitted, PacketsDropped: l.Dropped}
	// The originals sent: those that came, and those found missing.
	if sent := l.Received - min(l.Retransmitted, l.Received) + l.Lost; sent > 0 {
		h.LossPercent = math.Round(float64(l.Lost)/float64(sent)*1000) / 10
	}
	return h
}
