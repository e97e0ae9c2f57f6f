package live

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// mediaFileRE is the rule mediaFile checks by hand.
var mediaFileRE = regexp.MustCompile(`^[a-z0-9_-]{1,64}\.(m3u8|ts|jpg|gif)$`)

func TestMediaFileAsRegexp(t *testing.T) {
	names := []string{"", ".", ".ts", "a.ts", "index.m3u8", "seg-000011.ts", "av-000011-p3.ts", "thumb.jpg", "preview.gif",
		"A.ts", "a.TS", "a.ts.ts", "a..ts", "a.mp4", "a b.ts", "a/b.ts", "../a.ts", "a.m3u", "a.m3u8x", "é.ts", "a\x00.ts",
		strings.Repeat("a", 64) + ".ts", strings.Repeat("a", 65) + ".ts", "a.", "ts", "-_.gif"}
	r := rand.New(rand.NewPCG(3, 4))
	const alphabet = "az09_-.AZ/ émtsjpgif38u"
	for range 200000 {
		b := make([]byte, r.IntN(12))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		names = append(names, string(b), string(b)+".ts", string(b)+".m3u8")
	}
	for _, n := range names {
		if got, want := mediaFile(n), mediaFileRE.MatchString(n); got != want {
			t.Fatalf("mediaFile(%q) = %v, the rule says %v", n, got, want)
		}
	}
}

func FuzzMediaFile(f *testing.F) {
	for _, s := range []string{"index.m3u8", "seg-1.ts", "a..ts", strings.Repeat("z", 65) + ".gif"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := mediaFile(s), mediaFileRE.MatchString(s); got != want {
			t.Fatalf("mediaFile(%q) = %v, the rule says %v", s, got, want)
		}
	})
}
