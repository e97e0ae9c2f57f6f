package users

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/uptrace/bun"
	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"

	"github.com/onair/onair/app"
)

// Tag limits of product-decisions.md.
const (
	MaxTags      = 10
	MaxTagLength = 30
	// maxTagSlugBase leaves room in the slug column (60) for a suffix.
	maxTagSlugBase = 50
)

// TagView is the API form of a Tag.
type TagView struct {
	Name string `json:"name"`
	Slug string `json:"slug"`
}

// TagViews converts tags for a response; never nil, so it renders as [].
func TagViews(tags []Tag) []TagView {
	out := make([]TagView, 0, len(tags))
	for _, t := range tags {
		out = append(out, TagView{Name: t.Name, Slug: t.Slug})
	}
	return out
}

// TagName is a tag as it is shown: the text sent, with the white space
// around it trimmed and every run of white space inside it made one space.
func TagName(s string) string { return strings.Join(strings.Fields(s), " ") }

// folder is Unicode full case folding; it is stateless and safe to share.
var folder = cases.Fold()

// TagKey is the identity of a tag: its TagName, case-folded (Unicode full
// case folding, so "House", "HOUSE" and " house " are one tag, and so are
// "Straße" and "STRASSE"), in normalization form NFC (so a precomposed and
// a decomposed "é" are one). Nothing else is folded: "C", "C#" and "C++"
// are three tags, "Café" and "Cafe" two.
func TagKey(s string) string {
	return norm.NFC.String(folder.String(norm.NFC.String(TagName(s))))
}

// tagSlug is the base of a tag's slug, its URL-friendly name: ASCII
// letters and digits with accents folded, words joined by hyphens, with
// "#" and "+" after a letter, a digit or another "+" spelled "sharp" and
// "plus" and "&" spelled "and" ("C#" c-sharp, "C++" c-plus-plus, "R&B"
// r-and-b, "Deep House" deep-house); or, for a name in a script without
// ASCII letters, its letters and digits lower-cased. A tag's slug is this
// base, or, when an older tag holds it, the base with the first free
// suffix -2, -3… (nextTagSlug), so every tag has its own.
func tagSlug(name string) string {
	if s := app.Slugify(spellSymbols(name), maxTagSlugBase); s != "" {
		return s
	}
	var b strings.Builder
	hyphen := false
	for _, r := range norm.NFC.String(name) {
		// A combining mark belongs to the letter before it.
		if !(unicode.IsLetter(r) || unicode.IsNumber(r) || (unicode.IsMark(r) && b.Len() > 0 && !hyphen)) {
			hyphen = true
			continue
		}
		if hyphen && b.Len() > 0 {
			b.WriteByte('-')
		}
		hyphen = false
		b.WriteRune(unicode.ToLower(r))
	}
	s := []rune(b.String())
	if len(s) > maxTagSlugBase {
		s = s[:maxTagSlugBase]
	}
	if slug := strings.Trim(string(s), "-"); slug != "" {
		return slug
	}
	return "tag" // a name without letters or digits, from before CheckTags
}

// spellSymbols writes out the symbols tagSlug keeps as words.
func spellSymbols(name string) string {
	var b strings.Builder
	prev := rune(0)
	for _, r := range name {
		switch {
		case (r == '#' || r == '+') && (unicode.IsLetter(prev) || unicode.IsDigit(prev) || prev == '+'):
			if r == '#' {
				b.WriteString(" sharp ")
			} else {
				b.WriteString(" plus ")
			}
		case r == '&':
			b.WriteString(" and ")
		default:
			b.WriteRune(r)
		}
		prev = r
	}
	return b.String()
}

// nextTagSlug is the slug of a new tag whose base is base: the first one
// (attempt 0) no tag holds, base, base-2, base-3… (see app.NextSlug for
// the attempts after a lost race).
func nextTagSlug(ctx context.Context, db bun.IDB, base string, attempt int) (string, error) {
	var held []string
	if err := db.NewSelect().Model((*Tag)(nil)).Column("slug").
		// base itself, and the slugs that start with "base-" ('.' follows
		// '-'): a range of the unique index on both databases.
		Where("slug = ? OR (slug >= ? AND slug < ?)", base, base+"-", base+".").Scan(ctx, &held); err != nil {
		return "", fmt.Errorf("users: tag slugs: %w", err)
	}
	taken := make(map[string]bool, len(held))
	for _, s := range held {
		taken[s] = true
	}
	return app.NextSlug(base, func(s string) bool { return taken[s] }, attempt), nil
}

// CheckTags validates tag names and returns them as TagName, without
// duplicates by TagKey (the first spelling wins). A blank name ("", spaces)
// is dropped, as the docs promise; what is left must be at most 10 tags of
// 1–30 characters, each with a letter or a digit.
func CheckTags(field string, names []string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, n := range names {
		n = TagName(n)
		if n == "" {
			continue
		}
		if p := app.NameProblem(n); p != "" {
			return nil, app.Validation{field: p}.Err()
		}
		if utf8.RuneCountInString(n) > MaxTagLength {
			return nil, app.Validation{field: fmt.Sprintf("each tag must be 1 to %d characters", MaxTagLength)}.Err()
		}
		if strings.IndexFunc(n, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsNumber(r) }) < 0 {
			return nil, app.Validation{field: "a tag needs a letter or a digit"}.Err()
		}
		if k := TagKey(n); !seen[k] {
			seen[k] = true
			out = append(out, n)
		}
	}
	if len(out) > MaxTags {
		return nil, app.Validation{field: fmt.Sprintf("at most %d tags", MaxTags)}.Err()
	}
	return out, nil
}

// EnsureTags returns the Tag rows for checked names (in their order),
// creating the missing ones; a tag is shared by everything tagged with the
// same TagKey, and keeps the spelling it was first created with.
//
// New tags are inserted in key order, so two transactions creating the same
// new tags take their locks in one order and cannot deadlock on them. The
// insert of a tag another request created first is ignored (InnoDB makes
// it wait until that request commits), and the row is read back: inside a
// transaction with a locking read on MySQL, since a plain read would look
// at the transaction's snapshot, taken before the other request committed
// the tag; outside one with a plain read, which takes no lock for the
// shows' transactions (their show_tags rows hold shared locks on the tags
// through the foreign key) to meet.
func EnsureTags(ctx context.Context, db bun.IDB, names []string) ([]Tag, error) {
	if len(names) == 0 {
		return nil, nil
	}
	byKey := make(map[string]string, len(names))
	keys := make([]string, 0, len(names))
	for _, n := range names {
		k := TagKey(n)
		if _, dup := byKey[k]; !dup {
			byKey[k] = TagName(n)
			keys = append(keys, k)
		}
	}
	var found []Tag
	if err := db.NewSelect().Model(&found).Where("t.folded IN (?)", bun.List(keys)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("users: read tags: %w", err)
	}
	have := make(map[string]Tag, len(keys))
	for _, t := range found {
		have[t.Folded] = t
	}
	missing := make([]string, 0, len(keys))
	for _, k := range keys {
		if _, ok := have[k]; !ok {
			missing = append(missing, k)
		}
	}
	sort.Strings(missing)
	for _, k := range missing {
		t, err := createTag(ctx, db, byKey[k], k)
		if err != nil {
			return nil, err
		}
		have[k] = t
	}
	tags := make([]Tag, 0, len(keys))
	for _, k := range keys {
		tags = append(tags, have[k])
	}
	return tags, nil
}

// createTag inserts the tag with the given name and key, or reads the
// row another request inserted first. Its slug is the first free one; an
// insert that loses the slug to a concurrent one tries the next (the
// unique index on slug judges), up to app.SlugAttempts times.
func createTag(ctx context.Context, db bun.IDB, name, key string) (Tag, error) {
	base := tagSlug(name)
	for attempt := 0; attempt < app.SlugAttempts; attempt++ {
		slug, err := nextTagSlug(ctx, db, base, attempt)
		if err != nil {
			return Tag{}, err
		}
		t := Tag{Name: name, Folded: key, Slug: slug}
		if _, err := db.NewInsert().Model(&t).Ignore().Exec(ctx); err != nil && !errors.Is(err, sql.ErrNoRows) {
			if retryTag(db, err) {
				continue
			}
			return Tag{}, fmt.Errorf("users: create tag %q: %w", name, err)
		}
		if t.ID != 0 {
			return t, nil
		}
		// Another request created the tag first, or took the slug.
		q := db.NewSelect().Model(&t).Where("t.folded = ?", key)
		if _, inTx := db.(bun.Tx); inTx && app.IsMySQL(db) {
			q = q.For("UPDATE")
		}
		err = q.Scan(ctx)
		if err == nil {
			return t, nil
		}
		if retryTag(db, err) {
			continue
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return Tag{}, fmt.Errorf("users: read tag %q: %w", name, err)
		}
	}
	return Tag{}, fmt.Errorf("users: create tag %q: no free slug after %d attempts", name, app.SlugAttempts)
}

// retryTag tells whether createTag's statement lost a MySQL deadlock that
// running it again settles. Concurrent creates of the same new tags meet
// on the unique keys' locks: the duplicate insert that is ignored takes a
// shared lock on the row another insert is writing, and the locking read
// after it wants that row exclusively, so InnoDB rolls one of them back
// (seen in CI as a 500 on POST /v1/shows). Outside a transaction each
// statement is its own, and the next attempt starts clean; inside one, the
// rollback took the whole transaction, and the caller's retry must run it
// again.
func retryTag(db bun.IDB, err error) bool {
	if _, inTx := db.(bun.Tx); inTx {
		return false
	}
	return app.IsDeadlock(err)
}

// FindTag returns the id of the tag that a ?tag= value names, or 0 when
// none does: the tag whose slug is the value (so the slug of a Tag object
// always finds its own tag), else the tag whose TagKey is the value's.
// The value is taken as TagName and matched against slugs lower-cased;
// TagQuery is the form a cache of lists keys it by.
func FindTag(ctx context.Context, db bun.IDB, value string) (int64, error) {
	name := TagName(value)
	if name == "" {
		return 0, nil
	}
	slug, key := strings.ToLower(name), TagKey(name)
	var rows []Tag
	if err := db.NewSelect().Model(&rows).Column("id", "slug").Where("slug = ? OR folded = ?", slug, key).Limit(2).Scan(ctx); err != nil {
		return 0, fmt.Errorf("users: find tag: %w", err)
	}
	var id int64
	for _, t := range rows {
		if t.Slug == slug {
			return t.ID, nil
		}
		id = t.ID
	}
	return id, nil
}

// TagQuery is what FindTag's answer depends on, as one string: two ?tag=
// values with one TagQuery name the same tag.
func TagQuery(value string) string {
	name := TagName(value)
	if name == "" {
		return ""
	}
	return strings.ToLower(name) + "\x00" + TagKey(name)
}
