package downloads

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestDownloadToken(t *testing.T) {
	s := signer{key: []byte("0123456789abcdef0123456789abcdef")}
	now := time.Now()
	tok := s.token(7, now)
	if !s.valid(7, tok, now) || s.valid(8, tok, now) || s.valid(7, tok, now.Add(8*time.Hour)) {
		t.Fatalf("token %q: valid for its show only, and only until it expires", tok)
	}
}

// FuzzDownloadToken: a token the signer did not make for the show is
// never valid.
func FuzzDownloadToken(f *testing.F) {
	s := signer{key: []byte("0123456789abcdef0123456789abcdef")}
	now := time.Unix(1_800_000_000, 0)
	f.Add(s.token(7, now))
	f.Add("99999999999.00")
	f.Add(".")
	f.Fuzz(func(t *testing.T, token string) {
		if s.valid(7, token, now) {
			raw, _, _ := strings.Cut(token, ".")
			exp, _ := strconv.ParseInt(raw, 10, 64)
			if token != strconv.FormatInt(exp, 10)+"."+s.mac(7, exp) {
				t.Fatalf("valid(%q)", token)
			}
		}
	})
}
