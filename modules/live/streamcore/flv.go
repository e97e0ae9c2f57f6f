package streamcore

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/onair/onair/modules/live/flv"
)

// FLV turns the FLV tag bodies of one RTMP publication into units: the
// one parse of each tag, at the edge. It keeps the current AVC decoder
// configuration (the NAL unit length size). It is not safe for concurrent
// use.
type FLV struct {
	avc    *flv.AVCConfig
	asc    bool          // an AAC configuration has come
	parsed atomic.Uint64 // read from any goroutine
	// slab is where the next pictures' bytes are copied (see keep).
	slab []byte
}

// A picture's bytes are copied out of the tag, whose buffer the source
// reuses, into a slab of slabSize shared by the pictures that follow
// until it is full: each picture of its own (10 to 30 KiB at 2.5 Mb/s,
// size classes whose spans hold one to four) took a span from the
// runtime's central lists each, 3.4 % of OnAir's CPU samples during a
// stream (bench/results/2026-11-28d-ingest.md). A
// picture larger than half a slab gets its own allocation. A slab lives
// while any of its pictures does: at most one slab per stream more than
// the pictures' own bytes, as units pass through the readers' bounded
// queues.
const slabSize = 128 << 10

// keep returns a copy of b that the caller may keep.
func (d *FLV) keep(b []byte) []byte {
	n := len(b)
	if n > slabSize/2 {
		return append([]byte(nil), b...)
	}
	if cap(d.slab)-len(d.slab) < n {
		d.slab = make([]byte, 0, slabSize)
	}
	start := len(d.slab)
	d.slab = append(d.slab, b...)
	return d.slab[start:len(d.slab):len(d.slab)]
}

// Parsed counts the tags parsed: the tests check that each tag of a
// publication is parsed once, here, whatever reads the stream.
func (d *FLV) Parsed() uint64 { return d.parsed.Load() }

// Video parses a video tag body received at `at`. ok is false for a tag
// that carries nothing to package (an enhanced command frame). A codec
// OnAir cannot package is a CodecError; a malformed tag another error.
// The unit does not alias body, which the caller may reuse.
func (d *FLV) Video(ts int64, body []byte, at time.Time) (u Unit, ok bool, err error) {
	d.parsed.Add(1)
	c, ok, err := flv.VideoCodec(body)
	if err != nil || !ok {
		return Unit{}, false, err
	}
	if !c.Supported() {
		return Unit{}, false, CodecError{c}
	}
	tag, err := flv.ParseVideoTag(body)
	if err != nil {
		return Unit{}, false, err
	}
	u = Unit{Video: true, DTS: ts, CTS: tag.CompositionTime, Key: tag.IsKeyframe(), At: at, Size: len(body)}
	switch tag.PacketType {
	case flv.AVCSequenceHeader:
		cfg, err := flv.ParseAVCConfig(tag.Data)
		if err != nil {
			return Unit{}, false, fmt.Errorf("avc sequence header: %w", err)
		}
		if len(cfg.SPS) == 0 || len(cfg.PPS) == 0 {
			return Unit{}, false, errors.New("avc sequence header without sps or pps")
		}
		cfg.SPS, cfg.PPS = cloneAll(cfg.SPS), cloneAll(cfg.PPS)
		d.avc, u.AVC, u.Key = &cfg, &cfg, false
	case flv.AVCNALU:
		if d.avc == nil || len(tag.Data) == 0 {
			return u, true, nil // undecodable without its configuration: counted, not packaged
		}
		data := d.keep(tag.Data)
		// Most pictures are 1 to 4 NAL units: one allocation.
		if u.NALUs, err = flv.AppendNALUs(make([][]byte, 0, 4), data, d.avc.NALULengthSize); err != nil {
			return Unit{}, false, fmt.Errorf("video frame: %w", err)
		}
	}
	return u, true, nil
}

// Audio parses an audio tag body received at `at`; see Video.
func (d *FLV) Audio(ts int64, body []byte, at time.Time) (u Unit, ok bool, err error) {
	d.parsed.Add(1)
	c, err := flv.AudioCodec(body)
	if err != nil {
		return Unit{}, false, err
	}
	if !c.Supported() {
		return Unit{}, false, CodecError{c}
	}
	tag, err := flv.ParseAudioTag(body)
	if err != nil {
		return Unit{}, false, err
	}
	if tag.SoundFormat != flv.SoundFormatAAC {
		return Unit{}, false, nil // an enhanced AAC packet with nothing to package (sequence end, channel layout)
	}
	u = Unit{DTS: ts, At: at, Size: len(body)}
	switch tag.PacketType {
	case flv.AACSequenceHeader:
		cfg, err := flv.ParseAudioSpecificConfig(tag.Data)
		if err != nil {
			return Unit{}, false, fmt.Errorf("aac sequence header: %w", err)
		}
		if _, err := cfg.AppendADTS(nil, 0); err != nil {
			return Unit{}, false, fmt.Errorf("aac configuration: %w", err)
		}
		d.asc, u.ASC = true, &cfg
	case flv.AACRaw:
		if d.asc && len(tag.Data) > 0 {
			u.AAC = append([]byte(nil), tag.Data...)
		}
	}
	return u, true, nil
}

func cloneAll(in [][]byte) [][]byte {
	out := make([][]byte, len(in))
	for i, b := range in {
		out[i] = append([]byte(nil), b...)
	}
	return out
}
