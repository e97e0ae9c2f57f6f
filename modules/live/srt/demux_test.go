package srt

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/bluenviron/mediacommon/v2/pkg/codecs/mpeg4audio"
	"github.com/bluenviron/mediacommon/v2/pkg/formats/mpegts"

	"github.com/onair/onair/modules/live/flv"
	"github.com/onair/onair/modules/live/streamcore"
)

var (
	testSPS = []byte{0x67, 0x64, 0x00, 0x1f, 0xac, 0xd9, 0x40, 0x50, 0x05, 0xbb, 0x01, 0x10}
	testPPS = []byte{0x68, 0xeb, 0xe3, 0xcb, 0x22, 0xc0}
)

// tsStream writes an MPEG-TS of frames video pictures at 30 fps (a
// keyframe with SPS and PPS every 30) and AAC at 48 kHz over the same
// time, its timestamps starting at start (90 kHz).
func tsStream(t testing.TB, frames int, start int64, codecs ...mpegts.Codec) []byte {
	t.Helper()
	if len(codecs) == 0 {
		codecs = []mpegts.Codec{&mpegts.CodecH264{}, &mpegts.CodecMPEG4Audio{Config: mpeg4audio.AudioSpecificConfig{
			Type: mpeg4audio.ObjectTypeAACLC, SampleRate: 48000, ChannelCount: 2}}}
	}
	var buf bytes.Buffer
	w := &mpegts.Writer{W: &buf}
	for i, c := range codecs {
		w.Tracks = append(w.Tracks, &mpegts.Track{PID: uint16(256 + i), Codec: c})
	}
	if err := w.Initialize(); err != nil {
		t.Fatal(err)
	}
	audioNext := start
	for f := range frames {
		dts := start + int64(f)*3000
		au := [][]byte{{0x41, 0x9a, byte(f), 1, 2, 3}}
		if f%30 == 0 {
			au = [][]byte{testSPS, testPPS, {0x65, 0x88, byte(f), 4, 5, 6}}
		}
		for i, tr := range w.Tracks {
			switch tr.Codec.(type) {
			case *mpegts.CodecH264:
				if err := w.WriteH264(w.Tracks[i], dts+3000, dts, au); err != nil {
					t.Fatal(err)
				}
			case *mpegts.CodecMPEG4Audio:
				for audioNext < dts+3000 {
					if err := w.WriteMPEG4Audio(w.Tracks[i], audioNext, [][]byte{{0x21, 0x10, byte(f), 7}}); err != nil {
						t.Fatal(err)
					}
					audioNext += 1024 * 90000 / 48000
				}
			case *mpegts.CodecH265:
				if err := w.WriteH265(w.Tracks[i], dts, dts, [][]byte{{0x40, 0x01, 1}, {0x26, 0x01, 2}}); err != nil {
					t.Fatal(err)
				}
			case *mpegts.CodecMPEG1Audio:
				if err := w.WriteMPEG1Audio(w.Tracks[i], dts, [][]byte{mp3Frame}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	return buf.Bytes()
}

// mp3Frame is one MPEG-1 layer III frame header (128 kb/s, 44.1 kHz) and
// its body.
var mp3Frame = append([]byte{0xff, 0xfb, 0x90, 0x64}, make([]byte, 413)...)

// demuxAll demuxes b to its end.
func demuxAll(t testing.TB, b []byte) ([]streamcore.Unit, *Demuxer) {
	t.Helper()
	var units []streamcore.Unit
	at := time.Unix(1000, 0)
	d, err := NewDemuxer(bytes.NewReader(b), func(u streamcore.Unit) error {
		units = append(units, u)
		return nil
	}, func() time.Time { return at })
	if err != nil {
		t.Fatal(err)
	}
	for {
		if err := d.Read(); err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			return units, d
		}
	}
}

func TestDemuxH264AndAAC(t *testing.T) {
	// Starts 2 s before the 33-bit clock wraps: the timeline goes on.
	units, d := demuxAll(t, tsStream(t, 120, 1<<33-180000))
	if v, a := d.Tracks(); !v || !a {
		t.Fatalf("tracks video %v audio %v", v, a)
	}
	var avc, asc, pictures, keys, frames int
	var lastVideo, lastAudio int64 = -1, -1
	for _, u := range units {
		switch {
		case u.AVC != nil:
			avc++
			if string(u.AVC.SPS[0]) != string(testSPS) || string(u.AVC.PPS[0]) != string(testPPS) || u.AVC.Profile != 0x64 || u.AVC.Level != 0x1f {
				t.Fatalf("avc config %+v", u.AVC)
			}
		case u.ASC != nil:
			asc++
			if u.ASC.SampleRate != 48000 || u.ASC.Channels != 2 || u.ASC.ObjectType != 2 {
				t.Fatalf("aac config %+v", u.ASC)
			}
		case u.Video:
			if u.DTS <= lastVideo || u.CTS < 33 || u.CTS > 34 || len(u.NALUs) == 0 {
				t.Fatalf("picture %d: dts %d after %d, cts %d, %d nal units", pictures, u.DTS, lastVideo, u.CTS, len(u.NALUs))
			}
			if want := int64(pictures) * 100 / 3; u.DTS != want {
				t.Fatalf("picture %d at %d ms, want %d", pictures, u.DTS, want)
			}
			lastVideo = u.DTS
			if u.Key {
				keys++
				if len(u.NALUs) != 3 || flv.NALType(u.NALUs[2]) != 5 {
					t.Fatalf("keyframe nal units %x", u.NALUs)
				}
			}
			pictures++
		default:
			if u.DTS < lastAudio || len(u.AAC) != 4 {
				t.Fatalf("aac frame at %d after %d, %d bytes", u.DTS, lastAudio, len(u.AAC))
			}
			lastAudio = u.DTS
			frames++
		}
	}
	// The writer's last PES of each track stays in the demuxer until more
	// data comes: at most one of each is missing.
	if avc != 1 || asc != 1 || pictures < 119 || keys != 4 || frames < 185 {
		t.Fatalf("%d avc configs, %d aac configs, %d pictures (%d keys), %d aac frames", avc, asc, pictures, keys, frames)
	}
	if lastVideo < 3900 || lastAudio < 3900 {
		t.Fatalf("last video %d ms, audio %d ms: the clock did not unwrap", lastVideo, lastAudio)
	}
}

func TestDemuxAudioOnly(t *testing.T) {
	units, d := demuxAll(t, tsStream(t, 60, 0, &mpegts.CodecMPEG4Audio{Config: mpeg4audio.AudioSpecificConfig{
		Type: mpeg4audio.ObjectTypeAACLC, SampleRate: 48000, ChannelCount: 1}}))
	if v, a := d.Tracks(); v || !a {
		t.Fatalf("tracks video %v audio %v", v, a)
	}
	if len(units) < 90 || units[0].ASC == nil || units[0].ASC.Channels != 1 {
		t.Fatalf("%d units, first %+v", len(units), units[0])
	}
}

func TestDemuxRefusesCodecs(t *testing.T) {
	for _, c := range []struct {
		name   string
		codecs []mpegts.Codec
		want   string
	}{
		{"hevc", []mpegts.Codec{&mpegts.CodecH265{}}, "hvc1"},
		{"mp3", []mpegts.Codec{&mpegts.CodecMPEG1Audio{}}, ".mp3"},
		{"h264 and mp3", []mpegts.Codec{&mpegts.CodecH264{}, &mpegts.CodecMPEG1Audio{}}, ".mp3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewDemuxer(bytes.NewReader(tsStream(t, 40, 0, c.codecs...)), func(streamcore.Unit) error { return nil }, nil)
			var ce streamcore.CodecError
			if !errors.As(err, &ce) || ce.Codec.FourCC != c.want {
				t.Fatalf("err %v, want a codec error for %s", err, c.want)
			}
		})
	}
}

// A caller that sends anything but a program map is cut off after
// MaxProbeBytes, not buffered without end.
func TestDemuxProbeBounded(t *testing.T) {
	null := make([]byte, 188)
	null[0], null[1], null[2], null[3] = 0x47, 0x1f, 0xff, 0x10
	r := &repeat{b: null}
	_, err := NewDemuxer(r, func(streamcore.Unit) error { return nil }, nil)
	if !errors.Is(err, ErrProbeTooLong) {
		t.Fatalf("err %v", err)
	}
	if r.n > MaxProbeBytes+188 {
		t.Fatalf("read %d bytes", r.n)
	}
}

type repeat struct {
	b []byte
	n int
}

func (r *repeat) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		n += copy(p[n:], r.b[(r.n+n)%len(r.b):])
	}
	r.n += n
	return n, nil
}

// An error from the core (a refusal) ends the demuxing with it.
func TestDemuxEmitError(t *testing.T) {
	stop := errors.New("stop")
	d, err := NewDemuxer(bytes.NewReader(tsStream(t, 30, 0)), func(streamcore.Unit) error { return stop }, nil)
	if err != nil {
		t.Fatal(err)
	}
	for {
		err := d.Read()
		if errors.Is(err, stop) {
			return
		}
		if err != nil {
			t.Fatalf("err %v", err)
		}
	}
}

// FuzzDemux: any bytes give units a reader can take, or an error; never
// a panic nor an endless read.
func FuzzDemux(f *testing.F) {
	// Small seeds: the mutator is slow on large inputs.
	f.Add(tsStream(f, 2, 0))
	f.Add(tsStream(f, 2, 1<<33-3000))
	f.Add(tsStream(f, 2, 0, &mpegts.CodecH264{}))
	b := tsStream(f, 3, 0)
	for i := 400; i < len(b); i += 997 {
		b[i] ^= 0x5a
	}
	f.Add(b)
	f.Add(bigPictures(f, 2)) // pictures over many transport packets
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := NewDemuxer(bytes.NewReader(b), func(u streamcore.Unit) error {
			switch {
			case u.AVC != nil:
				if len(u.AVC.SPS) != 1 || len(u.AVC.SPS[0]) < 4 || len(u.AVC.PPS) != 1 {
					t.Fatalf("avc config %+v", u.AVC)
				}
			case u.ASC != nil:
				if _, err := u.ASC.AppendADTS(nil, 0); err != nil {
					t.Fatalf("aac config %+v: %v", u.ASC, err)
				}
			case u.Video:
				for _, n := range u.NALUs {
					if len(n) == 0 {
						t.Fatal("empty nal unit")
					}
				}
			default:
				if len(u.AAC) == 0 {
					t.Fatal("empty aac frame")
				}
			}
			return nil
		}, nil)
		if err != nil {
			return
		}
		for range len(b) + 1 {
			if err := d.Read(); err != nil {
				return
			}
		}
		t.Fatal("the demuxer reads without end")
	})
}
