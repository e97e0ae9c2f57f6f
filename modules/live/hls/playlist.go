package hls

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// playlist holds what is rendered into a media playlist.
type playlist struct {
	targetDuration int // seconds
	mediaSequence  uint64
	discontinuity  uint64 // EXT-X-DISCONTINUITY-SEQUENCE
	segments       []Segment
	vod            bool
	ended          bool
	ll             *lowLatency // LL-HLS tags of a live playlist; nil for none
}

// lowLatency is what a live playlist announces for LL-HLS players.
type lowLatency struct {
	partTarget  int64             // ticks
	parts       map[uint64][]Part // parts of finished segments, by sequence
	pending     []Part            // parts of the segment being written
	pendingDisc bool              // that segment follows a discontinuity
	hint        string            // the next part, for EXT-X-PRELOAD-HINT
	reports     []renditionReport
}

type renditionReport struct {
	uri  string
	msn  uint64
	part int
}

// render writes the playlist text (RFC 8216, version 3: decimal EXTINF;
// the LL-HLS tags of RFC 8216bis need no higher version, and players that
// do not know them ignore them).
func (p playlist) render() []byte {
	var b strings.Builder
	b.WriteString("#EXTM3U\n#EXT-X-VERSION:3\n")
	if p.vod {
		b.WriteString("#EXT-X-PLAYLIST-TYPE:VOD\n")
	}
	fmt.Fprintf(&b, "#EXT-X-TARGETDURATION:%d\n", p.targetDuration)
	if p.ll != nil {
		fmt.Fprintf(&b, "#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK=%.3f\n", partHoldBackOf(p.ll.partTarget))
		fmt.Fprintf(&b, "#EXT-X-PART-INF:PART-TARGET=%s\n", formatSeconds(p.ll.partTarget))
	}
	fmt.Fprintf(&b, "#EXT-X-MEDIA-SEQUENCE:%d\n", p.mediaSequence)
	if p.discontinuity > 0 {
		fmt.Fprintf(&b, "#EXT-X-DISCONTINUITY-SEQUENCE:%d\n", p.discontinuity)
	}
	independent := len(p.segments) > 0
	for _, s := range p.segments {
		independent = independent && s.Independent
	}
	if independent {
		b.WriteString("#EXT-X-INDEPENDENT-SEGMENTS\n")
	}
	for i, s := range p.segments {
		if s.Discontinuity {
			b.WriteString("#EXT-X-DISCONTINUITY\n")
		}
		if !s.ProgramDateTime.IsZero() {
			fmt.Fprintf(&b, "#EXT-X-PROGRAM-DATE-TIME:%s\n", s.ProgramDateTime.UTC().Format("2006-01-02T15:04:05.000Z07:00"))
		}
		if p.ll != nil && i >= len(p.segments)-partSegments {
			for _, part := range p.ll.parts[s.Sequence] {
				b.WriteString(part.tag())
				b.WriteByte('\n')
			}
		}
		fmt.Fprintf(&b, "#EXTINF:%.3f,\n%s\n", s.Duration, s.File)
	}
	if p.ll != nil {
		if p.ll.pendingDisc && len(p.ll.pending) > 0 {
			b.WriteString("#EXT-X-DISCONTINUITY\n")
		}
		for _, part := range p.ll.pending {
			b.WriteString(part.tag())
			b.WriteByte('\n')
		}
		if p.ll.hint != "" {
			fmt.Fprintf(&b, "#EXT-X-PRELOAD-HINT:TYPE=PART,URI=%q\n", p.ll.hint)
		}
		for _, r := range p.ll.reports {
			fmt.Fprintf(&b, "#EXT-X-RENDITION-REPORT:URI=%q,LAST-MSN=%d,LAST-PART=%d\n", r.uri, r.msn, r.part)
		}
	}
	if p.vod || p.ended {
		b.WriteString("#EXT-X-ENDLIST\n")
	}
	return []byte(b.String())
}

// targetFor is the EXT-X-TARGETDURATION a segment of this many seconds
// needs: its duration as written in EXTINF (to the millisecond), rounded
// up to whole seconds. RFC 8216 (4.3.3.1) only asks the nearest integer
// not to exceed the target; rounding up keeps every segment within it.
func targetFor(seconds float64) int {
	return int(math.Ceil(math.Round(seconds*1000) / 1000))
}

// windowStart is the index of the oldest segment a live playlist keeps:
// the oldest ones leave while those after them still last least seconds.
func windowStart(segs []Segment, least float64) int {
	var total float64
	for i := len(segs) - 1; i >= 0; i-- {
		total += segs[i].Duration
		if total >= least {
			return i
		}
	}
	return 0
}

// Span is the extent of a recording on the wall clock: from its first
// media sample (the earliest program date time of either rendition) to
// the end of its last sample, the last frame's duration included. With
// one publication it equals the media's duration; the gaps of a
// publisher that reconnected count too, as they do for the chat.
func Span(segs []Segment) (start time.Time, d time.Duration) {
	var end time.Time
	for _, s := range segs {
		if start.IsZero() || s.ProgramDateTime.Before(start) {
			start = s.ProgramDateTime
		}
		if e := s.ProgramDateTime.Add(time.Duration(math.Round(s.Duration * float64(time.Second)))); e.After(end) {
			end = e
		}
	}
	return start, end.Sub(start)
}
