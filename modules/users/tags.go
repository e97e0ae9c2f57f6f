package users

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
)

// Tag limits of product-decisions.md.
const (
	MaxTags      = 10
	MaxTagLength = 30
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

// CheckTags validates tag names (at most 10, each 1–30 characters) and
// returns them trimmed, without duplicates by slug.
func CheckTags(field string, names []string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, n := range names {
		n = strings.TrimSpace(n)
		if l := utf8.RuneCountInString(n); l == 0 || l > MaxTagLength {
			return nil, app.Validation{field: fmt.Sprintf("each tag must be 1 to %d characters", MaxTagLength)}.Err()
		}
		slug := app.Slugify(n, 60)
		if slug == "" {
			return nil, app.Validation{field: "a tag needs a letter or a digit"}.Err()
		}
		if !seen[slug] {
			seen[slug] = true
			out = append(out, n)
		}
	}
	if len(out) > MaxTags {
		return nil, app.Validation{field: fmt.Sprintf("at most %d tags", MaxTags)}.Err()
	}
	return out, nil
}

// EnsureTags returns the Tag rows for checked names, creating missing ones.
// Tags are shared by slug: "Deep House" and "deep house" are one tag.
func EnsureTags(ctx context.Context, db bun.IDB, names []string) ([]Tag, error) {
	tags := make([]Tag, 0, len(names))
	for _, n := range names {
		slug := app.Slugify(n, 60)
		t := Tag{}
		err := db.NewSelect().Model(&t).Where("slug = ?", slug).Limit(1).Scan(ctx)
		if err == nil {
			tags = append(tags, t)
			continue
		}
		t = Tag{Name: n, Slug: slug}
		if _, err := db.NewInsert().Model(&t).Ignore().Exec(ctx); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("users: create tag %q: %w", n, err)
		}
		if t.ID == 0 {
			// Another request created it first.
			if err := db.NewSelect().Model(&t).Where("slug = ?", slug).Limit(1).Scan(ctx); err != nil {
				return nil, fmt.Errorf("users: read tag %q: %w", n, err)
			}
		}
		tags = append(tags, t)
	}
	return tags, nil
}
