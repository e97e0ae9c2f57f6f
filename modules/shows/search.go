package shows

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
)

// ShowGram is one trigram of a show's lower-cased name. The grams are the
// index behind the name filter: "name contains X" is a substring match that
// no B-tree index serves, so GET /shows?filter=X first finds the shows whose
// names hold every trigram of X (an index range per gram), then checks the
// substring on those rows only, instead of scanning every show.
//
// Each gram row also carries what a name-only list reads of its show: the
// name, the start (the sort key) and whether the show is public. A term's
// public matches are then read from the rows of one of its grams, one
// range of the primary key, where the LIKE confirms each on the copy of
// the name, instead of one read of the name cover index per candidate
// (matches.go, gramMatches). The copies follow the show: a rename
// rewrites its grams, a change of start or visibility updates them
// (syncGramKeys).
type ShowGram struct {
	bun.BaseModel `bun:"table:show_grams"`

	Gram   string    `bun:"gram,pk,type:varchar(16)"`
	ShowID int64     `bun:"show_id,pk"`
	Name   string    `bun:"name,notnull,type:varchar(100),default:''"`
	Start  time.Time `bun:"start,nullzero"`
	// Public is private = false AND off = false.
	Public bool `bun:"public,notnull,default:false"`
}

// gramLen is the length, in characters, of an indexed gram.
const gramLen = 3

// NameGrams returns the distinct trigrams of a lower-cased name, sorted.
// A name shorter than three characters has none.
func NameGrams(name string) []string {
	r := []rune(strings.ToLower(name))
	seen := map[string]bool{}
	var out []string
	for i := 0; i+gramLen <= len(r); i++ {
		g := string(r[i : i+gramLen])
		if !seen[g] {
			seen[g] = true
			out = append(out, g)
		}
	}
	sort.Strings(out)
	return out
}

// setGrams replaces the grams of a show after its name changed (MySQL;
// on SQLite the FTS5 index follows by itself, fts.go).
func setGrams(ctx context.Context, tx bun.IDB, sh *Show) error {
	if !app.IsMySQL(tx) {
		return nil
	}
	if _, err := tx.NewDelete().Model((*ShowGram)(nil)).Where("show_id = ?", sh.ID).Exec(ctx); err != nil {
		return fmt.Errorf("shows: grams of %d: %w", sh.ID, err)
	}
	return addGrams(ctx, tx, sh)
}

// addGrams indexes the name of a show that has no grams yet. (A new show
// skips setGrams's delete: on MySQL, two deletes of nothing take the same
// gap lock, and the two inserts after them deadlock.)
func addGrams(ctx context.Context, tx bun.IDB, sh *Show) error {
	grams := NameGrams(sh.Name)
	if len(grams) == 0 || !app.IsMySQL(tx) {
		return nil
	}
	rows := make([]ShowGram, len(grams))
	for i, g := range grams {
		rows[i] = ShowGram{Gram: g, ShowID: sh.ID, Name: sh.Name, Start: sh.Start, Public: sh.public()}
	}
	// Ignore: under MySQL's accent-insensitive collation "afé" and "afe"
	// are one key, and one row serves both (LIKE checks the exact text).
	if _, err := tx.NewInsert().Model(&rows).Ignore().Exec(ctx); err != nil {
		return fmt.Errorf("shows: grams of %d: %w", sh.ID, err)
	}
	return nil
}

// syncGramKeys copies a show's start and visibility into its gram rows
// (MySQL), in the transaction of the change that moved them (record).
func syncGramKeys(ctx context.Context, tx bun.IDB, sh *Show) error {
	if !app.IsMySQL(tx) {
		return nil
	}
	_, err := tx.NewUpdate().Model((*ShowGram)(nil)).Set("start = ?", sh.Start).Set("public = ?", sh.public()).
		Where("show_id = ?", sh.ID).Exec(ctx)
	if err != nil {
		return fmt.Errorf("shows: grams of %d: %w", sh.ID, err)
	}
	return nil
}

// whereNameContains adds the name filter: the gram index (MySQL) or the
// FTS5 trigram index (SQLite, fts.go) narrows the rows when the term has
// three characters or more (and useGrams), and LIKE checks the exact
// substring (shorter terms can only scan).
func whereNameContains(sel *bun.SelectQuery, term string, useGrams bool) *bun.SelectQuery {
	grams := NameGrams(term)
	switch {
	case !useGrams || len(grams) == 0:
	case !app.IsMySQL(sel.DB()):
		sel = sel.Where("s.id IN (SELECT rowid FROM ? WHERE ? MATCH ?)", bun.Ident(nameFTSTable), bun.Ident(nameFTSTable), ftsPhrase(term))
	default:
		sel = sel.Where("s.id IN (SELECT g.show_id FROM show_grams AS g WHERE g.gram IN (?) GROUP BY g.show_id HAVING COUNT(*) = ?)",
			bun.List(grams), len(grams))
	}
	return sel.Where("LOWER(s.name) LIKE ? ESCAPE '!'", likeContains(term))
}

// nameCoverIndex holds, in id order, the name and every column a list's
// WHERE and ORDER BY read. The gram index gives the ids of the candidate
// names; each is then confirmed (LIKE), its visibility and filters checked
// and its sort key read in this index, a few dozen bytes an entry that
// stay in memory, instead of in the table's rows, which do not: at a
// million shows that is 0.12 s against 0.6 s for a term in 10,000 names.
// MySQL's optimiser prefers the primary key for the id lookups, so the
// name filter names the index (listFrom).
const nameCoverIndex = "shows_name_cover_idx"

// userCoverIndex holds one owner's shows in list order with every column
// a list's WHERE reads: an owner's list (or a viewer's own hidden shows)
// is paged and counted in it alone. MariaDB would pick it too, but only
// after weighing the five indexes that start with or hold user_id, which
// costs an owner's list about 0.05 of its 0.7 ms (mariadb-slap, 1M
// shows); the owner's list without a tag, name or slug filter names it.
const userCoverIndex = "shows_user_cover_idx"

// listFrom starts a list query (the page of ids or the count) on shows.
func (l *Lister) listFrom(q ListQuery, vis visibility) *bun.SelectQuery {
	sel := l.db.NewSelect().Model((*Show)(nil))
	if !app.IsMySQL(l.db) {
		return sel
	}
	switch {
	case q.UserID == 0 && vis != seeHidden && len(NameGrams(q.Filter)) > 0:
		sel = sel.ModelTableExpr("? AS s FORCE INDEX (?)", bun.Ident("shows"), bun.Ident(nameCoverIndex))
	case q.UserID != 0 && q.Tag == "" && q.Filter == "" && q.Slug == "":
		sel = sel.ModelTableExpr("? AS s FORCE INDEX (?)", bun.Ident("shows"), bun.Ident(userCoverIndex))
	}
	return sel
}

// backfillGrams indexes the names of shows created before the gram table
// existed, a batch at a time.
func backfillGrams(ctx context.Context, db bun.IDB) error {
	var last int64
	for {
		var batch []Show
		err := db.NewSelect().Model(&batch).Column("id", "name", "start", "private", "off").Where("id > ?", last).OrderExpr("id ASC").Limit(1000).Scan(ctx)
		if err != nil {
			return fmt.Errorf("shows: backfill grams: %w", err)
		}
		if len(batch) == 0 {
			return nil
		}
		var rows []ShowGram
		for _, sh := range batch {
			for _, g := range NameGrams(sh.Name) {
				rows = append(rows, ShowGram{Gram: g, ShowID: sh.ID, Name: sh.Name, Start: sh.Start, Public: sh.public()})
			}
			last = sh.ID
		}
		if len(rows) > 0 {
			if _, err := db.NewInsert().Model(&rows).Ignore().Exec(ctx); err != nil {
				return fmt.Errorf("shows: backfill grams: %w", err)
			}
		}
	}
}
