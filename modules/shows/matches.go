package shows

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/uptrace/bun"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/singleflight"

	"github.com/onair/onair/app"
)

// Name filter results (docs/shows.md, "Indexes"). A name filter's cost is
// confirming its candidates, once for the count and once more for the
// page. For a term of three characters or more whose public matches number
// at most matchCap, List instead reads every public match's sort key in one
// pass, and keeps that list per node, tagged with the data generation
// (keyset.go): while no show changes, the count and any page of the term
// come from memory, exact; the first show change makes the next request
// read them again. The viewer's own private and off matches are read
// apart (user index) and merged in list order.

const matchEntries = 32

// matchCap is a variable for the tests.
var matchCap = 20_000

type matchRow struct {
	ID    int64     `bun:"id"`
	Start time.Time `bun:"start"`
}

type matchSet struct {
	gen  int64
	rows []matchRow // public matches in list order; nil: over matchCap
}

type matchCache struct {
	mu sync.Mutex
	m  map[string]matchSet
	// flight makes the requests that miss the same term at the same
	// generation wait for one read of its matches instead of each
	// running it: after a show change, every concurrent request of a
	// popular term would otherwise read its thousands of candidates.
	flight singleflight.Group
}

func (c *matchCache) get(key string, gen int64) (matchSet, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	return e, ok && e.gen == gen
}

func (c *matchCache) put(key string, e matchSet) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= matchEntries {
		c.m = make(map[string]matchSet)
	}
	c.m[key] = e
}

// readMatches reads the public matches of f's term at generation gen
// (nameMatches) once for every request that misses the cache at once,
// and keeps them.
func (l *Lister) readMatches(ctx context.Context, f *listFilter, key string, gen int64) (matchSet, error) {
	// The read is shared: it runs detached from the request that
	// happens to start it, so that one's cancellation does not
	// fail the others.
	shared := context.WithoutCancel(ctx)
	v, err, _ := l.matches.flight.Do(strconv.FormatInt(gen, 10)+"|"+key, func() (any, error) {
		if set, ok := l.matches.get(key, gen); ok {
			return set, nil
		}
		set := matchSet{gen: gen}
		rows, whole, err := l.publicMatches(shared, f)
		if err != nil {
			return nil, err
		}
		if len(rows) <= matchCap {
			set.rows = rows
		} else if whole {
			// Every match, too many to keep: this request's only.
			return matchSet{gen: gen, rows: rows}, nil
		}
		l.matches.put(key, set)
		return set, nil
	})
	if err != nil {
		return matchSet{}, err
	}
	return v.(matchSet), nil
}

// nameMatches answers a name-filtered list of a viewer from the term's
// public matches (above). done is false when the list is not one it
// serves (no filter, a term under three characters, one owner's list,
// scheduled=true, the system's view) or has more than matchCap public
// matches; List then counts and pages as for any list.
func (l *Lister) nameMatches(ctx context.Context, f *listFilter) (int, []int64, bool, error) {
	q := f.q
	if q.Viewer == nil || q.UserID != 0 || len(NameGrams(q.Filter)) == 0 || (q.Scheduled != nil && *q.Scheduled) {
		return 0, nil, false, nil
	}
	gen, err := l.Generation(ctx)
	if err != nil {
		return 0, nil, false, err
	}
	pq := q
	pq.Viewer = nil
	key := pq.pageKey(f.tagID)
	var own []matchRow
	set, hit := l.matches.get(key, gen)
	if hit {
		if set.rows == nil {
			return 0, nil, false, nil
		}
		if own, err = l.matchRows(ctx, f, seeHidden, 0); err != nil {
			return 0, nil, false, err
		}
	} else {
		// A miss reads the public matches, from disk after a start: the
		// viewer's own hidden shows are read beside them.
		type ownRows struct {
			rows []matchRow
			err  error
		}
		ownc := make(chan ownRows, 1)
		go func() {
			rows, err := l.matchRows(ctx, f, seeHidden, 0)
			ownc <- ownRows{rows, err}
		}()
		set, err = l.readMatches(ctx, f, key, gen)
		o := <-ownc
		if err != nil {
			return 0, nil, false, err
		}
		if set.rows == nil {
			return 0, nil, false, nil
		}
		if o.err != nil {
			return 0, nil, false, o.err
		}
		own = o.rows
	}
	// The viewer's own hidden shows are not public; one that is in the
	// public matches all the same (a gram row's stale copy of its
	// visibility, gramscan.go) is counted and listed once.
	public := set.rows
	if len(own) > 0 {
		hidden := make(map[int64]bool, len(own))
		for _, r := range own {
			hidden[r.ID] = true
		}
		for _, r := range set.rows {
			if hidden[r.ID] {
				public = slices.DeleteFunc(slices.Clone(set.rows), func(r matchRow) bool { return hidden[r.ID] })
				break
			}
		}
	}
	count := len(public) + len(own)
	lo, hi := q.Page.Offset(), q.Page.Offset()+q.Page.Size
	var ids []int64
	i, j := 0, 0
	for n := 0; n < hi && (i < len(public) || j < len(own)); n++ {
		var r matchRow
		if j >= len(own) || (i < len(public) && before(public[i], own[j])) {
			r, i = public[i], i+1
		} else {
			r, j = own[j], j+1
		}
		if n >= lo {
			ids = append(ids, r.ID)
		}
	}
	return count, ids, true, nil
}

// before tells whether a comes first in list order (start, then id, newest
// first).
func before(a, b matchRow) bool {
	if !a.Start.Equal(b.Start) {
		return a.Start.After(b.Start)
	}
	return a.ID > b.ID
}

// A list filtered on the name alone skips this: its matches come from
// the rows of one gram (gramscan.go). Confirming a name's candidates
// reads, for each, its entry in the name
// cover index (nameCoverIndex): one page a candidate, which after a
// restart or on a buffer pool smaller than the index is a read from disk.
// One statement reads them one after the other; on MySQL publicMatches
// reads the candidates' ids from the gram index first, and confirms them
// in id order in chunks of matchChunk on matchReaders connections at once,
// so that the reads wait on the disk together: the first request of
// ?filter=sunrise at a million shows (about 10,000 candidates, 2,900 of the
// index's 3,600 pages) waits for a quarter of the reads.
const matchReaders = 4

// matchChunk and matchCandidates are variables for the tests.
var (
	matchChunk = 500
	// matchCandidates caps the candidates read this way; a term with
	// more is read in one statement as before (its matches are likely
	// over matchCap: its list is then counted and paged as any).
	matchCandidates = 2 * matchCap
)

// publicMatches reads the sort keys of every public match of f's name
// filter, in list order. whole tells that rows are every match however
// many (gramMatches); otherwise (matchRows with seePublic and a limit of
// matchCap+1) rows over matchCap are a part, which the caller does not use.
func (l *Lister) publicMatches(ctx context.Context, f *listFilter) (rows []matchRow, whole bool, err error) {
	grams := NameGrams(f.q.Filter)
	if !app.IsMySQL(l.db) || len(grams) == 0 {
		rows, err = l.matchRows(ctx, f, seePublic, matchCap+1)
		return rows, false, err
	}
	if nameOnly(f) {
		if rows, ok, err := l.gramMatches(ctx, f.q.Filter, grams); err != nil || ok {
			return rows, ok, err
		}
	}
	rows, err = l.confirmedMatches(ctx, f, grams)
	return rows, false, err
}

// confirmedMatches reads the public matches of f's name filter on MySQL
// as publicMatches does when the list has other filters than the name:
// the candidates from the gram index, confirmed in the name cover index.
func (l *Lister) confirmedMatches(ctx context.Context, f *listFilter, grams []string) ([]matchRow, error) {
	var ids []int64
	err := l.db.NewSelect().TableExpr("show_grams AS g").ColumnExpr("g.show_id").
		Where("g.gram IN (?)", bun.List(grams)).GroupExpr("g.show_id").Having("COUNT(*) = ?", len(grams)).
		Limit(int64(matchCandidates)+1).Scan(ctx, &ids)
	if err != nil {
		return nil, fmt.Errorf("shows: list: name candidates: %w", err)
	}
	if len(ids) > matchCandidates {
		return l.matchRows(ctx, f, seePublic, matchCap+1)
	}
	slices.Sort(ids)
	// The list's filters but the name's, which is the candidates' ids and
	// the LIKE (whereNameContains).
	q := f.q
	q.Filter = ""
	parts := make([][]matchRow, (len(ids)+matchChunk-1)/matchChunk)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(matchReaders)
	for i := range parts {
		chunk := ids[i*matchChunk : min((i+1)*matchChunk, len(ids))]
		g.Go(func() error {
			sel := filtered(l.listFrom(f.q, seePublic), q, f.tagID, f.now, seePublic)
			sel = whereNameContains(sel.Where("s.id IN (?)", bun.List(chunk)), f.q.Filter, false)
			rows, err := scanMatches(gctx, sel, f)
			parts[i] = rows
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	rows := make([]matchRow, 0, len(ids)) // not nil: nil is "over matchCap"
	for _, p := range parts {
		rows = append(rows, p...)
	}
	slices.SortFunc(rows, cmpListOrder)
	return rows, nil
}

// matchRows reads the sort keys of the list's rows visible as vis, in list
// order (when limit > 0, at most limit of them, any: a caller that gets
// limit rows does not use them).
func (l *Lister) matchRows(ctx context.Context, f *listFilter, vis visibility, limit int) ([]matchRow, error) {
	sel := l.selectFor(f, vis)
	if limit > 0 {
		sel = sel.Limit(int64(limit))
	}
	rows, err := scanMatches(ctx, sel, f)
	if err != nil {
		return nil, err
	}
	// Sorted here: MySQL's sort of the matches costs more than reading
	// them (0.30 s against 0.11 s for 10,000 at a million shows).
	slices.SortFunc(rows, cmpListOrder)
	return rows, nil
}

// scanMatches reads the id and start of sel's rows.
func scanMatches(ctx context.Context, sel *bun.SelectQuery, f *listFilter) ([]matchRow, error) {
	if f.tagID != 0 {
		sel = sel.ColumnExpr("st.show_id AS id, st.start AS start")
	} else {
		sel = sel.ColumnExpr("s.id AS id, s.start AS start")
	}
	rows := []matchRow{}
	if err := sel.Scan(ctx, &rows); err != nil {
		return nil, fmt.Errorf("shows: list: name matches: %w", err)
	}
	return rows, nil
}

// cmpListOrder compares two rows in list order, for slices.SortFunc.
func cmpListOrder(a, b matchRow) int {
	if c := b.Start.Compare(a.Start); c != 0 {
		return c
	}
	return cmp.Compare(b.ID, a.ID)
}
