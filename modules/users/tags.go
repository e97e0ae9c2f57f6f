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
	maxTagSlug   = 60
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

// tagSlug is the URL-friendly form of a tag's name shown beside it. It is
// not the identity and not unique ("C" and "C#" both have the slug "c"):
// ASCII letters and digits with accents folded, or, for a name in a script
// without them, its letters and digits lower-cased.
func tagSlug(name string) string {
	if s := app.Slugify(name, maxTagSlug); s != "" {
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
	if len(s) > maxTagSlug {
		s = s[:maxTagSlug]
	}
	return strings.Trim(string(s), "-")
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
// insert of a tag another request created first is ignored, and the row is
// read back with a locking read on MySQL: inside a transaction, a plain read
// would look at the transaction's snapshot, taken before the other request
// committed the tag.
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
		t := Tag{Name: byKey[k], Folded: k, Slug: tagSlug(byKey[k])}
		if _, err := db.NewInsert().Model(&t).Ignore().Exec(ctx); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("users: create tag %q: %w", t.Name, err)
		}
		if t.ID == 0 {
			// Another request created it first.
			q := db.NewSelect().Model(&t).Where("t.folded = ?", k)
			if app.IsMySQL(db) {
				q = q.For("UPDATE")
			}
			if err := q.Scan(ctx); err != nil {
				return nil, fmt.Errorf("users: read tag %q: %w", byKey[k], err)
			}
		}
		have[k] = t
	}
	tags := make([]Tag, 0, len(keys))
	for _, k := range keys {
		tags = append(tags, have[k])
	}
	return tags, nil
}

// FindTag returns the id of the tag with the TagKey of name, or 0 when no
// tag has it.
func FindTag(ctx context.Context, db bun.IDB, name string) (int64, error) {
	var id int64
	err := db.NewSelect().Model((*Tag)(nil)).Column("id").Where("folded = ?", TagKey(name)).Limit(1).Scan(ctx, &id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("users: find tag: %w", err)
	}
	return id, nil
}
