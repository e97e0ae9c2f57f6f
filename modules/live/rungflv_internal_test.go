package live

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/onair/onair/modules/live/flv"
	"github.com/onair/onair/modules/live/hls"
	"github.com/onair/onair/modules/live/streamcore"
)

// testAVC is a real configuration record from x264 (baseline, 320x240).
var testAVC = []byte{
	0x01, 0x42, 0xC0, 0x0D, 0xFF, 0xE1, 0x00, 0x09,
	0x67, 0x42, 0xC0, 0x0D, 0xD9, 0x41, 0x41, 0xFA, 0x10,
	0x01, 0x00, 0x04, 0x68, 0xCB, 0x83, 0xCB,
}

var testASC = &flv.AudioSpecificConfig{ObjectType: flv.AOTAACLC, FrequencyIndex: 4, SampleRate: 44100, Channels: 2}

// rungTestUnits are ms of 25 fps pictures (a keyframe every 2 s, no
// parameter sets in them, as ffmpeg's FLV muxer writes them) and 44.1 kHz
// AAC frames from start, in decoding order.
func rungTestUnits(start, ms int64) []*streamcore.Unit {
	var out []*streamcore.Unit
	var v, a int64
	for {
		vt := start + v*40
		at := start + int64(math.Round(float64(a)*1024*1000/44100))
		if vt-start >= ms && at-start >= ms {
			return out
		}
		if vt-start < ms && vt <= at {
			nal := []byte{0x41, 0x9A, byte(v), 2, 3}
			if v*40%2000 == 0 {
				nal = []byte{0x65, 0x88, byte(v), 2, 3, 4}
			}
			out = append(out, &streamcore.Unit{Video: true, DTS: vt, Key: nal[0] == 0x65, NALUs: [][]byte{nal}})
			v++
			continue
		}
		out = append(out, &streamcore.Unit{DTS: at, AAC: []byte{0x21, 0x10, 0x04, byte(a)}})
		a++
	}
}

// startedPackager is a packager in dir that has packaged units.
func startedPackager(t testing.TB, dir string, units []*streamcore.Unit) (*hls.Packager, streamcore.Tracks) {
	t.Helper()
	p, err := hls.Open(dir, hls.Options{Logger: slog.New(slog.DiscardHandler), Now: func() time.Time { return time.Unix(1_700_000_000, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	avc, err := flv.ParseAVCConfig(testAVC)
	if err != nil {
		t.Fatal(err)
	}
	tr := streamcore.Tracks{Video: &avc, Audio: testASC}
	if err := p.Tracks(tr); err != nil {
		t.Fatal(err)
	}
	for _, u := range units {
		if err := p.Unit(u); err != nil {
			t.Fatal(err)
		}
	}
	return p, tr
}

// rungFLV is the units as ffmpeg returns a rung: FLV, timestamps less
// base, the parameter sets in the sequence header only.
func rungFLV(tr streamcore.Tracks, units []*streamcore.Unit, base int64) []byte {
	b := appendFLVHeader(nil, tr)
	for _, u := range units {
		if u.Video {
			b = appendVideoTag(b, u.DTS-base, u)
		} else {
			b = appendAudioTag(b, u.DTS-base, 1, u.AAC)
		}
	}
	return b
}

// A rung read back from ffmpeg's FLV is cut where the source was: its
// keyframes get the sequence header's SPS and PPS (without them it
// would never open), its times are the source's (the FLV's plus the
// base), so segment for segment the rung has the source's number,
// duration and program date time.
func TestDemuxRungFLV(t *testing.T) {
	dir := t.TempDir()
	units := rungTestUnits(1000, 10_000)
	p, tr := startedPackager(t, dir, units)
	base := int64(1000 - flvBase)
	proc := &ffmpegProc{base: base, log: slog.New(slog.DiscardHandler)}
	r := p.Rung(240, testASC)
	// The rung starts late, as a transcoder does: at the second keyframe.
	from := slices.IndexFunc(units, func(u *streamcore.Unit) bool { return u.Video && u.DTS == 3000 })
	if err := proc.demuxRung(bytes.NewReader(rungFLV(tr, units[from:], base)), r); !errors.Is(err, io.EOF) {
		t.Fatalf("demux: %v", err)
	}
	if err := r.Close(false); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	all, err := hls.ReadIndex(dir)
	if err != nil {
		t.Fatal(err)
	}
	src := map[uint64]hls.Segment{}
	var rung []hls.Segment
	for _, s := range all {
		switch s.Rendition {
		case hls.RenditionAV:
			src[s.Sequence] = s
		case "v240":
			rung = append(rung, s)
		}
	}
	if len(rung) < 3 || rung[0].Sequence != 1 {
		t.Fatalf("rung segments %+v, source's %+v", rung, src)
	}
	for _, s := range rung[:len(rung)-1] { // the last ends where the rung's input did
		if o := src[s.Sequence]; o.Duration != s.Duration || !o.ProgramDateTime.Equal(s.ProgramDateTime) {
			t.Errorf("rung segment %+v, source's %+v", s, o)
		}
	}
}

// An IDR picture without parameter sets gets the configuration's, first;
// one with its own and other pictures are left as they are, their NAL
// units slices of the tag.
func TestRungAccessUnit(t *testing.T) {
	avc, _ := flv.ParseAVCConfig(testAVC)
	pre := func(nals ...[]byte) []byte {
		var b []byte
		for _, n := range nals {
			b = append(b, byte(len(n)>>24), byte(len(n)>>16), byte(len(n)>>8), byte(len(n)))
			b = append(b, n...)
		}
		return b
	}
	sei, idr, p := []byte{0x06, 5}, []byte{0x65, 1}, []byte{0x41, 2}
	au, err := rungAccessUnit(pre(sei, idr), &avc)
	if want := [][]byte{avc.SPS[0], avc.PPS[0], sei, idr}; err != nil || !slices.EqualFunc(au, want, bytes.Equal) {
		t.Errorf("idr: %x %v, want %x", au, err, want)
	}
	own := pre(avc.SPS[0], avc.PPS[0], idr)
	if au, err := rungAccessUnit(own, &avc); err != nil || len(au) != 3 || &au[2][0] != &own[len(own)-2] {
		t.Errorf("idr with its own: %x %v", au, err)
	}
	if au, err := rungAccessUnit(pre(p), &avc); err != nil || len(au) != 1 || !bytes.Equal(au[0], p) {
		t.Errorf("picture: %x %v", au, err)
	}
	if _, err := rungAccessUnit([]byte{0, 0, 0, 9, 0x41}, &avc); err == nil {
		t.Error("a NAL unit past the tag's end was read")
	}
}

// ffmpeg's FLV timestamps wrap at 2^31 ms; the clock goes on, and a
// timestamp from just before a wrap read after it stays before.
func TestFLVClock(t *testing.T) {
	var c flvClock
	for _, tc := range []struct {
		ts   uint32
		want int64
	}{{10_000, 10_000}, {9_977, 9_977}, {1 << 30, 1 << 30}, {flvWrap - 10, flvWrap - 10}, {5, flvWrap + 5},
		{flvWrap - 3, flvWrap - 3}, {40, flvWrap + 40}, {flvWrap + 50, flvWrap + 50}} { // the 32nd bit ignored
		if got := c.at(tc.ts); got != tc.want {
			t.Errorf("at(%d) = %d, want %d", tc.ts, got, tc.want)
		}
	}
}

// Bad bytes from the pipe end the rung's reading or are skipped: never a
// panic, and the video waiting for audio stays bounded. Fuzz it with
// -fuzzminimizetime 0: most inputs reach new code of the packager, and
// minimising each takes a minute.
func FuzzDemuxRung(f *testing.F) {
	units := rungTestUnits(1000, 2100)
	avc, _ := flv.ParseAVCConfig(testAVC)
	tr := streamcore.Tracks{Video: &avc, Audio: testASC}
	f.Add(rungFLV(tr, units, 0))
	f.Add(rungFLV(streamcore.Tracks{Video: &avc}, slices.DeleteFunc(slices.Clone(units), func(u *streamcore.Unit) bool { return !u.Video }), 0))
	// One started packager, its boundaries at the seeds' keyframes; a
	// rung of its own for each input.
	p, _ := startedPackager(f, f.TempDir(), units)
	defer p.Close()
	proc := &ffmpegProc{base: 0, log: slog.New(slog.DiscardHandler)}
	f.Fuzz(func(t *testing.T, b []byte) {
		r := p.Rung(240, testASC)
		proc.demuxRung(bytes.NewReader(b), r)
		r.Close(true)
	})
}

// The interleaver lets go of video past maxPendingBytes whatever the
// timestamps say (all the same here, no audio ever).
func TestInterleaverBound(t *testing.T) {
	p, _ := startedPackager(t, t.TempDir(), rungTestUnits(1000, 100)[:1])
	r := p.Rung(240, testASC)
	m := rungInterleaver{audio: true}
	big := make([]byte, 1<<20)
	big[0] = 0x41
	for range 50 {
		if err := m.video(r, 90_000, 90_000, [][]byte{big}); err != nil {
			t.Fatal(err)
		}
		if m.bytes > maxPendingBytes || len(m.pending) > maxPendingBytes>>20 {
			t.Fatalf("%d bytes in %d frames pending", m.bytes, len(m.pending))
		}
	}
	p.Close()
}
