package notify

import (
	"strings"
	"testing"
)

func TestUnsubscribeToken(t *testing.T) {
	s := signer{key: []byte("0123456789abcdef0123456789abcdef")}
	tok := s.token(12, 34)
	if a, b, ok := s.parse(tok); !ok || a != 12 || b != 34 {
		t.Fatalf("parse(%q) = %d %d %v", tok, a, b, ok)
	}
	other := signer{key: []byte("another key of thirty-two bytes!")}
	for _, bad := range []string{"", "12-34", strings.Replace(tok, "12-", "13-", 1), other.token(12, 34), tok + "-1", "0-34-" + s.mac(0, 34)} {
		if _, _, ok := s.parse(bad); ok {
			t.Errorf("parse(%q) accepted", bad)
		}
	}
}

// FuzzUnsubscribeToken: no token but the signer's own parses.
func FuzzUnsubscribeToken(f *testing.F) {
	s := signer{key: []byte("0123456789abcdef0123456789abcdef")}
	f.Add(s.token(1, 2))
	f.Add("1-2-00")
	f.Add("-1--2-")
	f.Fuzz(func(t *testing.T, token string) {
		a, b, ok := s.parse(token)
		if ok && token != s.token(a, b) {
			t.Fatalf("parse accepted %q as %d-%d", token, a, b)
		}
	})
}
