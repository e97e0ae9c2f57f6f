package flv

import (
	"encoding/binary"
	"fmt"
)

// Video frame types (FLV specification, VIDEODATA).
const (
	FrameKey         = 1
	FrameInter       = 2
	FrameDisposable  = 3
	FrameGenerated   = 4
	FrameInfoCommand = 5
)

// CodecAVC is the FLV video codec id of H.264.
const CodecAVC = 7

// AVC packet types.
const (
	AVCSequenceHeader = 0
	AVCNALU           = 1
	AVCEndOfSequence  = 2
)

// Enhanced RTMP video packet types, as carried after an extended header.
const (
	exSequenceStart = 0
	exCodedFrames   = 1
	exSequenceEnd   = 2
	exCodedFramesX  = 3
)

// VideoTag is a parsed video tag body.
type VideoTag struct {
	FrameType uint8
	// CodecID is the FLV codec id; enhanced tags carrying "avc1" report
	// CodecAVC, other enhanced codecs report 0 and set FourCC.
	CodecID uint8
	// FourCC is the codec of an enhanced (extended header) tag, else "".
	FourCC string
	// PacketType is the AVCPacketType for AVC (enhanced avc1 packets are
	// mapped onto it); other enhanced packet types keep their own value
	// offset by 16 so they can never be mistaken for AVC ones.
	PacketType uint8
	// CompositionTime is PTS minus DTS in milliseconds (signed 24-bit).
	CompositionTime int32
	// Data is the AVCDecoderConfigurationRecord for a sequence header and
	// length-prefixed NAL units for a NALU packet.
	Data []byte
}

// IsKeyframe reports whether the tag claims to be a keyframe.
func (v VideoTag) IsKeyframe() bool { return v.FrameType == FrameKey }

// ParseVideoTag parses the body of a video tag.
func ParseVideoTag(b []byte) (VideoTag, error) {
	if len(b) < 1 {
		return VideoTag{}, fmt.Errorf("video tag: %w", ErrShort)
	}
	if b[0]&0x80 != 0 {
		return parseExVideo(b)
	}
	v := VideoTag{FrameType: b[0] >> 4, CodecID: b[0] & 0x0F}
	if v.CodecID != CodecAVC {
		v.Data = b[1:]
		return v, nil
	}
	if len(b) < 5 {
		return VideoTag{}, fmt.Errorf("avc video tag of %d bytes: %w", len(b), ErrShort)
	}
	v.PacketType = b[1]
	v.CompositionTime = int24(b[2:5])
	v.Data = b[5:]
	return v, nil
}

func parseExVideo(b []byte) (VideoTag, error) {
	if len(b) < 5 {
		return VideoTag{}, fmt.Errorf("enhanced video tag of %d bytes: %w", len(b), ErrShort)
	}
	v := VideoTag{FrameType: (b[0] >> 4) & 0x07, FourCC: string(b[1:5])}
	pt := b[0] & 0x0F
	b = b[5:]
	if v.FourCC != "avc1" {
		v.PacketType = 16 + pt
		v.Data = b
		return v, nil
	}
	v.CodecID = CodecAVC
	switch pt {
	case exSequenceStart:
		v.PacketType = AVCSequenceHeader
	case exSequenceEnd:
		v.PacketType = AVCEndOfSequence
	case exCodedFramesX:
		v.PacketType = AVCNALU
	case exCodedFrames:
		if len(b) < 3 {
			return VideoTag{}, fmt.Errorf("enhanced avc frame: %w", ErrShort)
		}
		v.PacketType = AVCNALU
		v.CompositionTime = int24(b[:3])
		b = b[3:]
	default:
		v.PacketType = 16 + pt
	}
	v.Data = b
	return v, nil
}

// int24 reads a big-endian signed 24-bit integer.
func int24(b []byte) int32 {
	u := uint32(b[0])<<16 | uint32(b[1])<<8 | uint32(b[2])
	return int32(u<<8) >> 8
}

// AVCConfig is the part of an AVCDecoderConfigurationRecord (ISO/IEC
// 14496-15, 5.2.4.1) needed to produce an Annex-B stream.
type AVCConfig struct {
	Profile, Compatibility, Level uint8
	// NALULengthSize is the size in bytes (1, 2 or 4) of the length
	// prefix of each NAL unit in NALU packets.
	NALULengthSize int
	SPS, PPS       [][]byte
}

// ParseAVCConfig parses an AVCDecoderConfigurationRecord.
func ParseAVCConfig(b []byte) (AVCConfig, error) {
	if len(b) < 7 {
		return AVCConfig{}, fmt.Errorf("avc config of %d bytes: %w", len(b), ErrShort)
	}
	if b[0] != 1 {
		return AVCConfig{}, fmt.Errorf("avc config version %d: %w", b[0], ErrInvalid)
	}
	c := AVCConfig{Profile: b[1], Compatibility: b[2], Level: b[3], NALULengthSize: int(b[4]&0x03) + 1}
	if c.NALULengthSize == 3 {
		return AVCConfig{}, fmt.Errorf("nal length size 3: %w", ErrInvalid)
	}
	rest := b[5:]
	var err error
	if c.SPS, rest, err = parameterSets(rest, int(b[5]&0x1F), 1); err != nil {
		return AVCConfig{}, fmt.Errorf("sps: %w", err)
	}
	if len(rest) < 1 {
		return AVCConfig{}, fmt.Errorf("pps count: %w", ErrShort)
	}
	if c.PPS, _, err = parameterSets(rest, int(rest[0]), 1); err != nil {
		return AVCConfig{}, fmt.Errorf("pps: %w", err)
	}
	// Trailing bytes (the high-profile chroma extension) are not needed.
	return c, nil
}

// parameterSets reads n 16-bit length-prefixed units after skip bytes.
func parameterSets(b []byte, n, skip int) ([][]byte, []byte, error) {
	b = b[skip:]
	out := make([][]byte, 0, min(n, len(b)/2))
	for range n {
		if len(b) < 2 {
			return nil, nil, ErrShort
		}
		l := int(binary.BigEndian.Uint16(b))
		if len(b) < 2+l {
			return nil, nil, fmt.Errorf("unit of %d bytes: %w", l, ErrShort)
		}
		if l > 0 {
			out = append(out, b[2:2+l])
		}
		b = b[2+l:]
	}
	return out, b, nil
}

// SplitNALUs splits length-prefixed NAL units (the AVCC format of NALU
// packets). Empty units are skipped; a length running past the data is an
// error.
func SplitNALUs(data []byte, lengthSize int) ([][]byte, error) {
	return AppendNALUs(nil, data, lengthSize)
}

// AppendNALUs is SplitNALUs appending to dst, so callers can reuse a slice.
func AppendNALUs(dst [][]byte, data []byte, lengthSize int) ([][]byte, error) {
	if lengthSize != 1 && lengthSize != 2 && lengthSize != 4 {
		return dst, fmt.Errorf("nal length size %d: %w", lengthSize, ErrInvalid)
	}
	for len(data) > 0 {
		if len(data) < lengthSize {
			return dst, fmt.Errorf("nal length: %w", ErrShort)
		}
		var n uint64
		for _, c := range data[:lengthSize] {
			n = n<<8 | uint64(c)
		}
		data = data[lengthSize:]
		if n > uint64(len(data)) {
			return dst, fmt.Errorf("nal unit of %d bytes with %d left: %w", n, len(data), ErrShort)
		}
		if n > 0 {
			dst = append(dst, data[:n])
		}
		data = data[n:]
	}
	return dst, nil
}

// H.264 NAL unit types used when repackaging.
const (
	NALSlice = 1
	NALIDR   = 5
	NALSEI   = 6
	NALSPS   = 7
	NALPPS   = 8
	NALAUD   = 9
)

// ScanAccessUnit tells whether an access unit's NAL units hold an IDR
// slice, an SPS and a PPS: a keyframe without its own parameter sets
// needs them from the decoder configuration to decode alone.
func ScanAccessUnit(nalus [][]byte) (idr, sps, pps bool) {
	for _, n := range nalus {
		switch NALType(n) {
		case NALIDR:
			idr = true
		case NALSPS:
			sps = true
		case NALPPS:
			pps = true
		}
	}
	return idr, sps, pps
}

// NALType returns the nal_unit_type of a NAL unit (0 for an empty one).
func NALType(nalu []byte) uint8 {
	if len(nalu) == 0 {
		return 0
	}
	return nalu[0] & 0x1F
}
