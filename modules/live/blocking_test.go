package live

import (
	"strconv"
	"testing"
	"time"
)

func TestParseBlocking(t *testing.T) {
	for _, tc := range []struct {
		msn, part string
		want      blockingQuery
		ok        bool
	}{
		{"", "", blockingQuery{part: -1}, true},
		{"12", "", blockingQuery{set: true, msn: 12, part: -1}, true},
		{"12", "3", blockingQuery{set: true, msn: 12, part: 3}, true},
		{"0", "0", blockingQuery{set: true, part: 0}, true},
		{"18446744073709551615", "", blockingQuery{set: true, msn: 18446744073709551615, part: -1}, true},
		{"", "3", blockingQuery{}, false},
		{"-1", "", blockingQuery{}, false},
		{"+1", "", blockingQuery{}, false},
		{"1.5", "", blockingQuery{}, false},
		{"abc", "", blockingQuery{}, false},
		{"18446744073709551616", "", blockingQuery{}, false},
		{"1", "-1", blockingQuery{}, false},
		{"1", "10001", blockingQuery{}, false},
		{"1", "x", blockingQuery{}, false},
		{" 1", "", blockingQuery{}, false},
	} {
		got, err := parseBlocking(tc.msn, tc.part)
		if (err == nil) != tc.ok || tc.ok && got != tc.want {
			t.Errorf("_HLS_msn=%q _HLS_part=%q: %+v %v", tc.msn, tc.part, got, err)
		}
	}
}

func FuzzParseBlocking(f *testing.F) {
	f.Add("12", "3")
	f.Add("", "1")
	f.Add("99999999999999999999", "")
	f.Fuzz(func(t *testing.T, msn, part string) {
		q, err := parseBlocking(msn, part)
		if err != nil {
			return
		}
		if q.set && strconv.FormatUint(q.msn, 10) != msn && len(msn) > 0 && msn[0] != '0' {
			t.Fatalf("%q read as %d", msn, q.msn)
		}
		if q.part > maxPartIndex || q.part < -1 || !q.set && q.part != -1 {
			t.Fatalf("%q %q: %+v", msn, part, q)
		}
	})
}

// TestWaitersCap: the node holds at most max requests; one more is
// refused and counted, and a released slot is free again.
func TestWaitersCap(t *testing.T) {
	w := waiters{max: 2}
	for i := range 2 {
		if !w.acquire() {
			t.Fatalf("request %d, under the cap, refused", i+1)
		}
	}
	if w.acquire() || w.refused.Load() != 1 || w.now.Load() != 2 {
		t.Fatalf("past the cap: now %d refused %d", w.now.Load(), w.refused.Load())
	}
	w.release()
	if !w.acquire() {
		t.Fatal("a released slot is not free")
	}
}

func TestParsePartDurationSetting(t *testing.T) {
	for in, want := range map[string]time.Duration{"333ms": 333 * time.Millisecond, "0": 0, "0s": 0, "2s": 2 * time.Second, "100ms": 100 * time.Millisecond} {
		if got, err := parsePartDuration(in); err != nil || got != want {
			t.Errorf("%s: %v %v", in, got, err)
		}
	}
	for _, bad := range []string{"99ms", "3s", "-1s", "abc", ""} {
		if _, err := parsePartDuration(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParseSkip(t *testing.T) {
	for v, want := range map[string]bool{"": false, "YES": true, "v2": true} {
		if got, err := parseSkip(v); err != nil || got != want {
			t.Errorf("_HLS_skip=%q: %v %v", v, got, err)
		}
	}
	for _, v := range []string{"yes", "NO", "YES ", "v1", "1", "YESYES"} {
		if _, err := parseSkip(v); err == nil {
			t.Errorf("_HLS_skip=%q accepted", v)
		}
	}
}

func FuzzParseSkip(f *testing.F) {
	f.Add("YES")
	f.Add("v2")
	f.Add("no")
	f.Fuzz(func(t *testing.T, v string) {
		skip, err := parseSkip(v)
		if ok := v == "YES" || v == "v2"; skip != ok || (err == nil) != (ok || v == "") {
			t.Fatalf("%q: %v %v", v, skip, err)
		}
	})
}
