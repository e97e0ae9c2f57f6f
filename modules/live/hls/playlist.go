package hls

import (
	"fmt"
	"math"
	"strings"
)

// playlist holds what is rendered into a media playlist.
type playlist struct {
	targetDuration int // seconds
	mediaSequence  uint64
	discontinuity  uint64 // EXT-X-DISCONTINUITY-SEQUENCE
	segments       []Segment
	vod            bool
	ended          bool
}

// render writes the playlist text (RFC 8216, version 3: decimal EXTINF).
func (p playlist) render() []byte {
	var b strings.Builder
	b.WriteString("#EXTM3U\n#EXT-X-VERSION:3\n")
	if p.vod {
		b.WriteString("#EXT-X-PLAYLIST-TYPE:VOD\n")
	}
	fmt.Fprintf(&b, "#EXT-X-TARGETDURATION:%d\n", p.targetDuration)
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
	for _, s := range p.segments {
		if s.Discontinuity {
			b.WriteString("#EXT-X-DISCONTINUITY\n")
		}
		if !s.ProgramDateTime.IsZero() {
			fmt.Fprintf(&b, "#EXT-X-PROGRAM-DATE-TIME:%s\n", s.ProgramDateTime.UTC().Format("2006-01-02T15:04:05.000Z07:00"))
		}
		fmt.Fprintf(&b, "#EXTINF:%.3f,\n%s\n", s.Duration, s.File)
	}
	if p.vod || p.ended {
		b.WriteString("#EXT-X-ENDLIST\n")
	}
	return []byte(b.String())
}

// roundedDuration is a segment duration rounded to the nearest integer, the
// value RFC 8216 compares with EXT-X-TARGETDURATION.
func roundedDuration(seconds float64) int {
	return int(math.Floor(seconds + 0.5))
}
