package streamcore

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/onair/onair/modules/live/amf0"
)

// Tags of the seeds: an AVC sequence header (SPS, PPS), an IDR frame of
// two NAL units, an AAC sequence header and frame.
var (
	avcHeader = []byte{0x17, 0, 0, 0, 0, 0x01, 0x42, 0xC0, 0x0D, 0xFF, 0xE1, 0x00, 0x04, 0x67, 0x42, 0xC0, 0x0D,
		0x01, 0x00, 0x02, 0x68, 0xCE}
	avcKey    = []byte{0x17, 1, 0, 0, 0, 0, 0, 0, 2, 0x65, 0x88, 0, 0, 0, 1, 0x06}
	avcInter  = []byte{0x27, 1, 0, 0, 0, 0, 0, 0, 2, 0x41, 0x9A}
	aacHeader = []byte{0xAF, 0, 0x12, 0x10}
	aacFrame  = []byte{0xAF, 1, 0x21, 0x10, 0x05}
)

// FuzzFLV parses hostile tag bodies into units: it must never panic, the
// units must not alias the body (the RTMP server reuses it), every tag
// counts one parse, a refusal is a CodecError naming an unsupported codec,
// and a configuration carries what the packager needs.
func FuzzFLV(f *testing.F) {
	f.Add(true, avcHeader)
	f.Add(true, avcKey)
	f.Add(false, aacHeader)
	f.Add(false, aacFrame)
	f.Add(true, []byte{0x1C, 0, 0, 0, 0})                  // HEVC, legacy id
	f.Add(true, []byte{0x90, 'h', 'v', 'c', '1', 0, 1})    // enhanced HEVC
	f.Add(true, []byte{0x91, 'a', 'v', 'c', '1', 0, 0, 0}) // enhanced AVC frame
	f.Add(false, []byte{0x2F, 0xFF, 0xFB})                 // MP3
	f.Add(true, []byte{0x17, 1, 0, 0, 0, 0, 0, 9, 0x65})   // NAL length past the end
	f.Fuzz(func(t *testing.T, video bool, body []byte) {
		var d FLV
		// A configuration first, so frames are split into NAL units.
		d.Video(0, avcHeader, time.Time{})
		d.Audio(0, aacHeader, time.Time{})
		in := bytes.Clone(body)
		var (
			u   Unit
			ok  bool
			err error
		)
		if video {
			u, ok, err = d.Video(40, in, time.Time{})
		} else {
			u, ok, err = d.Audio(40, in, time.Time{})
		}
		if d.Parsed() != 3 {
			t.Fatalf("%d parses for 3 tags", d.Parsed())
		}
		var ce CodecError
		if errors.As(err, &ce) && (ce.Codec.Supported() || ce.Codec.Audio == video) {
			t.Fatalf("refused %v as %s", ce.Codec, map[bool]string{true: "video", false: "audio"}[video])
		}
		if err != nil || !ok {
			return
		}
		if u.Video != video || u.Size != len(body) {
			t.Fatalf("unit %+v of a %d-byte tag", u, len(body))
		}
		if u.AVC != nil && (len(u.AVC.SPS) == 0 || len(u.AVC.PPS) == 0) {
			t.Fatal("an AVC configuration without SPS or PPS")
		}
		if u.ASC != nil {
			if _, err := u.ASC.AppendADTS(nil, 0); err != nil {
				t.Fatalf("an AAC configuration ADTS cannot carry: %v", err)
			}
		}
		before := cloneUnit(u)
		for i := range in {
			in[i] ^= 0xFF
		}
		if !sameUnit(before, u) {
			t.Fatal("the unit aliases the tag body")
		}
	})
}

func cloneUnit(u Unit) Unit {
	c := u
	c.NALUs = cloneAll(u.NALUs)
	c.AAC = bytes.Clone(u.AAC)
	if u.AVC != nil {
		cfg := *u.AVC
		cfg.SPS, cfg.PPS = cloneAll(cfg.SPS), cloneAll(cfg.PPS)
		c.AVC = &cfg
	}
	return c
}

func sameUnit(a, b Unit) bool {
	if len(a.NALUs) != len(b.NALUs) || !bytes.Equal(a.AAC, b.AAC) || (a.AVC == nil) != (b.AVC == nil) {
		return false
	}
	for i := range a.NALUs {
		if !bytes.Equal(a.NALUs[i], b.NALUs[i]) {
			return false
		}
	}
	if a.AVC != nil {
		for i := range a.AVC.SPS {
			if !bytes.Equal(a.AVC.SPS[i], b.AVC.SPS[i]) {
				return false
			}
		}
	}
	return true
}

// FuzzStream drives a whole stream with hostile input: an AMF0 onMetaData,
// then tags whose type, timestamp step and body come from the fuzzer,
// parsed and written as the RTMP source does. It must never panic, refuse
// only with a CodecError or ErrNoAudio (never a video codec for an
// audio-only stream), and its reader must get the tracks before any unit,
// never a unit of a track without configuration, nor video when audio
// only.
func FuzzStream(f *testing.F) {
	meta, _ := amf0.Encode(nil, amf0.ECMAArray{"videocodecid": 7.0, "audiocodecid": 10.0})
	hevc, _ := amf0.Encode(nil, amf0.ECMAArray{"videocodecid": float64(0x68766331)})
	tagsOf := func(tags ...[]byte) []byte {
		var out []byte
		for i, t := range tags {
			out = append(append(out, byte(i%2), byte(len(t))), t...)
		}
		return out
	}
	f.Add(meta, tagsOf(avcHeader, aacHeader, avcKey, aacFrame, avcInter, aacFrame), false)
	f.Add(meta, tagsOf(avcHeader, aacHeader, avcKey, aacFrame), true)
	f.Add(hevc, []byte{0, 2, 0xAF, 1}, false)
	f.Add([]byte{}, []byte{1, 5, 0x1C, 0, 0, 0, 0, 3, 2, 0xAF, 1}, false)
	f.Add([]byte{}, []byte{1, 9, 0x97, 1, 0xAA, 0xBB, 1, 'a', 'v', 'c', '1'}, true)
	f.Fuzz(func(t *testing.T, metaBytes, tags []byte, audioOnly bool) {
		r := &recorder{}
		s := New(time.Now(), Options{TrackWait: time.Second, AudioOnly: audioOnly})
		s.AddReader(r, ReaderOptions{Name: "check", Essential: true, Queue: 1 << 16})
		defer func() {
			s.Close()
			if r.err != nil {
				t.Fatal(r.err)
			}
		}()
		vals, _ := amf0.DecodeAll(metaBytes)
		for _, v := range vals {
			if m, ok := v.(amf0.ECMAArray); ok {
				if err := s.Metadata(m); err != nil {
					checkRefusal(t, err, audioOnly)
					return
				}
			}
		}
		var d FLV
		var ts int64
		for len(tags) >= 2 {
			flags, n := tags[0], int(tags[1])
			tags = tags[2:]
			body := tags[:min(n, len(tags))]
			tags = tags[len(body):]
			ts += 20
			if flags&2 != 0 {
				ts += 700
			}
			video := flags&1 != 0
			var (
				u   Unit
				ok  bool
				err error
			)
			switch {
			case video && s.AudioOnly():
				err = s.IgnoreVideo(ts, len(body), time.Now())
			case video:
				u, ok, err = d.Video(ts, body, time.Now())
			default:
				u, ok, err = d.Audio(ts, body, time.Now())
			}
			if err == nil && ok {
				err = s.Write(u)
			}
			var ce CodecError
			if errors.As(err, &ce) || errors.Is(err, ErrNoAudio) {
				checkRefusal(t, err, audioOnly)
				return
			}
			if err != nil {
				return // malformed
			}
		}
		s.Flush()
		if audioOnly && r.tracks.Video != nil {
			t.Fatal("an audio-only stream decided a video track")
		}
	})
}

func checkRefusal(t *testing.T, err error, audioOnly bool) {
	var ce CodecError
	switch {
	case errors.As(err, &ce):
		if ce.Codec.Supported() {
			t.Fatalf("refused a supported codec: %v", err)
		}
		if audioOnly && !ce.Codec.Audio {
			t.Fatalf("an audio-only stream refused a video codec: %v", err)
		}
	case errors.Is(err, ErrNoAudio):
		if !audioOnly {
			t.Fatal("ErrNoAudio for a stream with video")
		}
	default:
		t.Fatalf("refusal %v", err)
	}
}

// recorder is a reader that checks the order of what it gets.
type recorder struct {
	tracks Tracks
	seen   bool // tracks came
	units  []*Unit
	err    error
	closed bool
}

func (r *recorder) Tracks(t Tracks) error {
	if t.Video == nil && t.Audio == nil {
		r.err = errors.New("tracks without a track")
	}
	r.tracks, r.seen = t, true
	return nil
}

func (r *recorder) Unit(u *Unit) error {
	switch {
	case !r.seen:
		r.err = errors.New("a unit before the tracks")
	case u.Video && r.tracks.Video == nil, !u.Video && r.tracks.Audio == nil:
		r.err = errors.New("a unit of a track without configuration")
	case u.config() || !u.media():
		r.err = errors.New("a reader got a configuration or an empty unit")
	}
	c := *u // valid during the call only
	r.units = append(r.units, &c)
	return nil
}

func (r *recorder) Close() { r.closed = true }
