package flv

import (
	"bytes"
	"testing"
)

func FuzzParseVideoTag(f *testing.F) {
	f.Add(append([]byte{0x17, 0, 0, 0, 0}, avcConfig...))
	f.Add([]byte{0x27, 1, 0xFF, 0xFF, 0xD8, 0, 0, 0, 1, 0x41})
	f.Add([]byte{0x91, 'a', 'v', 'c', '1', 0, 0, 40, 7})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := ParseVideoTag(b)
		if err != nil {
			return
		}
		if len(v.Data) > len(b) {
			t.Fatal("data longer than input")
		}
		if v.CodecID == CodecAVC && v.PacketType == AVCNALU {
			SplitNALUs(v.Data, 4)
		}
	})
}

func FuzzParseAudioTag(f *testing.F) {
	f.Add([]byte{0xAF, 0, 0x12, 0x10})
	f.Add([]byte{0xAF, 1, 0x21, 0x00})
	f.Add([]byte{0x91, 'm', 'p', '4', 'a', 0x21})
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := ParseAudioTag(b)
		if err == nil && len(a.Data) > len(b) {
			t.Fatal("data longer than input")
		}
	})
}

func FuzzParseAVCConfig(f *testing.F) {
	f.Add(avcConfig)
	f.Add([]byte{1, 0x64, 0, 0x1F, 0xFD, 0xE2, 0, 1, 0x67, 0, 1, 0x67, 2, 0, 1, 0x68, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseAVCConfig(b)
		if err != nil {
			return
		}
		total := 0
		for _, ps := range append(c.SPS, c.PPS...) {
			total += len(ps)
		}
		if total > len(b) {
			t.Fatal("parameter sets longer than input")
		}
		// Splitting arbitrary data with the record's length size is safe.
		if nalus, err := SplitNALUs(b, c.NALULengthSize); err == nil {
			for _, n := range nalus {
				if len(n) > len(b) {
					t.Fatal("nal unit longer than input")
				}
			}
		}
	})
}

func FuzzParseAudioSpecificConfig(f *testing.F) {
	f.Add([]byte{0x12, 0x10})
	f.Add([]byte{0x2B, 0x92, 0x08, 0x00})
	f.Add([]byte{0x17, 0x80, 0x5D, 0xC1, 0x90})
	f.Add([]byte{0xF8, 0x08, 0x40})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseAudioSpecificConfig(b)
		if err != nil {
			return
		}
		h, err := c.AppendADTS(nil, 100)
		if err != nil {
			return
		}
		if len(h) != ADTSHeaderSize || h[0] != 0xFF || h[1]&0xF0 != 0xF0 {
			t.Fatalf("bad adts header % x", h)
		}
	})
}

func FuzzReader(f *testing.F) {
	f.Add([]byte{'F', 'L', 'V', 1, 5, 0, 0, 0, 9, 0, 0, 0, 0, 9, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0x17, 0, 0, 0, 12})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := NewReader(bytes.NewReader(b))
		if err != nil {
			return
		}
		// The same tags read into slabs, the earlier ones' data left as
		// it was.
		s, _ := NewReader(bytes.NewReader(b))
		s.SlabSize = 64
		var kept []Tag
		for range 1000 {
			tag, err := r.ReadTag()
			st, serr := s.ReadTag()
			if (err == nil) != (serr == nil) {
				t.Fatalf("slab reader: %v, reader: %v", serr, err)
			}
			if err != nil {
				break
			}
			if len(tag.Data) > len(b) {
				t.Fatal("tag longer than input")
			}
			if st.Type != tag.Type || st.Timestamp != tag.Timestamp || !bytes.Equal(st.Data, tag.Data) {
				t.Fatalf("slab reader's tag %+v, reader's %+v", st, tag)
			}
			kept = append(kept, tag, st)
		}
		for i := 0; i < len(kept); i += 2 {
			if !bytes.Equal(kept[i].Data, kept[i+1].Data) {
				t.Fatalf("tag %d overwritten: % x, was % x", i/2, kept[i+1].Data, kept[i].Data)
			}
		}
	})
}
