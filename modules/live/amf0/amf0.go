package amf0

import (
	"errors"
	"time"
)

// Type markers defined by the AMF0 specification, section 2.1.
const (
	MarkerNumber      = 0x00
	MarkerBoolean     = 0x01
	MarkerString      = 0x02
	MarkerObject      = 0x03
	MarkerMovieClip   = 0x04
	MarkerNull        = 0x05
	MarkerUndefined   = 0x06
	MarkerReference   = 0x07
	MarkerECMAArray   = 0x08
	MarkerObjectEnd   = 0x09
	MarkerStrictArray = 0x0A
	MarkerDate        = 0x0B
	MarkerLongString  = 0x0C
	MarkerUnsupported = 0x0D
	MarkerRecordSet   = 0x0E
	MarkerXMLDocument = 0x0F
	MarkerTypedObject = 0x10
	MarkerAVMPlus     = 0x11
)

// MaxDepth bounds how deeply objects and arrays may nest when decoding, so a
// few kilobytes of nested markers cannot exhaust the goroutine stack.
const MaxDepth = 32

// Undefined is the AMF0 undefined value. It is distinct from null (nil)
// because some peers treat the two differently in command replies.
type Undefined struct{}

// ECMAArray is an associative array. It is a separate type from a plain
// object so that metadata round-trips with the marker a peer expects
// (onMetaData is conventionally an ECMA array).
type ECMAArray map[string]any

// Errors returned by the decoder. They are wrapped with position details.
var (
	ErrShort       = errors.New("amf0: unexpected end of data")
	ErrTooDeep     = errors.New("amf0: nesting too deep")
	ErrBadMarker   = errors.New("amf0: unsupported type marker")
	ErrUnsupported = errors.New("amf0: value cannot be encoded")
)

// dateFromMillis converts an AMF0 date (milliseconds since the Unix epoch,
// as a float64) into a UTC time. Non-finite or out-of-range values clamp to
// the zero time rather than overflowing.
func dateFromMillis(ms float64) time.Time {
	const maxMs = 1 << 53
	if ms != ms || ms > maxMs || ms < -maxMs {
		return time.Time{}
	}
	return time.UnixMilli(int64(ms)).UTC()
}
