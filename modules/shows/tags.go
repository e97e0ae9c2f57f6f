package shows

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/uptrace/bun"

	"github.com/onair/onair/modules/users"
)

// The tags of shows. A show's tags are rows of show_tags (with a copy of
// its start, for the tag's list order) and, for the lists, a copy of their
// ids in the show's row (Show.TagIDs): a listed show's tags are then read
// from a cache of tags by id (listTags) instead of a join.

// listTags are the tags of listed shows, by id, from a cache bounded to
// maxCachedTags.
type listTags struct {
	db    *bun.DB
	cache *users.TagCache
}

// maxCachedTags bounds the tag cache: 100,000 tags of at most 30
// characters are a few tens of MB at worst.
const maxCachedTags = 100_000

func newListTags(db *bun.DB) *listTags {
	return &listTags{db: db, cache: users.NewTagCache(maxCachedTags)}
}

// attach gives the rows of a page their tags, in the order they were
// given (Show.TagIDs, the order Show.SortTags gives a show read alone).
func (t *listTags) attach(ctx context.Context, rows []listRow) ([]Show, error) {
	var ids []int64
	of := make([][]int64, len(rows))
	seen := make(map[int64]struct{})
	for i := range rows {
		for f := range strings.SplitSeq(rows[i].TagIDs, ",") {
			id, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				continue // no tags ("")
			}
			of[i] = append(of[i], id)
			if _, ok := seen[id]; !ok {
				seen[id] = struct{}{}
				ids = append(ids, id)
			}
		}
	}
	tags, err := t.cache.Get(ctx, t.db, ids)
	if err != nil {
		return nil, fmt.Errorf("shows: list: %w", err)
	}
	list := make([]Show, len(rows))
	for i := range rows {
		sh := rows[i].Show
		sh.Tags = nil
		for _, id := range of[i] {
			if t, ok := tags[id]; ok {
				sh.Tags = append(sh.Tags, t)
			}
		}
		list[i] = sh
	}
	return list, nil
}

// setTags replaces the show's tags with the checked names, and the copy
// of their ids in its row.
func setTags(ctx context.Context, tx bun.IDB, sh *Show, names []string) error {
	if _, err := tx.NewDelete().Model((*ShowTag)(nil)).Where("show_id = ?", sh.ID).Exec(ctx); err != nil {
		return err
	}
	tags, err := users.EnsureTags(ctx, tx, names)
	if err != nil {
		return err
	}
	if err := addTags(ctx, tx, sh, tags); err != nil {
		return err
	}
	sh.TagIDs = tagIDList(tags)
	_, err = tx.NewUpdate().Model(sh).Column("tag_ids").WherePK().Exec(ctx)
	return err
}

// tagIDList is Show.TagIDs of a show tagged with tags.
func tagIDList(tags []users.Tag) string {
	b := make([]byte, 0, 8*len(tags))
	for i, t := range tags {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, t.ID, 10)
	}
	return string(b)
}

// fillTagIDs writes every show's Show.TagIDs from show_tags, a range of
// ids at a time (migration 0032, and after a tag merge).
func fillTagIDs(ctx context.Context, db bun.IDB) error {
	var last int64
	if err := db.NewSelect().Model((*Show)(nil)).ColumnExpr("COALESCE(MAX(id), 0)").Scan(ctx, &last); err != nil {
		return fmt.Errorf("shows: fill tag ids: %w", err)
	}
	const batch = 10_000
	for lo := int64(0); lo < last; lo += batch {
		_, err := db.NewUpdate().Model((*Show)(nil)).
			Set("tag_ids = COALESCE((SELECT GROUP_CONCAT(st.tag_id) FROM show_tags AS st WHERE st.show_id = s.id), '')").
			Where("s.id > ? AND s.id <= ?", lo, lo+batch).Exec(ctx)
		if err != nil {
			return fmt.Errorf("shows: fill tag ids: %w", err)
		}
	}
	return nil
}

// addTags links a show that has no tags yet to tags (its Show.TagIDs is
// the caller's to write).
func addTags(ctx context.Context, tx bun.IDB, sh *Show, tags []users.Tag) error {
	if len(tags) == 0 {
		return nil
	}
	rows := make([]ShowTag, 0, len(tags))
	for _, t := range tags {
		rows = append(rows, ShowTag{ShowID: sh.ID, TagID: t.ID, Start: sh.Start})
	}
	_, err := tx.NewInsert().Model(&rows).Exec(ctx)
	return err
}

// syncTagStart keeps the copy of start in show_tags in step.
func syncTagStart(ctx context.Context, tx bun.IDB, sh *Show) error {
	_, err := tx.NewUpdate().Model((*ShowTag)(nil)).Set("start = ?", sh.Start).Where("show_id = ?", sh.ID).Exec(ctx)
	return err
}
