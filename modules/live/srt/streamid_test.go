package srt

import (
	"errors"
	"testing"
)

func TestParseStreamID(t *testing.T) {
	for _, c := range []struct {
		in, key string
		err     error
	}{
		{"abc123", "abc123", nil},
		{"#!::r=abc123,m=publish", "abc123", nil},
		{"#!::m=publish,r=abc123", "abc123", nil},
		{"#!::r=abc123", "abc123", nil},
		{"#!::u=alice,r=abc123,m=publish,t=stream,s=xyz", "abc123", nil},
		{StreamID("k-1_x"), "k-1_x", nil},
		{"%23%21%3A%3Ar%3Dabc123%2Cm%3Dpublish", "abc123", nil},
		{"", "", ErrNoKey},
		{"#!::", "", ErrBadStreamID},
		{"#!::m=publish", "", ErrNoKey},
		{"#!::r=,m=publish", "", ErrNoKey},
		{"#!::r=abc,m=request", "", ErrNotPublish},
		{"#!::r=abc,m=bidirectional", "", ErrNotPublish},
		{"#!::r=abc,t=file", "", ErrBadStreamID},
		{"#!::r=abc,r=def", "", ErrBadStreamID},
		{"#!::r=abc,junk", "", ErrBadStreamID},
		{"has space", "", ErrBadStreamID},
		{"#comment", "", ErrBadStreamID},
		{"a\x00b", "", ErrBadStreamID},
		{string(make([]byte, MaxStreamID+1)), "", ErrBadStreamID},
	} {
		key, err := ParseStreamID(c.in)
		if key != c.key || !errors.Is(err, c.err) {
			t.Errorf("ParseStreamID(%q) = %q, %v; want %q, %v", c.in, key, err, c.key, c.err)
		}
	}
}

// FuzzStreamID: whatever the caller sends, the parser answers a key it
// would also accept bare, or an error, and never panics.
func FuzzStreamID(f *testing.F) {
	for _, s := range []string{"abc", "#!::r=abc,m=publish", "#!::m=request,r=x", "#!::r=a=b", "#!::,", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		key, err := ParseStreamID(id)
		if err != nil {
			if key != "" {
				t.Fatalf("key %q with error %v", key, err)
			}
			return
		}
		if again, err := ParseStreamID(key); err != nil || again != key {
			t.Fatalf("key %q of %q does not parse bare: %q, %v", key, id, again, err)
		}
		if again, err := ParseStreamID(StreamID(key)); len(StreamID(key)) <= MaxStreamID && (err != nil || again != key) {
			t.Fatalf("StreamID(%q) parses as %q, %v", key, again, err)
		}
	})
}
