// Package amf0 encodes and decodes Action Message Format 0 values, the
// serialisation RTMP uses for its commands and for stream metadata.
//
// Values map onto Go types as follows:
//
//	number        float64 (any Go integer or float encodes as a number)
//	boolean       bool
//	string        string (strings longer than 65535 bytes encode as long strings)
//	object        map[string]any (typed objects decode to the same, class name dropped)
//	null          nil
//	undefined     Undefined
//	ECMA array    ECMAArray
//	strict array  []any
//	date          time.Time (the time-zone field is ignored, as the spec asks)
//
// The decoder is written for hostile input: every length is checked against
// the bytes actually present before anything is allocated, nesting is limited
// to MaxDepth, and malformed input returns an error rather than panicking.
// Callers bound the total input size themselves (RTMP caps message sizes).
package amf0
