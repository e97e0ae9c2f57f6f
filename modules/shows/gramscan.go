package shows

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sync/errgroup"

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
// has more rows than that is confirmed as before. The optimiser's
// estimate of a gram's rows, a dive into the index at both ends of its
// range, runs about twice the count at ten million shows (sunrise's
// grams: 211,000–224,000 estimated, 100,153 counted), so a gram is read
// when its estimate is at most gramEstimateSlack times the cap, and the
// read gives up past gramScanCap matches. (A variable for the tests.)
var gramScanCap int64 = 200_000

// gramEstimateSlack is how far over gramScanCap an estimate may be for
// the gram's rows to be read.
const gramEstimateSlack = 2

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
// rows are estimated over gramEstimateSlack × gramScanCap (nothing is
// read) or its matches are over gramScanCap (their read is dropped).
//
// A gram estimated in more than gramSplitRows rows is read in
// matchReaders ranges of its show ids at once, so that their pages are
// read from disk together: at ten million shows the 100,000 rows of
// sunrise's gram take about 65 ms so against 105–150 ms in one statement
// after a fresh start (mysql client, the pool emptied first).
func (l *Lister) gramMatches(ctx context.Context, term string, grams []string) (rows []matchRow, ok bool, err error) {
	gram, n, err := l.rarestGram(ctx, grams)
	if err != nil || n > gramEstimateSlack*gramScanCap {
		return nil, false, err
	}
	read := func(ctx context.Context, lo, hi int64) ([]matchRow, error) {
		var part []matchRow
		sel := l.db.NewSelect().TableExpr("show_grams AS g").ColumnExpr("g.show_id AS id, g.start AS start").
			Where("g.gram = ?", gram)
		if hi > 0 {
			sel = sel.Where("g.show_id BETWEEN ? AND ?", lo, hi)
		}
		err := sel.Where("g.public = ?", true).Where("LOWER(g.name) LIKE ? ESCAPE '!'", likeContains(term)).
			Limit(gramScanCap+1).Scan(ctx, &part)
		if err != nil {
			return nil, fmt.Errorf("shows: list: name matches: %w", err)
		}
		return part, nil
	}
	parts := make([][]matchRow, 1)
	var first, last sql.NullInt64
	if n > gramSplitRows {
		err = l.db.NewRaw("SELECT MIN(show_id), MAX(show_id) FROM show_grams WHERE gram = ?", gram).Scan(ctx, &first, &last)
		if err != nil {
			return nil, false, fmt.Errorf("shows: list: name matches: %w", err)
		}
	}
	if span := last.Int64 - first.Int64; first.Valid && last.Valid && span >= matchReaders {
		parts = make([][]matchRow, matchReaders)
		g, gctx := errgroup.WithContext(ctx)
		for i := range parts {
			lo := first.Int64 + span*int64(i)/matchReaders
			hi := first.Int64 + span*int64(i+1)/matchReaders - 1
			if i == len(parts)-1 {
				hi = last.Int64
			}
			g.Go(func() (err error) {
				parts[i], err = read(gctx, lo, hi)
				return err
			})
		}
		err = g.Wait()
	} else {
		parts[0], err = read(ctx, 0, 0)
	}
	if err != nil {
		return nil, false, err
	}
	total := 0
	for _, p := range parts {
		total += len(p)
	}
	if int64(total) > gramScanCap {
		return nil, false, nil
	}
	rows = make([]matchRow, 0, total)
	for _, p := range parts {
		rows = append(rows, p...)
	}
	slices.SortFunc(rows, cmpListOrder)
	return rows, true, nil
}

// gramSplitRows is the estimate of a gram's rows past which gramMatches
// reads them in ranges at once. (A variable for the tests.)
var gramSplitRows int64 = 20_000

// rarestGram returns the gram of grams with the fewest rows in the gram
// table, and that number, as the optimiser estimates them: EXPLAIN of a
// range of the primary key dives into the index at both of its ends, a
// few pages, where a COUNT would read the range.
func (l *Lister) rarestGram(ctx context.Context, grams []string) (string, int64, error) {
	// The estimates are asked at once: after a start each is a few
	// reads from disk.
	counts := make([]int64, len(grams))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(matchReaders)
	for i, gram := range grams {
		g.Go(func() (err error) {
			counts[i], err = l.explainRows(gctx, gram)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return "", 0, err
	}
	best := 0
	for i := range counts {
		if counts[i] < counts[best] {
			best = i
		}
	}
	return grams[best], counts[best], nil
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
