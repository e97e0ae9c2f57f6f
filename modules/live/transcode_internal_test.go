package live

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseTranscode(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []rungSpec
		err  string
	}{
		{in: "", want: nil},
		{in: "360p,240p", want: []rungSpec{{360, 800_000}, {240, 400_000}}},
		{in: "240p, 1080p:6M ,360p:800k", want: []rungSpec{{1080, 6_000_000}, {360, 800_000}, {240, 400_000}}},
		{in: "720p:2500000", want: []rungSpec{{720, 2_500_000}}},
		{in: "720", err: "want a height such as 720p"},
		{in: "99p", err: "want a height"},
		{in: "4320p", err: "want a height"},
		{in: "361p", err: "want a height"},
		{in: "360p:fast", err: "bit rate"},
		{in: "360p:10k", err: "bit rate"},
		{in: "360p,360p:500k", err: "listed twice"},
		{in: "360p,", err: "want a height"},
	} {
		got, err := parseTranscode(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got.([]rungSpec), tc.want) {
			t.Errorf("%q: %v %v, want %v", tc.in, got, err, tc.want)
		}
	}
	if _, err := parseTranscodeEncoder("x265"); err == nil {
		t.Error("an unknown encoder was accepted")
	}
}

// The encoder check reads ffmpeg's list of encoders by name.
func TestHasEncoder(t *testing.T) {
	list := []byte("Encoders:\n V..... = Video\n ------\n V....D libx264              libx264 H.264\n V....D h264_nvenc           NVIDIA NVENC H.264 encoder (codec h264)\n")
	if !hasEncoder(list, "libx264") || !hasEncoder(list, "h264_nvenc") || hasEncoder(list, "h264_qsv") || hasEncoder(list, "H.264") {
		t.Error("encoders misread")
	}
}

// A ladder never scales up: rungs at or above the source are left out.
func TestRungsBelow(t *testing.T) {
	c := &ladderConfig{rungs: []rungSpec{{1080, 1}, {720, 1}, {360, 1}}}
	var got []int
	for _, r := range c.rungsBelow(720) {
		got = append(got, r.height)
	}
	if !slices.Equal(got, []int{360}) {
		t.Errorf("rungs below 720p: %v", got)
	}
}

// The speed is measured over the last seconds, and a transcoder under
// 0.95 for 10 s is overloaded; one sample back at speed resets the count.
func TestSpeedMeter(t *testing.T) {
	var m speedMeter
	at := time.Unix(0, 0)
	var media int64
	step := func(speed float64) (float64, bool, bool) {
		at = at.Add(500 * time.Millisecond)
		media += int64(speed * 500_000)
		return m.add(at, media)
	}
	for range 20 {
		if s, ok, slow := step(1); ok && (s < 0.99 || slow) {
			t.Fatalf("real time read as %g (slow %v)", s, slow)
		}
	}
	// Slow for 9 s, then one fast report: not overloaded.
	for range 18 {
		if _, _, slow := step(0.5); slow {
			t.Fatal("overloaded before 10 s")
		}
	}
	for range 8 {
		step(2)
	}
	overloadedAt := -1
	for i := range 40 {
		if _, _, slow := step(0.8); slow {
			overloadedAt = i
			break
		}
	}
	// The window's speed falls under 0.95 a few reports in, then 10 s.
	if overloadedAt < 20 || overloadedAt > 30 {
		t.Errorf("overloaded after %d reports of 0.5 s", overloadedAt)
	}
}
