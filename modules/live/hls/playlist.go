package hls

import (
	"bytes"
	"math"
	"strconv"
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
	// skipUntil is the CAN-SKIP-UNTIL announced (seconds; 0: none).
	skipUntil float64
	// cold is the text of segments[:coldN] as render writes them (no
	// parts), kept by a rendition across renders: a DVR playlist holds
	// thousands of segments and is rendered after every part.
	cold  []byte
	coldN int
}

// lowLatency is what a live playlist announces for LL-HLS players.
type lowLatency struct {
	partTarget  int64             // ticks
	parts       map[uint64][]Part // parts of finished segments, by sequence
	pending     []Part            // parts of the segment being written
	pendingDisc bool              // that segment follows a discontinuity
	hint        string            // the next part, for EXT-X-PRELOAD-HINT
	reports     []renditionReport
	// partText and pendingText, when set, are the text of the segments
	// of parts (by sequence, parts included) and of pending as render
	// writes them, kept by a rendition so that each is rendered once, not
	// after every part. A rendition sets pendingText along with pending.
	partText    map[uint64][]byte
	pendingText []byte
}

type renditionReport struct {
	uri  string
	msn  uint64
	part int
}

// render writes the playlist text (RFC 8216, version 3: decimal EXTINF;
// the LL-HLS tags of RFC 8216bis need no higher version, and players that
// do not know them ignore them). A live rendition renders its playlist
// after every part, so the text is appended with strconv, not fmt
// (docs/benchmarks.md, "Ingest CPU"); the result is a fresh slice, kept
// by the memory cache as it is.
func (p playlist) render() []byte {
	n := 256 + len(p.cold) + 96*(len(p.segments)-p.coldN)
	if p.ll != nil {
		parts := len(p.ll.pending)
		for _, s := range p.segments[max(0, len(p.segments)-partSegments):] {
			parts += len(p.ll.parts[s.Sequence])
		}
		n += 80*parts + 96*len(p.ll.reports)
	}
	b := make([]byte, 0, n)
	b = append(b, "#EXTM3U\n#EXT-X-VERSION:3\n"...)
	if p.vod {
		b = append(b, "#EXT-X-PLAYLIST-TYPE:VOD\n"...)
	}
	b = append(b, "#EXT-X-TARGETDURATION:"...)
	b = strconv.AppendInt(b, int64(p.targetDuration), 10)
	b = append(b, '\n')
	if p.ll != nil || p.skipUntil > 0 {
		// CAN-SKIP-UNTIL comes last: the LL-HLS attributes read as
		// before it appeared.
		b = append(b, "#EXT-X-SERVER-CONTROL:"...)
		if p.ll != nil {
			b = append(b, "CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK="...)
			b = strconv.AppendFloat(b, partHoldBackOf(p.ll.partTarget), 'f', 3, 64)
			b = append(b, ',')
		}
		if p.skipUntil > 0 {
			b = append(b, "CAN-SKIP-UNTIL="...)
			b = strconv.AppendFloat(b, p.skipUntil, 'f', 3, 64)
		}
		b = bytes.TrimSuffix(b, []byte{','})
		b = append(b, '\n')
	}
	if p.ll != nil {
		b = append(b, "#EXT-X-PART-INF:PART-TARGET="...)
		b = append(b, formatSeconds(p.ll.partTarget)...)
		b = append(b, '\n')
	}
	b = append(b, "#EXT-X-MEDIA-SEQUENCE:"...)
	b = strconv.AppendUint(b, p.mediaSequence, 10)
	b = append(b, '\n')
	if p.discontinuity > 0 {
		b = append(b, "#EXT-X-DISCONTINUITY-SEQUENCE:"...)
		b = strconv.AppendUint(b, p.discontinuity, 10)
		b = append(b, '\n')
	}
	independent := len(p.segments) > 0
	for _, s := range p.segments {
		independent = independent && s.Independent
	}
	if independent {
		b = append(b, "#EXT-X-INDEPENDENT-SEGMENTS\n"...)
	}
	b = append(b, p.cold...)
	for i := p.coldN; i < len(p.segments); i++ {
		s := p.segments[i]
		var parts []Part
		if p.ll != nil && i >= len(p.segments)-partSegments {
			parts = p.ll.parts[s.Sequence]
			if text, ok := p.ll.partText[s.Sequence]; ok && len(parts) > 0 {
				b = append(b, text...)
				continue
			}
		}
		b = s.appendLines(b, parts)
	}
	if p.ll != nil {
		if p.ll.pendingDisc && len(p.ll.pending) > 0 {
			b = append(b, "#EXT-X-DISCONTINUITY\n"...)
		}
		if p.ll.pendingText != nil {
			b = append(b, p.ll.pendingText...)
		} else {
			for _, part := range p.ll.pending {
				b = part.appendTag(b)
			}
		}
		if p.ll.hint != "" {
			b = append(b, "#EXT-X-PRELOAD-HINT:TYPE=PART,URI="...)
			b = strconv.AppendQuote(b, p.ll.hint)
			b = append(b, '\n')
		}
		for _, r := range p.ll.reports {
			b = append(b, "#EXT-X-RENDITION-REPORT:URI="...)
			b = strconv.AppendQuote(b, r.uri)
			b = append(b, ",LAST-MSN="...)
			b = strconv.AppendUint(b, r.msn, 10)
			b = append(b, ",LAST-PART="...)
			b = strconv.AppendInt(b, int64(r.part), 10)
			b = append(b, '\n')
		}
	}
	if p.vod || p.ended {
		b = append(b, "#EXT-X-ENDLIST\n"...)
	}
	return b
}

// appendLines appends the segment's lines: its discontinuity, program
// date time, the EXT-X-PART tags of its parts, EXTINF and URI.
func (s Segment) appendLines(b []byte, parts []Part) []byte {
	if s.Discontinuity {
		b = append(b, "#EXT-X-DISCONTINUITY\n"...)
	}
	if !s.ProgramDateTime.IsZero() {
		b = append(b, "#EXT-X-PROGRAM-DATE-TIME:"...)
		b = s.ProgramDateTime.UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z07:00")
		b = append(b, '\n')
	}
	for _, part := range parts {
		b = part.appendTag(b)
	}
	if s.Gap {
		b = append(b, "#EXT-X-GAP\n"...)
	}
	b = append(b, "#EXTINF:"...)
	b = strconv.AppendFloat(b, s.Duration, 'f', 3, 64)
	b = append(b, ",\n"...)
	b = append(b, s.File...)
	return append(b, '\n')
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
