package flv

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"
	"unsafe"
)

// avcConfig is a real record from x264 (baseline, 320x240): one SPS, one PPS,
// 4-byte NAL lengths.
var avcConfig = []byte{
	0x01, 0x42, 0xC0, 0x0D, 0xFF, 0xE1, 0x00, 0x09,
	0x67, 0x42, 0xC0, 0x0D, 0xD9, 0x41, 0x41, 0xFA, 0x10,
	0x01, 0x00, 0x04, 0x68, 0xCB, 0x83, 0xCB,
}

func TestParseVideoTag(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want VideoTag
		err  error
	}{
		{"sequence header", append([]byte{0x17, 0, 0, 0, 0}, avcConfig...),
			VideoTag{FrameType: 1, CodecID: 7, PacketType: 0, Data: avcConfig}, nil},
		{"inter frame with positive cts", []byte{0x27, 1, 0, 0, 80, 0, 0, 0, 1, 0x41},
			VideoTag{FrameType: 2, CodecID: 7, PacketType: 1, CompositionTime: 80, Data: []byte{0, 0, 0, 1, 0x41}}, nil},
		{"negative cts", []byte{0x27, 1, 0xFF, 0xFF, 0xD8},
			VideoTag{FrameType: 2, CodecID: 7, PacketType: 1, CompositionTime: -40, Data: []byte{}}, nil},
		{"end of sequence", []byte{0x17, 2, 0, 0, 0},
			VideoTag{FrameType: 1, CodecID: 7, PacketType: 2, Data: []byte{}}, nil},
		{"other codec", []byte{0x12, 9, 9},
			VideoTag{FrameType: 1, CodecID: 2, Data: []byte{9, 9}}, nil},
		{"enhanced avc1 coded frames", []byte{0x91, 'a', 'v', 'c', '1', 0, 0, 40, 7},
			VideoTag{FrameType: 1, CodecID: 7, FourCC: "avc1", PacketType: 1, CompositionTime: 40, Data: []byte{7}}, nil},
		{"enhanced avc1 frames without cts", []byte{0xA3, 'a', 'v', 'c', '1', 7},
			VideoTag{FrameType: 2, CodecID: 7, FourCC: "avc1", PacketType: 1, Data: []byte{7}}, nil},
		{"enhanced hevc", []byte{0x90, 'h', 'v', 'c', '1', 1},
			VideoTag{FrameType: 1, FourCC: "hvc1", PacketType: 16, Data: []byte{1}}, nil},
		{"empty", nil, VideoTag{}, ErrShort},
		{"short avc", []byte{0x17, 1, 0}, VideoTag{}, ErrShort},
		{"short enhanced", []byte{0x90, 'h'}, VideoTag{}, ErrShort},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseVideoTag(tt.in)
			if !errors.Is(err, tt.err) {
				t.Fatalf("error %v, want %v", err, tt.err)
			}
			if err == nil && !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseAVCConfig(t *testing.T) {
	c, err := ParseAVCConfig(avcConfig)
	if err != nil {
		t.Fatal(err)
	}
	if c.Profile != 0x42 || c.Level != 0x0D || c.NALULengthSize != 4 || len(c.SPS) != 1 || len(c.PPS) != 1 {
		t.Fatalf("got %+v", c)
	}
	if NALType(c.SPS[0]) != NALSPS || NALType(c.PPS[0]) != NALPPS {
		t.Fatal("wrong parameter set types")
	}
	bad := []struct {
		name string
		in   []byte
		err  error
	}{
		{"short", avcConfig[:5], ErrShort},
		{"version 0", append([]byte{0}, avcConfig[1:]...), ErrInvalid},
		{"length size 3", append([]byte{1, 0x42, 0, 0x0D, 0xFE}, avcConfig[5:]...), ErrInvalid},
		{"sps runs past end", avcConfig[:12], ErrShort},
		{"missing pps count", avcConfig[:17], ErrShort},
		{"pps runs past end", avcConfig[:len(avcConfig)-1], ErrShort},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := ParseAVCConfig(tt.in); !errors.Is(err, tt.err) {
				t.Fatalf("got %v, want %v", err, tt.err)
			}
		})
	}
}

func TestSplitNALUs(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		size int
		want [][]byte
		err  error
	}{
		{"two units", []byte{0, 0, 0, 2, 0x65, 1, 0, 0, 0, 1, 0x06}, 4, [][]byte{{0x65, 1}, {0x06}}, nil},
		{"two-byte lengths", []byte{0, 1, 9, 0, 2, 8, 8}, 2, [][]byte{{9}, {8, 8}}, nil},
		{"one-byte lengths", []byte{1, 9}, 1, [][]byte{{9}}, nil},
		{"empty unit skipped", []byte{0, 0, 0, 0, 0, 0, 0, 1, 5}, 4, [][]byte{{5}}, nil},
		{"length past end", []byte{0, 0, 0, 9, 1}, 4, nil, ErrShort},
		{"huge length", []byte{0xFF, 0xFF, 0xFF, 0xFF, 1}, 4, nil, ErrShort},
		{"truncated length", []byte{0, 0}, 4, nil, ErrShort},
		{"bad length size", []byte{1}, 3, nil, ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SplitNALUs(tt.in, tt.size)
			if !errors.Is(err, tt.err) {
				t.Fatalf("error %v, want %v", err, tt.err)
			}
			if err == nil && !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParseAudioTag(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want AudioTag
		err  error
	}{
		{"aac config", []byte{0xAF, 0, 0x12, 0x10},
			AudioTag{SoundFormat: 10, SoundRate: 3, SoundSize: 1, SoundType: 1, PacketType: 0, Data: []byte{0x12, 0x10}}, nil},
		{"aac raw", []byte{0xAF, 1, 0x21},
			AudioTag{SoundFormat: 10, SoundRate: 3, SoundSize: 1, SoundType: 1, PacketType: 1, Data: []byte{0x21}}, nil},
		{"mp3", []byte{0x2F, 0xFF},
			AudioTag{SoundFormat: 2, SoundRate: 3, SoundSize: 1, SoundType: 1, Data: []byte{0xFF}}, nil},
		{"enhanced mp4a", []byte{0x91, 'm', 'p', '4', 'a', 0x21},
			AudioTag{SoundFormat: 10, FourCC: "mp4a", PacketType: 1, Data: []byte{0x21}}, nil},
		{"enhanced opus", []byte{0x91, 'O', 'p', 'u', 's', 0x21},
			AudioTag{SoundFormat: 9, FourCC: "Opus", PacketType: 1, Data: []byte{0x21}}, nil},
		{"empty", nil, AudioTag{}, ErrShort},
		{"short aac", []byte{0xAF}, AudioTag{}, ErrShort},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseAudioTag(tt.in)
			if !errors.Is(err, tt.err) {
				t.Fatalf("error %v, want %v", err, tt.err)
			}
			if err == nil && !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseAudioSpecificConfig(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want AudioSpecificConfig
		err  error
	}{
		{"lc 44.1k stereo", []byte{0x12, 0x10}, AudioSpecificConfig{ObjectType: 2, FrequencyIndex: 4, SampleRate: 44100, Channels: 2}, nil},
		{"lc 48k mono", []byte{0x11, 0x88}, AudioSpecificConfig{ObjectType: 2, FrequencyIndex: 3, SampleRate: 48000, Channels: 1}, nil},
		{"he-aac explicit", []byte{0x2B, 0x92, 0x08, 0x00},
			AudioSpecificConfig{ObjectType: 2, ExtensionType: 5, FrequencyIndex: 7, SampleRate: 22050, Channels: 2}, nil},
		{"explicit frequency", []byte{0x17, 0x80, 0x5D, 0xC1, 0x90},
			AudioSpecificConfig{ObjectType: 2, FrequencyIndex: 15, SampleRate: 48003, Channels: 2}, nil},
		{"escaped object type", []byte{0xF8, 0x08, 0x40}, AudioSpecificConfig{ObjectType: 32, FrequencyIndex: 4, SampleRate: 44100, Channels: 2}, nil},
		{"short", []byte{0x12}, AudioSpecificConfig{}, ErrShort},
		{"reserved frequency index", []byte{0x16, 0x90}, AudioSpecificConfig{}, ErrInvalid},
		{"object type zero", []byte{0x02, 0x10}, AudioSpecificConfig{}, ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseAudioSpecificConfig(tt.in)
			if !errors.Is(err, tt.err) {
				t.Fatalf("error %v, want %v", err, tt.err)
			}
			if err == nil && got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestADTS(t *testing.T) {
	lc := AudioSpecificConfig{ObjectType: 2, FrequencyIndex: 4, SampleRate: 44100, Channels: 2}
	tests := []struct {
		name string
		cfg  AudioSpecificConfig
		n    int
		want []byte
		err  error
	}{
		{"lc 44.1k stereo", lc, 100, []byte{0xFF, 0xF1, 0x50, 0x80, 0x0D, 0x7F, 0xFC}, nil},
		{"lc 48k mono", AudioSpecificConfig{ObjectType: 2, FrequencyIndex: 3, SampleRate: 48000, Channels: 1}, 0,
			[]byte{0xFF, 0xF1, 0x4C, 0x40, 0x00, 0xFF, 0xFC}, nil},
		{"largest frame", lc, 8184, []byte{0xFF, 0xF1, 0x50, 0x83, 0xFF, 0xFF, 0xFC}, nil},
		{"too large", lc, 8185, nil, ErrUnsupported},
		{"explicit standard rate", AudioSpecificConfig{ObjectType: 2, FrequencyIndex: 15, SampleRate: 48000, Channels: 2}, 0,
			[]byte{0xFF, 0xF1, 0x4C, 0x80, 0x00, 0xFF, 0xFC}, nil},
		{"explicit odd rate", AudioSpecificConfig{ObjectType: 2, FrequencyIndex: 15, SampleRate: 48003, Channels: 2}, 0, nil, ErrUnsupported},
		{"pce channels", AudioSpecificConfig{ObjectType: 2, FrequencyIndex: 4, SampleRate: 44100}, 0, nil, ErrUnsupported},
		{"object type 5", AudioSpecificConfig{ObjectType: 5, FrequencyIndex: 4, SampleRate: 44100, Channels: 2}, 0, nil, ErrUnsupported},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.cfg.AppendADTS(nil, tt.n)
			if !errors.Is(err, tt.err) {
				t.Fatalf("error %v, want %v", err, tt.err)
			}
			if err == nil && !bytes.Equal(got, tt.want) {
				t.Fatalf("got % x, want % x", got, tt.want)
			}
		})
	}
}

func TestFileReader(t *testing.T) {
	var f bytes.Buffer
	f.Write([]byte{'F', 'L', 'V', 1, 0x05, 0, 0, 0, 9, 0, 0, 0, 0})
	tag := func(typ byte, ts uint32, data []byte) {
		n := len(data)
		f.Write([]byte{typ, byte(n >> 16), byte(n >> 8), byte(n), byte(ts >> 16), byte(ts >> 8), byte(ts), byte(ts >> 24), 0, 0, 0})
		f.Write(data)
		f.Write([]byte{0, 0, 0, byte(11 + n)})
	}
	tag(TagVideo, 0, []byte{0x17, 0, 0, 0, 0})
	tag(TagAudio, 0x01000023, []byte{0xAF, 1, 9})
	r, err := NewReader(&f)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Header.HasAudio || !r.Header.HasVideo || r.Header.Version != 1 {
		t.Fatalf("header %+v", r.Header)
	}
	t1, err := r.ReadTag()
	if err != nil || t1.Type != TagVideo || len(t1.Data) != 5 {
		t.Fatalf("tag 1: %+v %v", t1, err)
	}
	t2, err := r.ReadTag()
	if err != nil || t2.Type != TagAudio || t2.Timestamp != 0x01000023 {
		t.Fatalf("tag 2: %+v %v", t2, err)
	}
	if _, err := r.ReadTag(); err != io.EOF {
		t.Fatalf("got %v, want EOF", err)
	}
	if _, err := NewReader(bytes.NewReader([]byte("GIF89a..."))); !errors.Is(err, ErrInvalid) {
		t.Fatalf("got %v", err)
	}
	// With slabs: the small tags share one, the large one has its own,
	// and none is written over by those after it.
	f.Reset()
	f.Write([]byte{'F', 'L', 'V', 1, 0x05, 0, 0, 0, 9, 0, 0, 0, 0})
	var want [][]byte
	for i, n := range []int{10, 20, 40, 30, 32} {
		d := bytes.Repeat([]byte{byte(i + 1)}, n)
		want = append(want, d)
		tag(TagVideo, uint32(i), d)
	}
	r, _ = NewReader(&f)
	r.SlabSize = 64
	var got []Tag
	for {
		tg, err := r.ReadTag()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, tg)
	}
	if len(got) != len(want) {
		t.Fatalf("%d tags, want %d", len(got), len(want))
	}
	for i, tg := range got {
		if !bytes.Equal(tg.Data, want[i]) || tg.Timestamp != uint32(i) || len(tg.Data) <= 32 && cap(tg.Data) != len(tg.Data) {
			t.Errorf("tag %d: %+v, want % x", i, tg, want[i])
		}
	}
	if uintptr(unsafe.Pointer(&got[1].Data[0]))-uintptr(unsafe.Pointer(&got[0].Data[0])) != 10 {
		t.Error("two small tags in slabs of their own")
	}
	trunc := []byte{'F', 'L', 'V', 1, 5, 0, 0, 0, 9, 0, 0, 0, 0, 9, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0, 0, 0, 0, 1}
	r, _ = NewReader(bytes.NewReader(trunc))
	if _, err := r.ReadTag(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("got %v", err)
	}
	trunc[14], trunc[15], trunc[16] = 0, 0, 20 // in a slab
	r, _ = NewReader(bytes.NewReader(trunc))
	r.SlabSize = 64
	if _, err := r.ReadTag(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("got %v", err)
	}
}
