package users

import (
	"context"
	"fmt"
	"strconv"

	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
	"github.com/onair/onair/migrations"
)

// tagSlugIndex makes tags.slug unique.
const tagSlugIndex = "tags_slug_uq"

// migrateTagSlugs is migration 0009: every tag gets a slug of its own, so
// that ?tag=<slug> names one tag ("C", "C#" and "C++" all had "c").
//
// The slugs are computed again from the names by today's rule (tagSlug),
// in the order the tags were created: the oldest tag keeps the plain slug,
// a later one with the same base gets -2, -3… Then the column compares byte
// for byte on MySQL (as tags.folded does) and a unique index holds it.
// Only tags and their slugs change: no tag is merged or re-pointed, so
// show_tags, shows.tag_ids and the counts stay as they are.
//
// MySQL commits DDL at once: a run after a crash finds the index made and
// moves the rows that change out of the way first.
func migrateTagSlugs(ctx context.Context, db bun.IDB) error {
	if app.IsMySQL(db) {
		if err := execDDL(ctx, db, "ALTER TABLE tags MODIFY COLUMN slug VARCHAR(60) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT ''"); err != nil {
			return err
		}
	}
	var tags []Tag
	if err := db.NewSelect().Model(&tags).Column("id", "name", "slug").OrderExpr("t.id ASC").Scan(ctx); err != nil {
		return fmt.Errorf("read tags: %w", err)
	}
	want := uniqueTagSlugs(tags)
	var change []Tag
	for _, t := range tags {
		if t.Slug != want[t.ID] {
			change = append(change, t)
		}
	}
	// With the index in place (a second run), a slug set must never meet
	// another row's old one: the rows that change step aside first.
	for _, t := range change {
		if _, err := db.NewUpdate().Model((*Tag)(nil)).Set("slug = ?", "\x01"+strconv.FormatInt(t.ID, 10)).
			Where("id = ?", t.ID).Exec(ctx); err != nil {
			return fmt.Errorf("slug of tag %d: %w", t.ID, err)
		}
	}
	for _, t := range change {
		if _, err := db.NewUpdate().Model((*Tag)(nil)).Set("slug = ?", want[t.ID]).
			Where("id = ?", t.ID).Exec(ctx); err != nil {
			return fmt.Errorf("slug of tag %d: %w", t.ID, err)
		}
	}
	return migrations.CreateUniqueIndex((*Tag)(nil), tagSlugIndex, "slug")(ctx, db)
}

// uniqueTagSlugs gives each tag (oldest first) the first slug from its
// name's base that no older tag holds.
func uniqueTagSlugs(tags []Tag) map[int64]string {
	out := make(map[int64]string, len(tags))
	taken := make(map[string]bool, len(tags))
	// A base is claimed before any suffix: "c-2" as a tag's own base
	// ("C 2") is not handed to a second "C" created earlier than it.
	for _, t := range tags {
		taken[tagSlug(t.Name)] = true
	}
	claimed := make(map[string]bool, len(tags))
	for _, t := range tags {
		base := tagSlug(t.Name)
		slug := base
		if claimed[base] {
			slug = app.NextSlug(base, func(s string) bool { return taken[s] }, 0)
		}
		claimed[slug], taken[slug] = true, true
		out[t.ID] = slug
	}
	return out
}
