package flv

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/onair/onair/modules/live/amf0"
)

func TestVideoCodec(t *testing.T) {
	tests := []struct {
		name      string
		body      []byte
		want      string
		supported bool
		command   bool
	}{
		{"legacy avc", []byte{0x17, 0, 0, 0, 0}, "H.264 (codec id 7)", true, false},
		{"legacy hevc", []byte{0x1C, 0, 0, 0, 0}, "HEVC (codec id 12)", false, false},
		{"legacy av1", []byte{0x1D, 0}, "AV1 (codec id 13)", false, false},
		{"sorenson", []byte{0x22, 1, 2}, "Sorenson H.263 (codec id 2)", false, false},
		{"unknown legacy id", []byte{0x19}, "video codec id 9", false, false},
		{"enhanced avc", []byte{0x90, 'a', 'v', 'c', '1', 1}, "H.264 (avc1)", true, false},
		{"enhanced hevc start", []byte{0x90, 'h', 'v', 'c', '1', 1, 2}, "HEVC (hvc1)", false, false},
		{"enhanced hevc frames", []byte{0x91, 'h', 'v', 'c', '1', 0, 0, 0}, "HEVC (hvc1)", false, false},
		{"enhanced av1", []byte{0x90, 'a', 'v', '0', '1'}, "AV1 (av01)", false, false},
		{"enhanced vp9", []byte{0xA1, 'v', 'p', '0', '9'}, "VP9 (vp09)", false, false},
		{"unknown fourcc escaped", []byte{0x90, 'x', '\n', 0, 0xFF}, `video codec "x\n\x00\xff"`, false, false},
		{"command frame", []byte{0xD0, 0}, "", false, true},
		{"command frame metadata", []byte{0xD4, 'h', 'v', 'c', '1'}, "HEVC (hvc1)", false, false},
		{"modex", []byte{0x97, 1, 0xAA, 0xBB, 0x01, 'a', 'v', 'c', '1'}, "H.264 (avc1) in ModEx packets", false, false},
		{"modex long", append(append([]byte{0x97, 0xFF, 0x00, 0x01}, make([]byte, 2)...), 0x00, 'a', 'v', '0', '1'), "AV1 (av01) in ModEx packets", false, false},
		{"multitrack one codec", []byte{0x96, 0x10, 'a', 'v', 'c', '1'}, "H.264 (avc1) in multitrack packets", false, false},
		{"multitrack many codecs", []byte{0x96, 0x21}, "video of several codecs in multitrack packets", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, ok, err := VideoCodec(tt.body)
			if err != nil {
				t.Fatal(err)
			}
			if ok == tt.command {
				t.Fatalf("ok %v for a command frame %v", ok, tt.command)
			}
			if tt.command {
				return
			}
			if c.String() != tt.want || c.Supported() != tt.supported {
				t.Errorf("%v: %q supported %v, want %q %v", tt.body, c.String(), c.Supported(), tt.want, tt.supported)
			}
		})
	}
	for _, short := range [][]byte{nil, {0x90, 'h', 'v'}, {0x97}, {0x97, 3, 1}, {0x97, 0xFF, 0}, {0x96}, {0x96, 0x10, 'a'}} {
		if _, _, err := VideoCodec(short); err == nil {
			t.Errorf("%v: no error", short)
		}
	}
}

func TestAudioCodec(t *testing.T) {
	tests := []struct {
		body      []byte
		want      string
		supported bool
	}{
		{[]byte{0xAF, 0}, "AAC (sound format 10)", true},
		{[]byte{0x2F}, "MP3 (sound format 2)", false},
		{[]byte{0xEF}, "MP3 (sound format 14)", false},
		{[]byte{0x7E}, "G.711 A-law (sound format 7)", false},
		{[]byte{0x90, 'm', 'p', '4', 'a'}, "AAC (mp4a)", true},
		{[]byte{0x91, 'O', 'p', 'u', 's'}, "Opus (Opus)", false},
		{[]byte{0x91, '.', 'm', 'p', '3'}, "MP3 (.mp3)", false},
		{[]byte{0x95, 0x00, 'm', 'p', '4', 'a'}, "AAC (mp4a) in multitrack packets", false},
		{[]byte{0x97, 0, 9, 0x01, 'f', 'L', 'a', 'C'}, "FLAC (fLaC) in ModEx packets", false},
	}
	for _, tt := range tests {
		c, err := AudioCodec(tt.body)
		if err != nil {
			t.Fatal(err)
		}
		if c.String() != tt.want || c.Supported() != tt.supported || !c.Audio {
			t.Errorf("%v: %q supported %v, want %q %v", tt.body, c.String(), c.Supported(), tt.want, tt.supported)
		}
	}
}

func TestMetadataCodec(t *testing.T) {
	tests := []struct {
		name           string
		meta           map[string]any
		audio          bool
		present, known bool
		want           string
	}{
		{"absent", map[string]any{"audiocodecid": 10.0}, false, false, false, ""},
		{"legacy avc", map[string]any{"videocodecid": 7.0}, false, true, true, "H.264 (codec id 7)"},
		{"legacy hevc", map[string]any{"videocodecid": 12.0}, false, true, true, "HEVC (codec id 12)"},
		{"fourcc number", map[string]any{"videocodecid": float64(0x68766331)}, false, true, true, "HEVC (hvc1)"},
		{"fourcc string", map[string]any{"videocodecid": "av01"}, false, true, true, "AV1 (av01)"},
		{"aac", map[string]any{"audiocodecid": 10.0}, true, true, true, "AAC (sound format 10)"},
		{"mp3", map[string]any{"audiocodecid": 2.0}, true, true, true, "MP3 (sound format 2)"},
		{"opus fourcc", map[string]any{"audiocodecid": float64(0x4F707573)}, true, true, true, "Opus (Opus)"},
		{"zero", map[string]any{"audiocodecid": 0.0}, true, true, false, ""},
		{"fraction", map[string]any{"videocodecid": 7.5}, false, true, false, ""},
		{"huge", map[string]any{"videocodecid": 1e20}, false, true, false, ""},
		{"negative", map[string]any{"videocodecid": -7.0}, false, true, false, ""},
		{"name", map[string]any{"videocodecid": "H264Avc"}, false, true, false, ""},
		{"unprintable fourcc", map[string]any{"videocodecid": float64(0x0100FF01)}, false, true, false, ""},
		{"bool", map[string]any{"videocodecid": true}, false, true, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, present, known := MetadataCodec(tt.meta, tt.audio)
			if present != tt.present || known != tt.known {
				t.Fatalf("present %v known %v", present, known)
			}
			if known && c.String() != tt.want {
				t.Errorf("codec %q, want %q", c.String(), tt.want)
			}
		})
	}
}

// checkCodec holds for every codec read from any input.
func checkCodec(t *testing.T, c Codec) {
	name := c.String()
	if name == "" || !utf8.ValidString(name) {
		t.Fatalf("bad name %q", name)
	}
	if c.Supported() && (c.Feature != "" || !strings.Contains(name, "H.264") && !strings.Contains(name, "AAC")) {
		t.Fatalf("%s claimed supported", name)
	}
}

func FuzzVideoCodec(f *testing.F) {
	f.Add([]byte{0x17, 0, 0, 0, 0})
	f.Add([]byte{0x1C, 0, 0, 0, 0})
	f.Add([]byte{0x90, 'h', 'v', 'c', '1', 1})
	f.Add([]byte{0x97, 1, 0xAA, 0xBB, 0x01, 'a', 'v', 'c', '1'})
	f.Add([]byte{0x97, 0xFF, 0x00, 0x01, 0, 0, 0x06, 0x10, 'a', 'v', '0', '1'})
	f.Add([]byte{0x96, 0x21})
	f.Add([]byte{0xD0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, ok, err := VideoCodec(b)
		if err != nil || !ok {
			return
		}
		checkCodec(t, c)
		if c.Audio {
			t.Fatal("video codec marked audio")
		}
		// What the packager parses as H.264 is what admission accepts.
		if v, err := ParseVideoTag(b); err == nil && v.CodecID == CodecAVC && c.Feature == "" && !c.Supported() {
			t.Fatalf("avc tag %v refused as %s", b, c)
		}
	})
}

func FuzzAudioCodec(f *testing.F) {
	f.Add([]byte{0xAF, 0, 0x12, 0x10})
	f.Add([]byte{0x2F, 0xFF})
	f.Add([]byte{0x90, 'm', 'p', '4', 'a', 0x12, 0x10})
	f.Add([]byte{0x95, 0x00, 'O', 'p', 'u', 's'})
	f.Add([]byte{0x97, 0, 9, 0x01, 'f', 'L', 'a', 'C'})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := AudioCodec(b)
		if err != nil {
			return
		}
		checkCodec(t, c)
		if !c.Audio {
			t.Fatal("audio codec not marked audio")
		}
	})
}

// FuzzMetadataCodec feeds AMF0-encoded onMetaData, as it comes off the
// wire, to the codec announcement parser.
func FuzzMetadataCodec(f *testing.F) {
	for _, meta := range []any{
		amf0.ECMAArray{"videocodecid": 7.0, "audiocodecid": 10.0},
		amf0.ECMAArray{"videocodecid": float64(0x68766331), "audiocodecid": "mp4a"},
		map[string]any{"videocodecid": "H264Avc", "audiocodecid": 2.0},
		amf0.ECMAArray{"videocodecid": 1e300, "audiocodecid": -1.0},
	} {
		b, err := amf0.Encode(nil, "onMetaData", meta)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		vals, _ := amf0.DecodeAll(b)
		for _, v := range vals {
			var meta map[string]any
			switch v := v.(type) {
			case map[string]any:
				meta = v
			case amf0.ECMAArray:
				meta = v
			default:
				continue
			}
			for _, audio := range []bool{false, true} {
				c, present, known := MetadataCodec(meta, audio)
				if known && !present {
					t.Fatal("known but not present")
				}
				if known {
					checkCodec(t, c)
				}
			}
		}
	})
}
