package amf0

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Decode reads one value from b and reports how many bytes it used.
func Decode(b []byte) (v any, n int, err error) {
	d := decoder{buf: b}
	v, err = d.value(0)
	return v, d.pos, err
}

// DecodeAll reads values until b is exhausted. RTMP command and data
// messages are simply a sequence of AMF0 values, so this is how their
// payloads are parsed. Values decoded before an error are returned with it,
// which lets callers act on a well-formed command name and transaction id
// even when trailing arguments are malformed.
func DecodeAll(b []byte) ([]any, error) {
	d := decoder{buf: b}
	var out []any
	for d.pos < len(d.buf) {
		v, err := d.value(0)
		if err != nil {
			return out, err
		}
		out = append(out, v)
	}
	return out, nil
}

type decoder struct {
	buf []byte
	pos int
}

func (d *decoder) remaining() int { return len(d.buf) - d.pos }

func (d *decoder) take(n int) ([]byte, error) {
	if n < 0 || n > d.remaining() {
		return nil, fmt.Errorf("need %d bytes at offset %d: %w", n, d.pos, ErrShort)
	}
	b := d.buf[d.pos : d.pos+n]
	d.pos += n
	return b, nil
}

func (d *decoder) u8() (byte, error) {
	b, err := d.take(1)
	if err != nil {
		return 0, err
	}
	return b[0], nil
}

func (d *decoder) u16() (int, error) {
	b, err := d.take(2)
	if err != nil {
		return 0, err
	}
	return int(binary.BigEndian.Uint16(b)), nil
}

func (d *decoder) u32() (uint32, error) {
	b, err := d.take(4)
	if err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint32(b), nil
}

func (d *decoder) number() (float64, error) {
	b, err := d.take(8)
	if err != nil {
		return 0, err
	}
	return math.Float64frombits(binary.BigEndian.Uint64(b)), nil
}

// utf8 reads a string with a 16-bit length prefix, as used for short strings
// and object keys.
func (d *decoder) utf8() (string, error) {
	n, err := d.u16()
	if err != nil {
		return "", err
	}
	b, err := d.take(n)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

func (d *decoder) value(depth int) (any, error) {
	if depth > MaxDepth {
		return nil, ErrTooDeep
	}
	start := d.pos
	m, err := d.u8()
	if err != nil {
		return nil, err
	}
	switch m {
	case MarkerNumber:
		return d.number()
	case MarkerBoolean:
		b, err := d.u8()
		return b != 0, err
	case MarkerString:
		return d.utf8()
	case MarkerLongString:
		n, err := d.u32()
		if err != nil {
			return nil, err
		}
		if uint64(n) > uint64(d.remaining()) {
			return nil, fmt.Errorf("long string of %d bytes at offset %d: %w", n, start, ErrShort)
		}
		b, _ := d.take(int(n))
		return string(b), nil
	case MarkerObject:
		return d.properties(depth)
	case MarkerTypedObject:
		if _, err := d.utf8(); err != nil { // class name: not needed by RTMP
			return nil, err
		}
		return d.properties(depth)
	case MarkerECMAArray:
		// The count is only a hint (peers get it wrong); the array ends
		// with an object-end marker like an object does.
		if _, err := d.u32(); err != nil {
			return nil, err
		}
		m, err := d.properties(depth)
		return ECMAArray(m), err
	case MarkerStrictArray:
		n, err := d.u32()
		if err != nil {
			return nil, err
		}
		// Every element takes at least one byte, so a count larger than
		// what is left is a lie; checking it first keeps the allocation
		// below bounded by the input size.
		if uint64(n) > uint64(d.remaining()) {
			return nil, fmt.Errorf("strict array of %d elements at offset %d: %w", n, start, ErrShort)
		}
		arr := make([]any, 0, n)
		for i := uint32(0); i < n; i++ {
			v, err := d.value(depth + 1)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		return arr, nil
	case MarkerNull:
		return nil, nil
	case MarkerUndefined:
		return Undefined{}, nil
	case MarkerDate:
		ms, err := d.number()
		if err != nil {
			return nil, err
		}
		if _, err := d.take(2); err != nil { // time zone, "should be 0"
			return nil, err
		}
		return dateFromMillis(ms), nil
	default:
		return nil, fmt.Errorf("marker 0x%02x at offset %d: %w", m, start, ErrBadMarker)
	}
}

// properties reads key/value pairs up to the empty key followed by the
// object-end marker.
func (d *decoder) properties(depth int) (map[string]any, error) {
	obj := map[string]any{}
	for {
		key, err := d.utf8()
		if err != nil {
			return nil, err
		}
		if key == "" && d.remaining() > 0 && d.buf[d.pos] == MarkerObjectEnd {
			d.pos++
			return obj, nil
		}
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, fmt.Errorf("property %q: %w", key, err)
		}
		obj[key] = v
	}
}
