package amf0

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestRoundTrip(t *testing.T) {
	date := time.UnixMilli(1700000000123).UTC()
	tests := []struct {
		name string
		in   any
		want any // decoded form when it differs from in
	}{
		{name: "number", in: 3.5},
		{name: "int becomes number", in: 42, want: 42.0},
		{name: "negative zero", in: math.Copysign(0, -1)},
		{name: "true", in: true},
		{name: "false", in: false},
		{name: "empty string", in: ""},
		{name: "string", in: "live"},
		{name: "long string", in: strings.Repeat("x", 70000)},
		{name: "null", in: nil},
		{name: "undefined", in: Undefined{}},
		{name: "date", in: date},
		{name: "object", in: map[string]any{"app": "live", "fpad": false, "capabilities": 15.0}},
		{name: "ordered object", in: Object{{"level", "status"}, {"code", "X"}}, want: map[string]any{"level": "status", "code": "X"}},
		{name: "empty object", in: map[string]any{}},
		{name: "ecma array", in: ECMAArray{"width": 320.0, "height": 240.0, "encoder": "Lavf"}},
		{name: "strict array", in: []any{1.0, "a", nil, []any{true}}},
		{name: "nested", in: map[string]any{"a": map[string]any{"b": ECMAArray{"c": []any{"d"}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Encode(nil, tt.in)
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			got, n, err := Decode(b)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if n != len(b) {
				t.Fatalf("consumed %d of %d bytes", n, len(b))
			}
			want := tt.want
			if want == nil && tt.in != nil {
				want = tt.in
			}
			if f, ok := want.(float64); ok && f == 0 {
				if g, ok := got.(float64); !ok || math.Signbit(g) != math.Signbit(f) {
					t.Fatalf("got %v, want %v", got, want)
				}
				return
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got %#v, want %#v", got, want)
			}
		})
	}
}

func TestEncodeKnownBytes(t *testing.T) {
	b, err := Encode(nil, "connect", 1, Object{{"app", "live"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{
		0x02, 0x00, 0x07, 'c', 'o', 'n', 'n', 'e', 'c', 't',
		0x00, 0x3F, 0xF0, 0, 0, 0, 0, 0, 0,
		0x03, 0x00, 0x03, 'a', 'p', 'p', 0x02, 0x00, 0x04, 'l', 'i', 'v', 'e', 0x00, 0x00, 0x09,
	}
	if !bytes.Equal(b, want) {
		t.Fatalf("got % x\nwant % x", b, want)
	}
}

func TestDecodeAll(t *testing.T) {
	b, _ := Encode(nil, "publish", 5.0, nil, "key", "live")
	vals, err := DecodeAll(b)
	if err != nil {
		t.Fatal(err)
	}
	want := []any{"publish", 5.0, nil, "key", "live"}
	if !reflect.DeepEqual(vals, want) {
		t.Fatalf("got %#v", vals)
	}
}

func TestDecodeHostile(t *testing.T) {
	deep := bytes.Repeat([]byte{MarkerStrictArray, 0, 0, 0, 1}, MaxDepth+5)
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, ErrShort},
		{"short number", []byte{0, 1, 2}, ErrShort},
		{"short string", []byte{2, 0, 10, 'a'}, ErrShort},
		{"long string lies", []byte{0x0C, 0xFF, 0xFF, 0xFF, 0xFF, 'a'}, ErrShort},
		{"strict array lies", []byte{0x0A, 0xFF, 0xFF, 0xFF, 0xFF, 5}, ErrShort},
		{"ecma array huge count", []byte{0x08, 0xFF, 0xFF, 0xFF, 0xFF}, ErrShort},
		{"object without end", []byte{0x03, 0, 1, 'a', 5}, ErrShort},
		{"reference unsupported", []byte{0x07, 0, 1}, ErrBadMarker},
		{"avmplus unsupported", []byte{0x11, 0}, ErrBadMarker},
		{"stray object end", []byte{0x09}, ErrBadMarker},
		{"too deep", deep, ErrTooDeep},
		{"short date", []byte{0x0B, 0, 0, 0, 0, 0, 0, 0, 0, 0}, ErrShort},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Decode(tt.in)
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
}

func TestDecodeTypedObject(t *testing.T) {
	b := []byte{0x10, 0, 1, 'C', 0, 1, 'x', 0x05, 0, 0, 0x09}
	v, _, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(v, map[string]any{"x": nil}) {
		t.Fatalf("got %#v", v)
	}
}

func TestDateBadValues(t *testing.T) {
	for _, f := range []float64{math.NaN(), math.Inf(1), 1e300} {
		b := appendNumber(nil, f)
		b[0] = MarkerDate
		b = append(b, 0, 0)
		v, _, err := Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		if !v.(time.Time).IsZero() {
			t.Fatalf("%v: got %v", f, v)
		}
	}
}

func TestEncodeUnsupported(t *testing.T) {
	if _, err := Encode(nil, struct{}{}); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("got %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	seeds := []any{
		"connect", 1.0, nil, Undefined{}, true,
		map[string]any{"app": "live", "tcUrl": "rtmp://x/live", "n": []any{1.0}},
		ECMAArray{"duration": 0.0, "width": 1280.0},
		time.UnixMilli(0),
	}
	for _, s := range seeds {
		b, _ := Encode(nil, s)
		f.Add(b)
	}
	f.Add([]byte{0x0A, 0xFF, 0xFF, 0xFF, 0xFF})
	f.Fuzz(func(t *testing.T, b []byte) {
		vals, err := DecodeAll(b)
		if err != nil {
			return
		}
		// Whatever decodes must re-encode and decode to the same thing.
		enc, err := Encode(nil, vals...)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		again, err := DecodeAll(enc)
		if err != nil {
			t.Fatalf("decode of re-encoding: %v", err)
		}
		if len(again) != len(vals) {
			t.Fatalf("value count changed: %d != %d", len(again), len(vals))
		}
	})
}
