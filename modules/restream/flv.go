package restream

import (
	"encoding/binary"

	"github.com/onair/onair/modules/live/flv"
	"github.com/onair/onair/modules/live/streamcore"
)

// The core hands readers parsed units; a destination wants FLV tag
// bodies again. These build them: the sequence headers from the decided
// tracks, and each picture with 4-byte NAL unit lengths.

// avcSequenceHeader is the video tag of an AVCDecoderConfigurationRecord
// (ISO/IEC 14496-15, 5.2.4.1) with 4-byte NAL unit lengths.
func avcSequenceHeader(c *flv.AVCConfig) []byte {
	b := []byte{0x17, 0x00, 0, 0, 0, 1, c.Profile, c.Compatibility, c.Level, 0xFF, 0xE0 | byte(len(c.SPS)&0x1F)}
	for _, s := range c.SPS {
		b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
		b = append(b, s...)
	}
	b = append(b, byte(len(c.PPS)))
	for _, p := range c.PPS {
		b = binary.BigEndian.AppendUint16(b, uint16(len(p)))
		b = append(b, p...)
	}
	return b
}

// videoTag is the tag body of a picture, appended to dst.
func videoTag(dst []byte, u *streamcore.Unit) []byte {
	kind := byte(0x27)
	if u.Key {
		kind = 0x17
	}
	cts := u.CTS
	dst = append(dst, kind, 0x01, byte(cts>>16), byte(cts>>8), byte(cts))
	for _, n := range u.NALUs {
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(n)))
		dst = append(dst, n...)
	}
	return dst
}

// aacSequenceHeader is the audio tag of an AudioSpecificConfig rebuilt
// from its fields: the core's object type (an HE-AAC stream is announced
// as its AAC-LC core; decoders find SBR in the stream, implicitly), the
// frequency and the channels.
func aacSequenceHeader(c *flv.AudioSpecificConfig) []byte {
	var bits uint64
	n := 0
	put := func(v uint64, w int) { bits = bits<<w | v&(1<<w-1); n += w }
	if c.ObjectType < 31 {
		put(uint64(c.ObjectType), 5)
	} else {
		put(31, 5)
		put(uint64(c.ObjectType-32), 6)
	}
	put(uint64(c.FrequencyIndex), 4)
	if c.FrequencyIndex == 15 {
		put(uint64(c.SampleRate), 24)
	}
	put(uint64(c.Channels), 4)
	put(0, 3) // GASpecificConfig: 1024-sample frames, no core coder delay, no extension
	for n%8 != 0 {
		put(0, 1)
	}
	out := []byte{0xAF, 0x00}
	for i := n - 8; i >= 0; i -= 8 {
		out = append(out, byte(bits>>i))
	}
	return out
}

// audioTag is the tag body of one raw AAC frame, appended to dst.
func audioTag(dst []byte, u *streamcore.Unit) []byte {
	return append(append(dst, 0xAF, 0x01), u.AAC...)
}
