package shows

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
	"github.com/onair/onair/migrations"
)

// ShowCount is one row of the maintained counts behind the lists' `count`
// and `pages` (docs/shows.md, "Counts"): how many shows have exactly these
// state flags, over every show (TagID 0) or over the shows of one tag. Every
// change of a show moves the rows of its old and new state in the change's
// own transaction, so a list's count is a SUM over at most a few dozen rows
// instead of a COUNT(*) over the shows it matches, and it is exact at every
// commit.
//
// The flags are the columns of shows that the list filters and the
// visibility rule test, under the same names and the same alias, so a list's
// WHERE clause applies to this table as it is (filtered).
type ShowCount struct {
	bun.BaseModel `bun:"table:show_counts,alias:s"`

	TagID    int64 `bun:"tag_id,pk"`
	Live     bool  `bun:"live,pk"`
	Complete bool  `bun:"complete,pk"`
	Archive  bool  `bun:"archive,pk"`
	Featured bool  `bun:"featured,pk"`
	Radio    bool  `bun:"radio,pk"`
	Private  bool  `bun:"private,pk"`
	Off      bool  `bun:"off,pk"`
	N        int64 `bun:"n,notnull,default:0"`
}

// countFlags are the counted flags of a show, in ShowCount's column order.
type countFlags [7]bool

var countColumns = []string{"live", "complete", "archive", "featured", "radio", "private", "off"}

// countState is what a show contributes to show_counts: its flags under
// tag 0 and under each of its tags. A zero countState is "no show" (before
// a create, after a delete).
type countState struct {
	exists bool
	flags  countFlags
	tags   []int64
	// start is not counted: record compares it, with the visibility
	// flags, to know whether the show's gram rows need them again
	// (syncGramKeys).
	start time.Time
}

// public tells whether the show was public (private and off false; the
// flags are in countColumns' order).
func (st countState) public() bool { return !st.flags[5] && !st.flags[6] }

func flagsOf(sh *Show) countFlags {
	return countFlags{sh.Live, sh.Complete, sh.Archive, sh.Featured, sh.Radio, sh.Private, sh.Off}
}

// countSnapshot reads, inside a change's transaction and after the show's row
// is locked, what the show contributes before the change.
func countSnapshot(ctx context.Context, tx bun.IDB, sh *Show) (countState, error) {
	st := countState{exists: true, flags: flagsOf(sh), start: sh.Start}
	err := tx.NewSelect().Model((*ShowTag)(nil)).Column("tag_id").Where("show_id = ?", sh.ID).Scan(ctx, &st.tags)
	if err != nil {
		return st, fmt.Errorf("shows: counts: tags of %d: %w", sh.ID, err)
	}
	return st, nil
}

type countKey struct {
	tag   int64
	flags countFlags
}

func (k countKey) less(o countKey) int {
	if k.tag != o.tag {
		if k.tag < o.tag {
			return -1
		}
		return 1
	}
	for i := range k.flags {
		if k.flags[i] != o.flags[i] {
			if !k.flags[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}

// countDeltas is the change of show_counts from before to after, sorted by
// key (so concurrent changes lock the rows they share in one order), with
// the keys whose rows do not move left out.
func countDeltas(before, after countState) ([]countKey, []int64) {
	d := map[countKey]int64{}
	add := func(st countState, sign int64) {
		if !st.exists {
			return
		}
		d[countKey{0, st.flags}] += sign
		for _, t := range st.tags {
			d[countKey{t, st.flags}] += sign
		}
	}
	add(before, -1)
	add(after, 1)
	keys := make([]countKey, 0, len(d))
	for k, n := range d {
		if n != 0 {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, countKey.less)
	ns := make([]int64, len(keys))
	for i, k := range keys {
		ns[i] = d[k]
	}
	return keys, ns
}

// moveCounts applies the change of one show from before to after to
// show_counts, in tx: one upsert statement for every row that moves.
func moveCounts(ctx context.Context, tx bun.IDB, before, after countState) error {
	keys, ns := countDeltas(before, after)
	if len(keys) == 0 {
		return nil
	}
	return upsertCounts(ctx, tx, keys, ns)
}

func upsertCounts(ctx context.Context, tx bun.IDB, keys []countKey, ns []int64) error {
	mysql := app.IsMySQL(tx)
	q := func(c string) string {
		if mysql {
			return "`" + c + "`"
		}
		return `"` + c + `"`
	}
	cols := make([]string, 0, len(countColumns)+1)
	cols = append(cols, q("tag_id"))
	for _, c := range countColumns {
		cols = append(cols, q(c))
	}
	var b strings.Builder
	b.WriteString("INSERT INTO show_counts (" + strings.Join(cols, ", ") + ", n) VALUES ")
	args := make([]any, 0, len(keys)*9)
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?, ?, ?, ?, ?, ?, ?, ?, ?)")
		args = append(args, k.tag)
		for _, f := range k.flags {
			args = append(args, f)
		}
		args = append(args, ns[i])
	}
	if mysql {
		b.WriteString(" ON DUPLICATE KEY UPDATE n = n + VALUES(n)")
	} else {
		b.WriteString(" ON CONFLICT (" + strings.Join(cols, ", ") + ") DO UPDATE SET n = n + excluded.n")
	}
	if _, err := tx.ExecContext(ctx, b.String(), args...); err != nil {
		return fmt.Errorf("shows: counts: %w", err)
	}
	return nil
}

// RebuildCounts recomputes show_counts from shows and show_tags, in one
// transaction. Migration 0019 runs it once; it is also for data loaded
// around the service (a tag merge, a restore). On MySQL at millions of
// shows its join of show_tags to shows is a random read per tagged show
// once the tables outgrow the buffer pool (10M shows with MariaDB's
// default 128 MB: over 9 minutes at ~10,000 page reads a second, and far
// from done); a loader that knows what it wrote gives the rows to
// ReplaceCounts instead.
func RebuildCounts(ctx context.Context, db bun.IDB) error {
	flags := strings.Join(prefixed("s.", countColumns), ", ")
	err := replaceCounts(ctx, db, func(ctx context.Context, tx bun.IDB) error {
		cols := "tag_id, " + strings.Join(quoted(tx, countColumns), ", ") + ", n"
		if _, err := tx.ExecContext(ctx, "INSERT INTO show_counts ("+cols+") SELECT 0, "+flags+", COUNT(*) FROM shows AS s GROUP BY "+flags); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, "INSERT INTO show_counts ("+cols+") SELECT st.tag_id, "+flags+", COUNT(*) FROM show_tags AS st JOIN shows AS s ON s.id = st.show_id GROUP BY st.tag_id, "+flags)
		return err
	})
	if err != nil {
		return fmt.Errorf("shows: rebuild counts: %w", err)
	}
	return nil
}

// ReplaceCounts makes rows the whole of show_counts, for a loader that
// wrote shows and show_tags around the service and counted them as it
// went (bench/shows's seed): the same result as RebuildCounts without
// reading the shows again. Rows with N 0 are left out; each key must come
// once. Like RebuildCounts it runs in one transaction and moves the lists'
// data generation.
func ReplaceCounts(ctx context.Context, db bun.IDB, rows []ShowCount) error {
	keep := make([]ShowCount, 0, len(rows))
	for _, r := range rows {
		if r.N != 0 {
			keep = append(keep, r)
		}
	}
	err := replaceCounts(ctx, db, func(ctx context.Context, tx bun.IDB) error {
		for rest := keep; len(rest) > 0; {
			batch := rest[:min(len(rest), 500)]
			if _, err := tx.NewInsert().Model(&batch).Exec(ctx); err != nil {
				return err
			}
			rest = rest[len(batch):]
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("shows: replace counts: %w", err)
	}
	return nil
}

// replaceCounts empties show_counts, lets fill write it and moves the
// lists' data generation (keyset.go), once that table exists: what the
// nodes keep of the lists (page boundaries, name matches, cached answers)
// is then read again. It runs in one transaction: on MySQL, changes that
// reach show_counts while it runs wait for it (it holds the rows it
// replaces).
func replaceCounts(ctx context.Context, db bun.IDB, fill func(context.Context, bun.IDB) error) error {
	run := func(ctx context.Context, tx bun.IDB) error {
		if _, err := tx.NewDelete().Model((*ShowCount)(nil)).Where("1 = 1").Exec(ctx); err != nil {
			return err
		}
		if err := fill(ctx, tx); err != nil {
			return err
		}
		if ok, err := migrations.TableExists(ctx, tx, "show_generation"); err != nil || !ok {
			return err
		}
		return bumpGeneration(ctx, tx)
	}
	if tx, ok := db.(bun.Tx); ok {
		return run(ctx, tx)
	} else if d, ok := db.(*bun.DB); ok {
		return d.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error { return run(ctx, tx) })
	}
	return run(ctx, db)
}

func prefixed(p string, cols []string) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = p + c
	}
	return out
}

func quoted(db bun.IDB, cols []string) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		if app.IsMySQL(db) {
			out[i] = "`" + c + "`"
		} else {
			out[i] = `"` + c + `"`
		}
	}
	return out
}

// countable tells whether the maintained counts answer q: every filter is
// one of the counted flags (or a tag), and the visibility is one the flags
// express (everyone's public shows, or every show). Name, slug and time
// filters, one owner's shows and scheduled=true (which depends on the
// clock, not on a flag: see docs/shows.md) are counted on the indexes.
func (q ListQuery) countable(vis visibility) bool {
	return q.Filter == "" && q.Slug == "" && q.From == nil && q.To == nil && q.UserID == 0 &&
		(q.Scheduled == nil || !*q.Scheduled) && (vis == seeAll || vis == seePublic)
}

// countFromSummary sums the show_counts rows that match q.
func (l *Lister) countFromSummary(ctx context.Context, f *listFilter, vis visibility) (int, error) {
	var n int64
	if err := l.summaryQuery(f, vis).Scan(ctx, &n); err != nil {
		return 0, fmt.Errorf("shows: list: count: %w", err)
	}
	return int(n), nil
}

// summaryQuery is the SUM over the show_counts rows that match q.
func (l *Lister) summaryQuery(f *listFilter, vis visibility) *bun.SelectQuery {
	sel := l.db.NewSelect().Model((*ShowCount)(nil)).ColumnExpr("COALESCE(SUM(s.n), 0)").Where("s.tag_id = ?", f.tagID)
	q := f.q
	q.UserID, q.Viewer = 0, nil
	return filtered(sel, q, 0, f.now, vis)
}
