package flv

import "fmt"

// SoundFormatAAC is the FLV sound format of AAC.
const SoundFormatAAC = 10

// soundFormatEx marks an enhanced RTMP audio tag with a FourCC.
const soundFormatEx = 9

// AAC packet types.
const (
	AACSequenceHeader = 0
	AACRaw            = 1
)

// AudioTag is a parsed audio tag body.
type AudioTag struct {
	// SoundFormat is the FLV sound format; enhanced tags carrying "mp4a"
	// report SoundFormatAAC, other enhanced codecs report 9 and set FourCC.
	SoundFormat uint8
	// SoundRate, SoundSize and SoundType are the legacy header fields;
	// for AAC the AudioSpecificConfig is authoritative instead.
	SoundRate, SoundSize, SoundType uint8
	// FourCC is the codec of an enhanced tag, else "".
	FourCC string
	// PacketType is the AACPacketType for AAC.
	PacketType uint8
	// Data is the AudioSpecificConfig for a sequence header, a raw AAC
	// frame otherwise.
	Data []byte
}

// ParseAudioTag parses the body of an audio tag.
func ParseAudioTag(b []byte) (AudioTag, error) {
	if len(b) < 1 {
		return AudioTag{}, fmt.Errorf("audio tag: %w", ErrShort)
	}
	a := AudioTag{
		SoundFormat: b[0] >> 4,
		SoundRate:   (b[0] >> 2) & 0x03,
		SoundSize:   (b[0] >> 1) & 0x01,
		SoundType:   b[0] & 0x01,
	}
	switch a.SoundFormat {
	case SoundFormatAAC:
		if len(b) < 2 {
			return AudioTag{}, fmt.Errorf("aac audio tag: %w", ErrShort)
		}
		a.PacketType = b[1]
		a.Data = b[2:]
	case soundFormatEx:
		if len(b) < 5 {
			return AudioTag{}, fmt.Errorf("enhanced audio tag: %w", ErrShort)
		}
		a = AudioTag{SoundFormat: soundFormatEx, FourCC: string(b[1:5]), PacketType: b[0] & 0x0F}
		a.Data = b[5:]
		if a.FourCC == "mp4a" && a.PacketType <= AACRaw {
			a.SoundFormat = SoundFormatAAC
		}
	default:
		a.Data = b[1:]
	}
	return a, nil
}

// sampleRates indexes the MPEG-4 sampling frequency table (ISO/IEC
// 14496-3, 1.6.3.4).
var sampleRates = [13]int{96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350}

// Audio object types of interest.
const (
	AOTAACMain = 1
	AOTAACLC   = 2
	AOTAACSSR  = 3
	AOTAACLTP  = 4
	AOTSBR     = 5
	AOTPS      = 29
)

// AudioSpecificConfig holds the fields of an MPEG-4 AudioSpecificConfig
// needed to frame AAC in ADTS.
type AudioSpecificConfig struct {
	// ObjectType is the audio object type of the core coder: for HE-AAC
	// (SBR, PS) signalled explicitly it is the underlying type, usually
	// AAC-LC, and ExtensionType records the extension.
	ObjectType    int
	ExtensionType int
	// FrequencyIndex indexes the sampling frequency table; 15 means the
	// frequency was given explicitly.
	FrequencyIndex int
	// SampleRate is the core coder's sampling frequency in Hz. One AAC
	// frame holds 1024 samples at this rate.
	SampleRate int
	// Channels is the channel configuration (0 means defined by a program
	// config element, which ADTS cannot carry).
	Channels int
}

// ParseAudioSpecificConfig parses the leading fields of an
// AudioSpecificConfig; the GASpecificConfig that follows is not needed.
func ParseAudioSpecificConfig(b []byte) (AudioSpecificConfig, error) {
	r := bitReader{b: b}
	var c AudioSpecificConfig
	c.ObjectType = r.objectType()
	c.FrequencyIndex, c.SampleRate = r.frequency()
	c.Channels = int(r.read(4))
	if c.ObjectType == AOTSBR || c.ObjectType == AOTPS {
		c.ExtensionType = c.ObjectType
		r.frequency() // the extension's output rate; ADTS wants the core's
		c.ObjectType = r.objectType()
	}
	if r.err {
		return AudioSpecificConfig{}, fmt.Errorf("audio specific config of %d bytes: %w", len(b), ErrShort)
	}
	if c.ObjectType == 0 || c.SampleRate <= 0 {
		return AudioSpecificConfig{}, fmt.Errorf("audio object type %d, rate %d: %w", c.ObjectType, c.SampleRate, ErrInvalid)
	}
	return c, nil
}

// ADTSHeaderSize is the size of an ADTS header without CRC.
const ADTSHeaderSize = 7

// maxADTSFrame is the largest frame_length ADTS can express.
const maxADTSFrame = 1<<13 - 1

// AppendADTS appends an ADTS header for a raw frame of frameLen bytes.
func (c AudioSpecificConfig) AppendADTS(dst []byte, frameLen int) ([]byte, error) {
	if c.ObjectType < AOTAACMain || c.ObjectType > AOTAACLTP {
		return dst, fmt.Errorf("adts cannot carry audio object type %d: %w", c.ObjectType, ErrUnsupported)
	}
	idx := c.FrequencyIndex
	if idx < 0 || idx >= len(sampleRates) {
		idx = -1
		for i, r := range sampleRates {
			if r == c.SampleRate {
				idx = i
			}
		}
		if idx < 0 {
			return dst, fmt.Errorf("adts cannot carry sample rate %d: %w", c.SampleRate, ErrUnsupported)
		}
	}
	if c.Channels < 1 || c.Channels > 7 {
		return dst, fmt.Errorf("adts cannot carry channel configuration %d: %w", c.Channels, ErrUnsupported)
	}
	n := frameLen + ADTSHeaderSize
	if frameLen < 0 || n > maxADTSFrame {
		return dst, fmt.Errorf("aac frame of %d bytes: %w", frameLen, ErrUnsupported)
	}
	profile := byte(c.ObjectType - 1)
	ch := byte(c.Channels)
	return append(dst,
		0xFF,
		0xF1, // MPEG-4, layer 0, no CRC
		profile<<6|byte(idx)<<2|ch>>2,
		(ch&3)<<6|byte(n>>11),
		byte(n>>3),
		byte(n&7)<<5|0x1F, // buffer fullness 0x7FF: variable bit rate
		0xFC,
	), nil
}

// bitReader reads big-endian bit fields, recording overruns instead of
// failing each call.
type bitReader struct {
	b   []byte
	pos int // in bits
	err bool
}

func (r *bitReader) read(n int) uint32 {
	var v uint32
	for range n {
		if r.pos >= 8*len(r.b) {
			r.err = true
			return 0
		}
		bit := r.b[r.pos/8] >> (7 - r.pos%8) & 1
		v = v<<1 | uint32(bit)
		r.pos++
	}
	return v
}

func (r *bitReader) objectType() int {
	t := int(r.read(5))
	if t == 31 {
		t = 32 + int(r.read(6))
	}
	return t
}

func (r *bitReader) frequency() (index, rate int) {
	index = int(r.read(4))
	switch {
	case index == 15:
		rate = int(r.read(24))
	case index < len(sampleRates):
		rate = sampleRates[index]
	}
	return index, rate
}
