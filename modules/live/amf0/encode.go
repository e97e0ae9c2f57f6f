package amf0

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"time"
)

// Encode appends the AMF0 encoding of each value to dst. Maps are written
// with their keys sorted so the output is deterministic; Object keeps the
// order the caller gave.
func Encode(dst []byte, values ...any) ([]byte, error) {
	var err error
	for _, v := range values {
		if dst, err = appendValue(dst, v, 0); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// Object is an object whose properties are encoded in the given order.
// Command replies use it because a few clients are sensitive to the order
// of well-known keys such as level, code and description.
type Object []Property

// Property is one key/value pair of an Object.
type Property struct {
	Key   string
	Value any
}

func appendValue(dst []byte, v any, depth int) ([]byte, error) {
	if depth > MaxDepth {
		return dst, ErrTooDeep
	}
	switch x := v.(type) {
	case nil:
		return append(dst, MarkerNull), nil
	case Undefined:
		return append(dst, MarkerUndefined), nil
	case bool:
		b := byte(0)
		if x {
			b = 1
		}
		return append(dst, MarkerBoolean, b), nil
	case float64:
		return appendNumber(dst, x), nil
	case float32:
		return appendNumber(dst, float64(x)), nil
	case int:
		return appendNumber(dst, float64(x)), nil
	case int8:
		return appendNumber(dst, float64(x)), nil
	case int16:
		return appendNumber(dst, float64(x)), nil
	case int32:
		return appendNumber(dst, float64(x)), nil
	case int64:
		return appendNumber(dst, float64(x)), nil
	case uint:
		return appendNumber(dst, float64(x)), nil
	case uint8:
		return appendNumber(dst, float64(x)), nil
	case uint16:
		return appendNumber(dst, float64(x)), nil
	case uint32:
		return appendNumber(dst, float64(x)), nil
	case uint64:
		return appendNumber(dst, float64(x)), nil
	case string:
		if len(x) > math.MaxUint16 {
			dst = append(dst, MarkerLongString)
			dst = binary.BigEndian.AppendUint32(dst, uint32(len(x)))
			return append(dst, x...), nil
		}
		dst = append(dst, MarkerString)
		return appendUTF8(dst, x), nil
	case time.Time:
		dst = appendNumber(dst, float64(x.UnixMilli()))
		dst[len(dst)-9] = MarkerDate
		return append(dst, 0, 0), nil
	case Object:
		dst = append(dst, MarkerObject)
		var err error
		for _, p := range x {
			if dst, err = appendProperty(dst, p.Key, p.Value, depth); err != nil {
				return dst, err
			}
		}
		return append(dst, 0, 0, MarkerObjectEnd), nil
	case map[string]any:
		return appendMap(append(dst, MarkerObject), x, depth)
	case ECMAArray:
		dst = append(dst, MarkerECMAArray)
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(x)))
		return appendMap(dst, x, depth)
	case []any:
		dst = append(dst, MarkerStrictArray)
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(x)))
		var err error
		for _, e := range x {
			if dst, err = appendValue(dst, e, depth+1); err != nil {
				return dst, err
			}
		}
		return dst, nil
	default:
		return dst, fmt.Errorf("%T: %w", v, ErrUnsupported)
	}
}

func appendNumber(dst []byte, f float64) []byte {
	dst = append(dst, MarkerNumber)
	return binary.BigEndian.AppendUint64(dst, math.Float64bits(f))
}

// appendUTF8 writes a 16-bit length and the bytes; callers guarantee the
// length fits, and keys that do not are truncated rather than corrupting
// the stream.
func appendUTF8(dst []byte, s string) []byte {
	if len(s) > math.MaxUint16 {
		s = s[:math.MaxUint16]
	}
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(s)))
	return append(dst, s...)
}

func appendProperty(dst []byte, key string, v any, depth int) ([]byte, error) {
	dst = appendUTF8(dst, key)
	return appendValue(dst, v, depth+1)
}

func appendMap(dst []byte, m map[string]any, depth int) ([]byte, error) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var err error
	for _, k := range keys {
		if dst, err = appendProperty(dst, k, m[k], depth); err != nil {
			return dst, err
		}
	}
	return append(dst, 0, 0, MarkerObjectEnd), nil
}
