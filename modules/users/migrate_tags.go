package users

import (
	"context"
	"fmt"
	"sort"
	"strconv"

	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
	"github.com/onair/onair/app/events"
	"github.com/onair/onair/migrations"
)

// migrateTagIdentity is migration 0006: a tag becomes its text (TagKey)
// instead of a lossy slug that made "C", "C#" and "C++" one tag.
//
// Before it, tags.slug was the unique identity. The step renames that
// column (with its unique index) to folded, makes it compare byte for byte
// on MySQL, adds a plain slug column, and fills both from each tag's name.
// Tags whose names now fold to one key (only case variants the old slug
// told apart, such as "Straße" and "STRASSE") are merged into the oldest:
// every table with a foreign key to tags(id) is re-pointed first, so no
// show or user loses a tag. A fresh database already has the new shape
// (migration 0001 creates it from the model) and only gets the collation.
//
// MySQL commits DDL at once, so every part checks the shape it finds and
// the step can run again after a crash.
func migrateTagIdentity(ctx context.Context, db bun.IDB, bus *events.Bus) error {
	mysql := app.IsMySQL(db)
	cols, err := migrations.Columns(ctx, db, "tags")
	if err != nil {
		return err
	}
	const binary = "VARCHAR(120) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL"
	switch {
	case !cols["folded"] && mysql:
		err = execDDL(ctx, db, "ALTER TABLE tags CHANGE COLUMN slug folded "+binary)
	case !cols["folded"]:
		err = execDDL(ctx, db, "ALTER TABLE tags RENAME COLUMN slug TO folded")
	case mysql:
		err = execDDL(ctx, db, "ALTER TABLE tags MODIFY COLUMN folded "+binary)
	}
	if err != nil {
		return err
	}
	if cols, err = migrations.Columns(ctx, db, "tags"); err != nil {
		return err
	}
	if !cols["slug"] {
		if err := execDDL(ctx, db, "ALTER TABLE tags ADD COLUMN slug VARCHAR(60) NOT NULL DEFAULT ''"); err != nil {
			return err
		}
	}
	return rekeyTags(ctx, db, bus)
}

// rekeyTags sets folded and slug of every tag from its name, merging the
// tags that share a key; then it publishes TagsMerged on bus (nil: none)
// inside the step, when tags merged.
func rekeyTags(ctx context.Context, db bun.IDB, bus *events.Bus) error {
	var tags []Tag
	if err := db.NewSelect().Model(&tags).OrderExpr("t.id ASC").Scan(ctx); err != nil {
		return fmt.Errorf("read tags: %w", err)
	}
	keeper := map[string]*Tag{}
	var change []*Tag
	merged := map[int64]int64{}
	for i := range tags {
		t := &tags[i]
		k := TagKey(t.Name)
		if first, ok := keeper[k]; ok {
			if err := mergeTag(ctx, db, t.ID, first.ID); err != nil {
				return err
			}
			merged[t.ID] = first.ID
			continue
		}
		keeper[k] = t
		if t.Folded != k || t.Slug != tagSlug(t.Name) {
			change = append(change, t)
		}
	}
	// First move the rows that change out of the way, so that setting one
	// tag's key never meets another's old value in the unique index.
	for _, t := range change {
		if _, err := db.NewUpdate().Model((*Tag)(nil)).Set("folded = ?", "\x01"+strconv.FormatInt(t.ID, 10)).
			Where("id = ?", t.ID).Exec(ctx); err != nil {
			return fmt.Errorf("rekey tag %d: %w", t.ID, err)
		}
	}
	for _, t := range change {
		if _, err := db.NewUpdate().Model((*Tag)(nil)).Set("folded = ?", TagKey(t.Name)).Set("slug = ?", tagSlug(t.Name)).
			Where("id = ?", t.ID).Exec(ctx); err != nil {
			return fmt.Errorf("rekey tag %d: %w", t.ID, err)
		}
	}
	if len(merged) == 0 || bus == nil {
		return nil
	}
	// The step's transaction is the migration runner's: after-commit work
	// has no place here, and TagsMerged's subscribers are all in the step.
	return events.PublishTx(ctx, bus.Wrap(db), TagsMerged, TagMerge{Into: merged})
}

// mergeTag moves every link to tag from onto tag into, then deletes from.
// A link that into already has (a show tagged with both spellings) is
// dropped rather than duplicated.
func mergeTag(ctx context.Context, db bun.IDB, from, into int64) error {
	links, err := tagLinks(ctx, db)
	if err != nil {
		return err
	}
	update := "UPDATE OR IGNORE"
	if app.IsMySQL(db) {
		update = "UPDATE IGNORE"
	}
	for _, l := range links {
		if _, err := db.ExecContext(ctx, update+" ? SET ? = ? WHERE ? = ?", bun.Ident(l.table), bun.Ident(l.column), into, bun.Ident(l.column), from); err != nil {
			return fmt.Errorf("merge tag %d into %d: %s: %w", from, into, l.table, err)
		}
		if _, err := db.ExecContext(ctx, "DELETE FROM ? WHERE ? = ?", bun.Ident(l.table), bun.Ident(l.column), from); err != nil {
			return fmt.Errorf("merge tag %d into %d: %s: %w", from, into, l.table, err)
		}
	}
	if _, err := db.NewDelete().Model((*Tag)(nil)).Where("id = ?", from).Exec(ctx); err != nil {
		return fmt.Errorf("merge tag %d into %d: %w", from, into, err)
	}
	return nil
}

type tagLink struct{ table, column string }

// tagLinks lists the columns of every table with a foreign key to tags(id)
// (user_tags, show_tags, and whatever a module adds), from the schema.
func tagLinks(ctx context.Context, db bun.IDB) ([]tagLink, error) {
	var out []tagLink
	if app.IsMySQL(db) {
		rows, err := db.QueryContext(ctx, `SELECT TABLE_NAME, COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE
			WHERE TABLE_SCHEMA = DATABASE() AND REFERENCED_TABLE_NAME = 'tags' AND REFERENCED_COLUMN_NAME = 'id'`)
		if err != nil {
			return nil, fmt.Errorf("tag links: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var l tagLink
			if err := rows.Scan(&l.table, &l.column); err != nil {
				return nil, fmt.Errorf("tag links: %w", err)
			}
			out = append(out, l)
		}
		return out, rows.Err()
	}
	var tables []string
	if err := db.NewRaw("SELECT name FROM sqlite_master WHERE type = 'table'").Scan(ctx, &tables); err != nil {
		return nil, fmt.Errorf("tag links: %w", err)
	}
	sort.Strings(tables)
	for _, table := range tables {
		var fks []struct {
			Table string `bun:"table"`
			From  string `bun:"from"`
			To    string `bun:"to"`
		}
		if err := db.NewRaw(`SELECT "table", "from", "to" FROM pragma_foreign_key_list(?)`, table).Scan(ctx, &fks); err != nil {
			return nil, fmt.Errorf("tag links of %s: %w", table, err)
		}
		for _, fk := range fks {
			if fk.Table == "tags" && fk.To == "id" {
				out = append(out, tagLink{table, fk.From})
			}
		}
	}
	return out, nil
}

func execDDL(ctx context.Context, db bun.IDB, statement string) error {
	if _, err := db.ExecContext(ctx, statement); err != nil {
		return fmt.Errorf("%s: %w", statement, err)
	}
	return nil
}
