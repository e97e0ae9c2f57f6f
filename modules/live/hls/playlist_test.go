package hls

import (
	"bufio"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// livePlaylist is what checkPlaylist reads back from a media playlist.
type livePlaylist struct {
	target    int
	sequence  uint64
	durations []float64
	pdts      []time.Time
	ended     bool
}

func (l livePlaylist) total() float64 {
	var s float64
	for _, d := range l.durations {
		s += d
	}
	return s
}

// parsePlaylist reads a media playlist the way a player does, failing on
// a segment without EXT-X-PROGRAM-DATE-TIME.
func parsePlaylist(text string) (livePlaylist, error) {
	var l livePlaylist
	var pdt time.Time
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		var err error
		switch {
		case strings.HasPrefix(line, "#EXT-X-TARGETDURATION:"):
			l.target, err = strconv.Atoi(strings.TrimPrefix(line, "#EXT-X-TARGETDURATION:"))
		case strings.HasPrefix(line, "#EXT-X-MEDIA-SEQUENCE:"):
			l.sequence, err = strconv.ParseUint(strings.TrimPrefix(line, "#EXT-X-MEDIA-SEQUENCE:"), 10, 64)
		case strings.HasPrefix(line, "#EXT-X-PROGRAM-DATE-TIME:"):
			pdt, err = time.Parse(time.RFC3339Nano, strings.TrimPrefix(line, "#EXT-X-PROGRAM-DATE-TIME:"))
		case strings.HasPrefix(line, "#EXTINF:"):
			if pdt.IsZero() {
				return l, fmt.Errorf("segment %d has no EXT-X-PROGRAM-DATE-TIME", len(l.durations))
			}
			var d float64
			d, err = strconv.ParseFloat(strings.TrimSuffix(strings.TrimPrefix(line, "#EXTINF:"), ","), 64)
			l.durations, l.pdts, pdt = append(l.durations, d), append(l.pdts, pdt), time.Time{}
		case line == "#EXT-X-ENDLIST":
			l.ended = true
		}
		if err != nil {
			return l, fmt.Errorf("%q: %w", line, err)
		}
	}
	if len(l.durations) == 0 {
		return l, fmt.Errorf("no segments")
	}
	return l, nil
}

// checkPlaylist asserts what a player relies on in a live playlist: the
// target duration is the longest segment rounded up and want, no segment
// is longer, every segment has a program date time, and once the window
// slides the playlist holds at least three target durations.
func checkPlaylist(t *testing.T, name, text string, want int) livePlaylist {
	t.Helper()
	l, err := parsePlaylist(text)
	if err != nil {
		t.Fatalf("%s: %v\n%s", name, err, text)
	}
	longest := 0.0
	for _, d := range l.durations {
		longest = max(longest, d)
	}
	if l.target != want || l.target != int(math.Ceil(longest)) {
		t.Errorf("%s: EXT-X-TARGETDURATION %d, want %d = longest segment %.3f s rounded up\n%s", name, l.target, want, longest, text)
	}
	if l.sequence > 0 && l.total() < 3*float64(l.target) {
		t.Errorf("%s: the window holds %.3f s, under 3 × %d s\n%s", name, l.total(), l.target, text)
	}
	return l
}

func TestPlaylistsTrueToSegments(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		gop     int64   // ms; 0 is audio only
		target  int     // of the A/V playlist; audio's is SegmentDuration rounded up
		segment float64 // the A/V segments' length
	}{
		{"2 s keyframes", Options{}, 2000, 2, 2},
		{"1 s keyframes", Options{}, 1000, 2, 2},
		{"3 s segments", Options{SegmentDuration: 3 * time.Second}, 1000, 3, 3},
		{"1.6 s segments", Options{SegmentDuration: 1600 * time.Millisecond}, 800, 2, 1.6},
		{"keyframes rarer than the target", Options{}, 6000, 2, 2},
		{"raised target for long keyframe intervals", Options{TargetDuration: 6}, 6000, 6, 6},
		{"audio only", Options{}, 0, 2, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := openTest(t, dir, tt.opts)
			feed(t, p, 1000, 40000, tt.gop, true)
			want := map[string]int{
				PlaylistAV: tt.target, ArchiveAV: tt.target, RenditionAV: tt.target,
				PlaylistAudio: 2, ArchiveAudio: 2, RenditionAudio: 2,
			}
			if tt.opts.SegmentDuration == 3*time.Second {
				want[PlaylistAudio], want[ArchiveAudio], want[RenditionAudio] = 3, 3, 3
			}
			// The live playlists as a player sees them mid-stream.
			for _, name := range []string{PlaylistAV, PlaylistAudio} {
				l := checkPlaylist(t, name, readFile(t, filepath.Join(dir, name)), want[name])
				if l.sequence == 0 {
					t.Errorf("%s: window did not slide in 40 s", name)
				}
				for i := 1; i < len(l.pdts); i++ {
					gap := l.pdts[i].Sub(l.pdts[i-1]).Seconds()
					if math.Abs(gap-l.durations[i-1]) > 0.002 {
						t.Errorf("%s: segment %d lasts %.3f s but the next starts %.3f s later", name, i-1, l.durations[i-1], gap)
					}
				}
			}
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			for _, r := range []string{RenditionAV, RenditionAudio} {
				for _, s := range segmentsOf(t, dir, r) {
					if s.Duration > float64(want[r]) || s.Target != want[r] {
						t.Errorf("%s segment %d lasts %.3f s, target %d, want target %d", r, s.Sequence, s.Duration, s.Target, want[r])
					}
				}
			}
			if tt.gop > 0 {
				av := segmentsOf(t, dir, RenditionAV)
				for _, s := range av[:len(av)-1] {
					if math.Abs(s.Duration-tt.segment) > 0.001 {
						t.Errorf("A/V segment %d lasts %.3f s, want %.3f", s.Sequence, s.Duration, tt.segment)
					}
				}
			}
			if err := Finalize(dir, tt.opts); err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{PlaylistAV, PlaylistAudio} {
				if l := checkPlaylist(t, name, readFile(t, filepath.Join(dir, name)), want[name]); !l.ended {
					t.Errorf("%s not ended", name)
				}
			}
			for _, name := range []string{ArchiveAV, ArchiveAudio} {
				l := checkPlaylist(t, name, readFile(t, filepath.Join(dir, name)), want[name])
				if !l.ended || math.Abs(l.total()-40) > 0.1 {
					t.Errorf("%s: ended %v, %.3f s of 40", name, l.ended, l.total())
				}
			}
		})
	}
}

// TestKeyframeJitter: RTMP timestamps are whole milliseconds, so a
// keyframe due every 2 s may be stamped a millisecond off. Either way
// the segment ends on it, not on a forced cut.
func TestKeyframeJitter(t *testing.T) {
	for _, skew := range []int64{-1, 1} {
		dir := t.TempDir()
		p := openTest(t, dir, Options{})
		if err := p.Video(0, videoSeqHeader()); err != nil {
			t.Fatal(err)
		}
		p.Metadata(map[string]any{"videocodecid": 7.0})
		for i := int64(0); i < 200; i++ {
			ts := i * 40
			key := i%50 == 0
			if key && i > 0 {
				ts += skew
			}
			if err := p.Video(ts, videoFrame(key)); err != nil {
				t.Fatal(err)
			}
		}
		p.Close()
		av := segmentsOf(t, dir, RenditionAV)
		if len(av) != 4 {
			t.Fatalf("skew %d ms: %d segments, want 4: %+v", skew, len(av), av)
		}
		for _, s := range av {
			if !s.Independent || math.Abs(s.Duration-2) > 0.003 || math.Round(s.Duration) > 2 {
				t.Errorf("skew %d ms: segment %+v", skew, s)
			}
		}
	}
}

func TestTargetFor(t *testing.T) {
	for in, want := range map[float64]int{2: 2, 2.0004: 2, 2.001: 3, 1.996: 2, 0.2: 1, 4.5: 5} {
		if got := targetFor(in); got != want {
			t.Errorf("%v s: got %d, want %d", in, got, want)
		}
	}
}

func TestWindowStart(t *testing.T) {
	segs := func(d ...float64) []Segment {
		out := make([]Segment, len(d))
		for i := range d {
			out[i].Duration = d[i]
		}
		return out
	}
	tests := []struct {
		name  string
		segs  []Segment
		least float64
		want  int
	}{
		{"too short to drop any", segs(2, 2), 6, 0},
		{"exactly enough", segs(2, 2, 2, 2), 6, 1},
		{"short audio segments keep one more", segs(1.996, 1.996, 1.996, 1.996), 6, 0},
		{"long tail", segs(2, 2, 2, 2, 2, 2, 2, 2), 6, 5},
	}
	for _, tt := range tests {
		if got := windowStart(tt.segs, tt.least); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestSpan(t *testing.T) {
	t0 := testEpoch
	segs := []Segment{
		{Rendition: RenditionAV, ProgramDateTime: t0.Add(40 * time.Millisecond), Duration: 2},
		{Rendition: RenditionAudio, ProgramDateTime: t0, Duration: 1.996},
		{Rendition: RenditionAudio, ProgramDateTime: t0.Add(1996 * time.Millisecond), Duration: 0.5},
		{Rendition: RenditionAV, ProgramDateTime: t0.Add(2040 * time.Millisecond), Duration: 0.48},
	}
	start, d := Span(segs)
	if !start.Equal(t0) || d != 2520*time.Millisecond {
		t.Fatalf("span %v + %v, want %v + 2.52s", start, d, t0)
	}
	if start, d := Span(nil); !start.IsZero() || d != 0 {
		t.Fatalf("empty span %v %v", start, d)
	}
}

// TestPackagerStart: the first sample's wall-clock time, which the show's
// start and the chat's positions count from, is the first segment's
// program date time.
func TestPackagerStart(t *testing.T) {
	dir := t.TempDir()
	p := openTest(t, dir, Options{})
	if !p.Start().IsZero() {
		t.Fatal("start before any media")
	}
	feed(t, p, 5000, 5000, 2000, true)
	p.Close()
	if !p.Start().Equal(testEpoch) {
		t.Fatalf("start %v, want %v", p.Start(), testEpoch)
	}
	all, _ := ReadIndex(dir)
	start, d := Span(all)
	if !start.Equal(testEpoch) || math.Abs(d.Seconds()-5) > 0.05 {
		t.Fatalf("5 s of media spans %v from %v", d, start)
	}
}
