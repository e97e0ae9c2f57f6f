package flv

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Codec identifies the codec of an audio or video track as FLV signals it:
// a legacy codec id (video) or sound format (audio) in the tag's first
// byte, or an enhanced RTMP FourCC. It is what a server checks before
// accepting a publication, so every field comes from untrusted input.
type Codec struct {
	Audio bool
	// ID is the legacy codec id or sound format; 0 when FourCC is set.
	ID uint8
	// FourCC is the codec of an enhanced RTMP tag, else "".
	FourCC string
	// Feature names an enhanced RTMP packet form that cannot be packaged
	// whatever its codec ("multitrack", "ModEx"), else "".
	Feature string
}

// Sound formats and video codec ids without a constant elsewhere.
const (
	soundFormatMP3   = 2
	soundFormatMP38k = 14
	codecHEVCLegacy  = 12 // not in the FLV specification; used by many servers and encoders
	codecAV1Legacy   = 13 // likewise
)

var videoNames = map[uint8]string{
	1: "JPEG", 2: "Sorenson H.263", 3: "Screen Video", 4: "On2 VP6", 5: "On2 VP6 with alpha",
	6: "Screen Video 2", CodecAVC: "H.264", codecHEVCLegacy: "HEVC", codecAV1Legacy: "AV1",
}

var audioNames = map[uint8]string{
	0: "Linear PCM", 1: "ADPCM", soundFormatMP3: "MP3", 3: "Linear PCM", 4: "Nellymoser", 5: "Nellymoser",
	6: "Nellymoser", 7: "G.711 A-law", 8: "G.711 mu-law", SoundFormatAAC: "AAC", 11: "Speex",
	soundFormatMP38k: "MP3", 15: "device-specific sound",
}

var fourCCNames = map[string]string{
	"avc1": "H.264", "hvc1": "HEVC", "av01": "AV1", "vp09": "VP9", "vp08": "VP8",
	"mp4a": "AAC", "Opus": "Opus", ".mp3": "MP3", "fLaC": "FLAC", "ac-3": "AC-3", "ec-3": "E-AC-3",
}

// Supported reports whether OnAir packages the codec: H.264 video and AAC
// audio, legacy or enhanced, in single-track packets.
func (c Codec) Supported() bool {
	if c.Feature != "" {
		return false
	}
	if c.Audio {
		return c.FourCC == "mp4a" || c.FourCC == "" && c.ID == SoundFormatAAC
	}
	return c.FourCC == "avc1" || c.FourCC == "" && c.ID == CodecAVC
}

// String names the codec for people: "HEVC (hvc1)", "MP3 (sound format 2)".
func (c Codec) String() string {
	kind := "video"
	if c.Audio {
		kind = "audio"
	}
	var name string
	switch {
	case c.FourCC == "" && c.Feature == "multitrack":
		name = kind + " of several codecs"
	case c.FourCC != "":
		if n, ok := fourCCNames[c.FourCC]; ok {
			name = fmt.Sprintf("%s (%s)", n, c.FourCC)
		} else {
			name = fmt.Sprintf("%s codec %q", kind, c.FourCC)
		}
	default:
		names, field := videoNames, "codec id"
		if c.Audio {
			names, field = audioNames, "sound format"
		}
		if n, ok := names[c.ID]; ok {
			name = fmt.Sprintf("%s (%s %d)", n, field, c.ID)
		} else {
			name = fmt.Sprintf("%s %s %d", kind, field, c.ID)
		}
	}
	if c.Feature != "" {
		name += " in " + c.Feature + " packets"
	}
	return name
}

// Enhanced RTMP packet types that change how the header continues.
const (
	exVideoMetadata   = 4
	exVideoMultitrack = 6
	exModEx           = 7
	exAudioMultitrack = 5
	// manyTracksManyCodecs is the multitrack type whose tracks each name
	// their own FourCC.
	manyTracksManyCodecs = 2
)

// VideoCodec reads the codec of a video tag body from its header. ok is
// false for an enhanced command frame, which carries a command, not media.
func VideoCodec(b []byte) (c Codec, ok bool, err error) {
	if len(b) < 1 {
		return Codec{}, false, fmt.Errorf("video tag: %w", ErrShort)
	}
	if b[0]&0x80 == 0 {
		return Codec{ID: b[0] & 0x0F}, true, nil
	}
	c, pt, rest, err := skipModEx(b)
	if err == nil && (b[0]>>4)&0x07 == FrameInfoCommand && pt != exVideoMetadata {
		return Codec{}, false, nil
	}
	if err == nil {
		c.FourCC, err = exFourCC(&c, pt, rest, exVideoMultitrack)
	}
	if err != nil {
		return Codec{}, false, fmt.Errorf("enhanced video tag: %w", err)
	}
	return c, true, nil
}

// AudioCodec reads the codec of an audio tag body from its header.
func AudioCodec(b []byte) (Codec, error) {
	if len(b) < 1 {
		return Codec{}, fmt.Errorf("audio tag: %w", ErrShort)
	}
	if b[0]>>4 != soundFormatEx {
		return Codec{Audio: true, ID: b[0] >> 4}, nil
	}
	c, pt, rest, err := skipModEx(b)
	if err == nil {
		c.FourCC, err = exFourCC(&c, pt, rest, exAudioMultitrack)
	}
	if err != nil {
		return Codec{}, fmt.Errorf("enhanced audio tag: %w", err)
	}
	c.Audio = true
	return c, nil
}

// skipModEx follows an enhanced RTMP header (Enhanced RTMP v2) past its
// ModEx extensions, returning the packet type they lead to and the bytes
// after it. Each extension is a size (UI8+1, or UI16+1 after 255), its
// data, and a byte whose low bits are the next packet type.
func skipModEx(b []byte) (c Codec, pt uint8, rest []byte, err error) {
	pt, rest = b[0]&0x0F, b[1:]
	for pt == exModEx {
		c.Feature = "ModEx"
		if len(rest) < 1 {
			return c, 0, nil, ErrShort
		}
		size := int(rest[0]) + 1
		rest = rest[1:]
		if size == 256 {
			if len(rest) < 2 {
				return c, 0, nil, ErrShort
			}
			size = int(binary.BigEndian.Uint16(rest)) + 1
			rest = rest[2:]
		}
		if len(rest) < size+1 {
			return c, 0, nil, ErrShort
		}
		pt, rest = rest[size]&0x0F, rest[size+1:]
	}
	return c, pt, rest, nil
}

// exFourCC reads the FourCC that follows the packet type, or the
// multitrack prefix (type and inner packet type) and then the FourCC,
// which is absent when every track names its own codec.
func exFourCC(c *Codec, pt uint8, rest []byte, multitrack uint8) (string, error) {
	if pt == multitrack {
		c.Feature = "multitrack"
		if len(rest) < 1 {
			return "", ErrShort
		}
		if rest[0]>>4 == manyTracksManyCodecs {
			return "", nil
		}
		rest = rest[1:]
	}
	if len(rest) < 4 {
		return "", ErrShort
	}
	return string(rest[:4]), nil
}

// MetadataCodec reads the codec onMetaData announces for the audio or the
// video track (audiocodecid, videocodecid): a legacy id, or a FourCC given
// as a number holding its four bytes or as a string. present is false when
// the track is not announced; known is false when the value names no
// codec clearly (0, a codec name, another type), which some encoders write.
func MetadataCodec(meta map[string]any, audio bool) (c Codec, present, known bool) {
	key := "videocodecid"
	if audio {
		key = "audiocodecid"
	}
	v, present := meta[key]
	if !present {
		return Codec{}, false, false
	}
	c.Audio = audio
	switch v := v.(type) {
	case float64:
		if v != math.Trunc(v) || v < 1 || v > math.MaxUint32 {
			return c, true, false
		}
		if v < 256 {
			c.ID = uint8(v)
			return c, true, true
		}
		c.FourCC = string(binary.BigEndian.AppendUint32(nil, uint32(v)))
	case string:
		if len(v) != 4 {
			return c, true, false
		}
		c.FourCC = v
	default:
		return c, true, false
	}
	for _, r := range []byte(c.FourCC) {
		if r < 0x20 || r > 0x7E {
			return Codec{Audio: audio}, true, false
		}
	}
	return c, true, true
}
