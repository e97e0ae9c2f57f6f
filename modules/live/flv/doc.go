// Package flv parses FLV tag bodies, the payload format of RTMP audio and
// video messages, for the codecs OnAir repackages: H.264 (AVC) video and
// AAC audio. It also reads FLV files, which the tests and benchmarks use
// as recorded input.
//
// All parsers take untrusted bytes: they check every length against the
// data present, return errors for malformed input and never panic. Returned
// slices alias the input; copy them to keep them beyond the input's life.
//
// Enhanced RTMP (the FourCC extension used by recent OBS versions for
// HEVC and AV1) is recognised: "avc1" and "mp4a" map onto the classic AVC
// and AAC packets, other codecs are reported by their FourCC so callers can
// refuse them with a clear message. VideoCodec, AudioCodec and
// MetadataCodec name the codec of a tag or of an onMetaData announcement
// (following Enhanced RTMP v2's ModEx and multitrack headers), and
// Codec.Supported says whether OnAir can package it.
package flv

import "errors"

// Errors returned by the parsers; they are wrapped with details.
var (
	ErrShort       = errors.New("flv: data too short")
	ErrInvalid     = errors.New("flv: invalid data")
	ErrUnsupported = errors.New("flv: unsupported feature")
)
