package shows

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/onair/onair/app"
)

// A name-only list's public matches on MySQL (docs/shows.md, "Indexes").
// Every show whose name holds the term holds each of its trigrams, so the
// rows of any one gram of the term are a superset of its matches; and the
// gram rows carry the show's name, start and visibility (ShowGram). One
// statement reads the rows of the term's rarest gram, a range of the
// gram table's primary key that lies on a few neighbouring pages, and the
// LIKE of every list decides on the copy of the name: the matches and
// their sort keys without a read per candidate. At a million shows the
// first ?filter=sunrise after a fresh start read 2,900 pages of the name
// cover index, one disk read each; its gram's rows are some sixty pages.

// gramScanCap bounds the rows gramMatches reads: a term whose rarest gram
// is estimated in more rows than that is confirmed as before. (A
// variable for the tests.)
var gramScanCap int64 = 200_000

// nameOnly tells whether f's list filters on the name and nothing the
// gram rows do not carry (the public part of a viewer's list; the
// viewer's own shows are read apart).
func nameOnly(f *listFilter) bool {
	q := f.q
	return f.tagID == 0 && q.Slug == "" && q.From == nil && q.To == nil && q.Scheduled == nil && !q.RanOnly &&
		q.Live == nil && q.Archive == nil && q.Featured == nil && q.Radio == nil && q.Off == nil
}

// gramMatches reads every public show whose name holds term, in list
// order, from the rows of its rarest gram; ok is false when that gram's
// rows are estimated over gramScanCap (nothing is read).
func (l *Lister) gramMatches(ctx context.Context, term string, grams []string) (rows []matchRow, ok bool, err error) {
	gram, n, err := l.rarestGram(ctx, grams)
	if err != nil || n > gramScanCap {
		return nil, false, err
	}
	rows = []matchRow{}
	err = l.db.NewSelect().TableExpr("show_grams AS g").ColumnExpr("g.show_id AS id, g.start AS start").
		Where("g.gram = ?", gram).Where("g.public = ?", true).
		Where("LOWER(g.name) LIKE ? ESCAPE '!'", likeContains(term)).Scan(ctx, &rows)
	if err != nil {
		return nil, false, fmt.Errorf("shows: list: name matches: %w", err)
	}
	slices.SortFunc(rows, cmpListOrder)
	return rows, true, nil
}

// rarestGram returns the gram of grams with the fewest rows in the gram
// table, and that number, as the optimiser estimates them: EXPLAIN of a
// range of the primary key dives into the index at both of its ends, a
// few pages, where a COUNT would read the range.
func (l *Lister) rarestGram(ctx context.Context, grams []string) (string, int64, error) {
	best, fewest := grams[0], int64(-1)
	for _, g := range grams {
		n, err := l.explainRows(ctx, g)
		if err != nil {
			return "", 0, err
		}
		if fewest < 0 || n < fewest {
			best, fewest = g, n
		}
	}
	return best, fewest, nil
}

// explainRows is the optimiser's estimate of the gram rows of gram.
func (l *Lister) explainRows(ctx context.Context, gram string) (int64, error) {
	rs, err := l.db.QueryContext(ctx, "EXPLAIN SELECT show_id FROM show_grams WHERE gram = ?", gram)
	if err != nil {
		return 0, fmt.Errorf("shows: list: gram estimate: %w", err)
	}
	defer rs.Close()
	cols, err := rs.Columns()
	if err != nil {
		return 0, fmt.Errorf("shows: list: gram estimate: %w", err)
	}
	at := slices.Index(cols, "rows")
	if at < 0 || !rs.Next() {
		return 0, fmt.Errorf("shows: list: gram estimate: no rows column in %v", cols)
	}
	vals := make([]sql.NullString, len(cols))
	dest := make([]any, len(cols))
	for i := range vals {
		dest[i] = &vals[i]
	}
	if err := rs.Scan(dest...); err != nil {
		return 0, fmt.Errorf("shows: list: gram estimate: %w", err)
	}
	// NULL: the optimiser saw no row (an impossible WHERE).
	n, _ := strconv.ParseInt(vals[at].String, 10, 64)
	return n, rs.Close()
}

// likeContains is the LIKE pattern of a name filter: the term lower-cased,
// its wildcards escaped with '!'.
func likeContains(term string) string {
	return "%" + app.EscapeLike(strings.ToLower(term)) + "%"
}
