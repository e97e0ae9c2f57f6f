package httprange

import "testing"

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		h               string
		size            int64
		start, length   int64
		ok, satisfiable bool
	}{
		{"bytes=0-99", 1000, 0, 100, true, true},
		{"bytes=100-", 1000, 100, 900, true, true},
		{"bytes=900-5000", 1000, 900, 100, true, true},
		{"bytes=-100", 1000, 900, 100, true, true},
		{"bytes=-5000", 1000, 0, 1000, true, true},
		{"bytes=999-999", 1000, 999, 1, true, true},
		{"bytes=1000-", 1000, 0, 0, false, false},
		{"bytes=-0", 1000, 0, 0, false, false},
		{"bytes=0-", 0, 0, 0, false, false},
		{"bytes=0-1,5-6", 1000, 0, 0, false, true}, // several: the whole body
		{"bytes=5-1", 1000, 0, 0, false, true},
		{"bytes=a-b", 1000, 0, 0, false, true},
		{"items=0-1", 1000, 0, 0, false, true},
		{"bytes=--1", 1000, 0, 0, false, true},
		{"bytes=1", 1000, 0, 0, false, true},
		{"bytes=99999999999999999999-", 1000, 0, 0, false, true},
	} {
		s, l, ok, sat := Parse(tc.h, tc.size)
		if s != tc.start || l != tc.length || ok != tc.ok || sat != tc.satisfiable {
			t.Errorf("Parse(%q, %d) = %d %d %v %v", tc.h, tc.size, s, l, ok, sat)
		}
	}
}

// FuzzParse: whatever the header, a range it accepts lies inside the body.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"bytes=0-99", "bytes=-5", "bytes=9-", "bytes=a-b", "bytes=--1", "bytes=9223372036854775807-", "bytes=0-0,1-1", "bytes=-", "bytes= 1-2"} {
		f.Add(s, int64(1000))
	}
	f.Fuzz(func(t *testing.T, h string, size int64) {
		if size < 0 {
			size = -size
		}
		if size < 0 {
			return
		}
		s, l, ok, _ := Parse(h, size)
		if ok && (s < 0 || l <= 0 || s+l > size || s+l < s) {
			t.Fatalf("Parse(%q, %d) = %d, %d", h, size, s, l)
		}
	})
}

func TestMatchETag(t *testing.T) {
	for h, want := range map[string]bool{
		`"abc"`: true, `W/"abc"`: true, `"x", "abc"`: true, `*`: true, `"ab"`: false, ``: false,
	} {
		if got := MatchETag(h, `"abc"`); got != want {
			t.Errorf("If-None-Match %s: %v", h, got)
		}
	}
}
