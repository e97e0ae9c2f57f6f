package app

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// Slugify makes a URL-safe slug: lowercase ASCII letters, digits and single
// hyphens; accents are folded ("Café Noir" → "cafe-noir"). It may return ""
// for a name with no letters or digits; callers pick a fallback.
func Slugify(s string, max int) string {
	var b strings.Builder
	hyphen := false
	for _, r := range norm.NFKD.String(s) {
		switch {
		case unicode.Is(unicode.Mn, r):
			continue
		case r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			if hyphen && b.Len() > 0 {
				b.WriteByte('-')
			}
			hyphen = false
			b.WriteRune(unicode.ToLower(r))
		default:
			hyphen = true
		}
		if b.Len() >= max {
			break
		}
	}
	return strings.Trim(b.String(), "-")
}
