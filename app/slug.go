package app

import (
	"math/rand/v2"
	"strconv"
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

// SlugAttempts bounds the tries of a create that races other creates for a
// unique slug (see NextSlug).
const SlugAttempts = 16

// NextSlug returns a slug from base that taken does not hold: base, base-2,
// base-3… On the first attempt (0) it is the first free one. The unique
// index is the judge of a race: a caller whose insert lost to a concurrent
// one (IsDuplicate) tries again with attempt+1, and then gets one of the
// first attempt+1 free slugs at random, so a crowd racing for one name
// spreads over several slugs instead of colliding again, all on the same
// next one, once per winner. A race can leave a gap (name-3 taken before
// name-2); the next create fills it.
func NextSlug(base string, taken func(slug string) bool, attempt int) string {
	free := make([]string, 0, attempt+1)
	for i := 1; len(free) <= attempt; i++ {
		slug := base
		if i > 1 {
			slug = base + "-" + strconv.Itoa(i)
		}
		if !taken(slug) {
			free = append(free, slug)
		}
	}
	return free[rand.IntN(len(free))]
}

// SlugQuery is a slug filter in the form stored slugs are compared with.
// Slugs are lower-case ASCII letters, digits and hyphens, so the match is
// case-insensitive ("My-Show" finds "my-show"), and a value with any other
// character can name no slug (ok is false: the filter matches nothing).
// Comparing this form answers alike on both databases, whatever MySQL's
// collation would otherwise equate (case, accents, trailing spaces) and
// SQLite's would not.
func SlugQuery(s string) (slug string, ok bool) {
	s = strings.ToLower(s)
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return "", false
		}
	}
	return s, s != ""
}

// EscapeLike escapes LIKE wildcards with "!" (used with ESCAPE '!'), which
// means the same on MySQL and SQLite: `WHERE name LIKE ? ESCAPE '!'` with
// "%"+EscapeLike(term)+"%" matches term literally.
func EscapeLike(s string) string {
	return likeEscaper.Replace(s)
}

var likeEscaper = strings.NewReplacer("!", "!!", "%", "!%", "_", "!_")
