package hls

import (
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestPartsAtLeast85PercentOfTarget: RFC 8216bis 4.4.4.9 — every part but
// the last of its segment lasts at least 85 % of the PART-TARGET, at the
// frame rates encoders offer, for both renditions.
func TestPartsAtLeast85PercentOfTarget(t *testing.T) {
	for _, part := range []time.Duration{200 * time.Millisecond, time.Second / 3} {
		for _, fps := range []float64{23.976, 24, 25, 29.97, 30, 50, 59.94, 60} {
			t.Run(fmt.Sprintf("%v/%v", part, fps), func(t *testing.T) {
				dir := t.TempDir()
				p := openTest(t, dir, Options{PartDuration: part})
				feedAtRate(t, p, fps, int64(fps*20))
				for _, list := range []string{PlaylistAV, PlaylistAudio} {
					text := readFile(t, filepath.Join(dir, list))
					l := parseLL(t, text)
					for i, m := range l.parts {
						d, _ := strconv.ParseFloat(m[1], 64)
						last := i+1 == len(l.parts)
						if !last {
							_, s, _, _ := ParsePartFile(m[2])
							_, s2, _, _ := ParsePartFile(l.parts[i+1][2])
							last = s2 != s
						}
						if d > l.partTarget || (!last && d < 0.85*l.partTarget) {
							t.Errorf("%s: part %s lasts %v s, PART-TARGET %v", list, m[2], d, l.partTarget)
						}
					}
				}
			})
		}
	}
}

// feedAtRate feeds frames of video at fps, a keyframe every 2 s, with
// 48 kHz AAC-LC stereo interleaved by timestamp, after both sequence
// headers.
func feedAtRate(t *testing.T, p *FLVFeed, fps float64, frames int64) {
	t.Helper()
	if err := p.Video(0, videoSeqHeader()); err != nil {
		t.Fatal(err)
	}
	if err := p.Audio(0, []byte{0xAF, 0, 0x11, 0x90}); err != nil { // AAC-LC 48 kHz stereo
		t.Fatal(err)
	}
	gop := int64(2*fps + 0.5)
	var v, a int64
	for v < frames {
		vt := int64(float64(v) * 1000 / fps)
		at := a * 1024 * 1000 / 48000
		if vt <= at {
			if err := p.Video(vt, videoFrame(v%gop == 0)); err != nil {
				t.Fatal(err)
			}
			v++
		} else {
			if err := p.Audio(at, aacFrame()); err != nil {
				t.Fatal(err)
			}
			a++
		}
	}
}
