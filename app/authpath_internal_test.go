package app

import (
	"fmt"
	"testing"
)

// A cached decision never outlives a change of the policy: a line added
// after a refusal was cached is in effect for the very next check.
func TestAuthzCacheFollowsPolicyChanges(t *testing.T) {
	a, err := NewAuthz(map[string][]string{"test": {"p, user, things, read"}})
	if err != nil {
		t.Fatal(err)
	}
	check := func(roles []string, act string, want bool) {
		t.Helper()
		for range 2 { // the first answer from the enforcer, the second from the cache
			if got := a.Allowed(roles, "things", act); got != want {
				t.Fatalf("%v %s things: %v, want %v", roles, act, got, want)
			}
		}
	}
	check([]string{RoleUser}, "read", true)
	check([]string{RoleUser}, "write", false)
	check([]string{RoleRadio}, "read", false)
	if len(a.decisions) != 3 {
		t.Fatalf("%d decisions cached, want 3", len(a.decisions))
	}

	if err := a.addLines("later", []string{"p, user, things, write"}); err != nil {
		t.Fatal(err)
	}
	check([]string{RoleUser}, "write", true)
	if err := a.addLines("later", []string{"g, radio, user"}); err != nil {
		t.Fatal(err)
	}
	check([]string{RoleRadio}, "read", true)
	check([]string{RoleRadio}, "delete", false)
	// Admins inherit the moderator's lines (kernel), cached or not.
	if err := a.addLines("later", []string{"p, moderator, things, delete"}); err != nil {
		t.Fatal(err)
	}
	check([]string{RoleAdmin}, "delete", true)
}

// The cache is bounded: past maxDecisions it starts over and still answers.
func TestAuthzCacheBounded(t *testing.T) {
	a, err := NewAuthz(map[string][]string{"test": {"p, user, things, read"}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range maxDecisions + 10 {
		if a.Allowed([]string{fmt.Sprintf("role%d", i)}, "things", "read") {
			t.Fatalf("role%d allowed", i)
		}
	}
	if n := len(a.decisions); n > maxDecisions {
		t.Fatalf("%d decisions cached, bound %d", n, maxDecisions)
	}
	if !a.Allowed([]string{RoleUser}, "things", "read") {
		t.Fatal("user refused after the cache started over")
	}
}

func TestBearerToken(t *testing.T) {
	for _, tt := range []struct {
		header, token string
		ok            bool
	}{
		{"Bearer onair_abc", "onair_abc", true},
		{"bearer onair_abc", "onair_abc", true},
		{"BEARER   onair_abc  ", "onair_abc", true},
		{"Bearer ", "", false},
		{"Bearer", "", false},
		{"Basic dXNlcjpwYXNz", "", false},
		{"", "", false},
		{"Bearer\tonair_abc", "", false},
	} {
		token, ok := bearerToken([]byte(tt.header))
		if ok != tt.ok || string(token) != tt.token {
			t.Errorf("%q: %q %v, want %q %v", tt.header, token, ok, tt.token, tt.ok)
		}
	}
}

// The rate limiter's key is built once per principal and prefix.
func TestRateLimitKeyCached(t *testing.T) {
	p := &Principal{UserID: 7, TokenID: 42}
	k := p.rateLimitKey("onair:")
	if k != "onair:rl:token:42" {
		t.Fatalf("key %q", k)
	}
	if allocs := testing.AllocsPerRun(100, func() { p.rateLimitKey("onair:") }); allocs != 0 {
		t.Fatalf("%v allocations a request once the key is built", allocs)
	}
	if k := p.rateLimitKey("other:"); k != "other:rl:token:42" {
		t.Fatalf("key under another prefix %q", k)
	}
}

// memoryLimiter counts as Fiber's limiter does: a fixed window from a
// key's first request, each key its own, a new window once it has ended.
func TestMemoryLimiterWindows(t *testing.T) {
	l := newMemoryLimiter(2, 60, nil, nil)
	type hit struct {
		key       string
		ts        uint32
		remaining int
		reset     uint32
	}
	for i, h := range []hit{
		{"a", 1000, 1, 60},
		{"a", 1000, 0, 60},
		{"a", 1001, -1, 59}, // over the limit
		{"b", 1030, 1, 60},  // another key, its own window
		{"a", 1059, -2, 1},  // still the first window
		{"a", 1060, 1, 60},  // the window has ended: a new one
		{"b", 1089, 0, 1},
		{"b", 1200, 1, 60},
	} {
		remaining, reset := l.hit(h.key, h.ts)
		if remaining != h.remaining || reset != h.reset {
			t.Fatalf("hit %d (%s at %d): remaining %d reset %d, want %d %d", i, h.key, h.ts, remaining, reset, h.remaining, h.reset)
		}
	}
	// Ended windows are swept: only b's current one is left.
	if len(l.windows) != 1 || l.windows["b"] == nil {
		t.Fatalf("windows after the sweep: %v", l.windows)
	}
}

// BenchmarkAuthz compares a check answered by the enforcer with one
// answered from the cache (go test -run '^$' -bench Authz ./app).
func BenchmarkAuthz(b *testing.B) {
	a, err := NewAuthz(map[string][]string{"test": {"p, moderator, things, update", "p, user, things, read"}})
	if err != nil {
		b.Fatal(err)
	}
	roles := []string{RoleUser, RoleRadio}
	b.Run("enforcer", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			for _, r := range roles {
				a.e.Enforce(r, "things", "update")
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			a.Allowed(roles, "things", "update")
		}
	})
}
