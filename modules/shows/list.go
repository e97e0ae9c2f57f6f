package shows

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
)

// PageSize of GET /shows and GET /users/:id/shows.
const PageSize = 50

// ListQuery are the filters of the show lists. A nil boolean is "either".
type ListQuery struct {
	// Viewer sees public shows plus their own private and off ones; nil is
	// the system and sees every show.
	Viewer *app.Principal
	// UserID restricts the list to one owner (0: every user).
	UserID int64
	// Filter: name contains, case-insensitive. Slug: exactly this slug,
	// case-insensitive (app.SlugQuery). Tag: tagged with the tag that has
	// this slug, else this text (users.FindTag; blank is no filter).
	Filter, Slug, Tag string
	// From and To bound start: From <= start < To.
	From, To *time.Time
	// Scheduled true: start in the future and not yet live; false: complete.
	Scheduled                      *bool
	Live, Archive, Featured, Radio *bool
	// Off filters on the staff's take-down (the console; the API has no
	// such filter, since off shows are hidden from everyone else anyway).
	Off *bool
	// RanOnly leaves scheduled and pending shows out unless Scheduled is
	// set (the default of GET /users/:id/shows).
	RanOnly bool
	Page    app.Page
}

// List returns a page of shows, newest start first (then highest id), with
// owners and tags loaded, and the number of shows in the whole result set.
func (l *Lister) List(ctx context.Context, q ListQuery) ([]Show, int, error) {
	f, err := l.resolve(ctx, q, l.clock.Stamp())
	if err != nil {
		return nil, 0, err
	}
	return l.read(ctx, f)
}

// read reads the page of f's list and the size of its whole result set:
// from a name filter's matches, in one statement for one owner's shows,
// or counted and paged.
func (l *Lister) read(ctx context.Context, f *listFilter) ([]Show, int, error) {
	if f.none {
		return nil, 0, nil
	}
	q := f.q
	count, ids, done, err := l.nameMatches(ctx, f)
	if err != nil {
		return nil, 0, err
	}
	if done {
		if len(ids) == 0 {
			return nil, count, nil
		}
		rows, err := l.loadPage(ctx, bun.List(ids), len(ids))
		if err != nil {
			return nil, 0, err
		}
		byID := make(map[int64]*Show, len(rows))
		for i := range rows {
			byID[rows[i].ID] = &rows[i]
		}
		list := make([]Show, 0, len(ids))
		for _, id := range ids {
			// The matches may come from the gram rows' copies of the
			// show's visibility (gramscan.go); the row itself decides,
			// so a copy a node of an older release left stale (it
			// writes no copies) never shows a private show.
			if sh, ok := byID[id]; ok && canView(sh, q.Viewer) {
				list = append(list, *sh)
			}
		}
		return list, count, nil
	}
	if q.UserID != 0 && q.Page.Number < seekMinPage {
		// One owner's shows are few: the page and their count in one
		// statement. A page that comes out empty says nothing of the
		// count, which is then read on its own.
		list, count, err := l.ownerPage(ctx, f)
		if err != nil || len(list) > 0 {
			return list, count, err
		}
	}
	if count, err = l.count(ctx, f); err != nil {
		return nil, 0, err
	}
	if count == 0 || q.Page.Offset() >= count {
		return nil, count, nil
	}
	list, err := l.page(ctx, f)
	if err != nil {
		return nil, 0, err
	}
	return list, count, nil
}

// loadPage reads the shows whose ids are in ids (a bun.List or a
// subquery) with their owners and tags, in no particular order.
func (l *Lister) loadPage(ctx context.Context, ids any, size int) ([]Show, error) {
	rows := make([]listRow, 0, size)
	err := l.db.NewSelect().Model(&rows).ColumnExpr("?TableColumns").Relation("User", ownerColumns).
		Where("s.id IN (?)", ids).Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("shows: list: load: %w", err)
	}
	return l.tags.attach(ctx, rows)
}

// listRow is a show of a list as its statement reads it: for ownerPage
// the size of the whole result set beside it.
type listRow struct {
	Show  `bun:",extend"`
	Total int `bun:"list_total,scanonly"`
}

// ownerColumns are the columns of a listed show's owner: what the show's
// views (the API's, both forms, the console's and the pages') and the list
// cache's checks read of them. Not the password hash, nor what only the
// owner's own profile shows.
func ownerColumns(q *bun.SelectQuery) *bun.SelectQuery {
	return q.Column("id", "slug", "name", "email", "location", "description", "avatar_key", "cover_key",
		"dj", "producer", "featured", "radio", "created_at")
}

// page reads a page of the list with its owners and tags: the page of ids
// is paged first on the narrow indexes, in a subquery of the statement
// that loads those rows with their tag ids, so a page is one round trip.
// A deep page seeks from a remembered page boundary where it can
// (keyset.go).
func (l *Lister) page(ctx context.Context, f *listFilter) ([]Show, error) {
	q, tagID := f.q, f.tagID
	size, skip := q.Page.Size, q.Page.Offset()
	deep := q.Page.Number >= seekMinPage && (q.Scheduled == nil || !*q.Scheduled)
	var (
		key  string
		gen  int64
		from *pageBound
	)
	if deep {
		var err error
		if gen, err = l.Generation(ctx); err != nil {
			return nil, err
		}
		key = q.pageKey(tagID)
		if b, p, ok := l.pages.nearest(key, gen, q.Page.Number); ok {
			from, skip = &b, (q.Page.Number-1-p)*size
		}
	}
	// A deep page also reads the row before it, the end of the page
	// before, so the same page asked again seeks straight to it.
	withPrev := deep && skip > 0
	limit, offset := size, skip
	if withPrev {
		limit, offset = size+1, skip-1
	}
	sel := l.orderedIDs(f)
	if from != nil {
		sel = afterBound(sel, tagID != 0, *from)
	}
	sel = sel.Limit(int64(limit)).Offset(int64(offset))
	// MySQL takes no LIMIT in an IN subquery, but does in a derived
	// table inside one.
	rows, err := l.loadPage(ctx, l.db.NewSelect().TableExpr("(?) AS p", sel).Column("p.id"), limit)
	if err != nil {
		return nil, err
	}
	// In list order (show_tags.start is a copy of shows.start).
	slices.SortFunc(rows, func(a, b Show) int {
		return cmpListOrder(matchRow{a.ID, a.Start}, matchRow{b.ID, b.Start})
	})
	if withPrev && len(rows) > 0 {
		if q.Page.Number > 1 {
			l.pages.remember(key, gen, q.Page.Number-1, pageBound{rows[0].Start, rows[0].ID})
		}
		rows = rows[1:]
	}
	if deep && len(rows) == size {
		last := rows[len(rows)-1]
		l.pages.remember(key, gen, q.Page.Number, pageBound{last.Start, last.ID})
	}
	return rows, nil
}

// orderedIDs selects the ids of q's list (as id), in list order, on the
// narrow indexes: a page's subquery.
func (l *Lister) orderedIDs(f *listFilter) *bun.SelectQuery {
	sel := l.selectFor(f, visibleTo(f.q.Viewer)).OrderExpr(listOrder(f.tagID))
	if f.tagID != 0 {
		return sel.ColumnExpr("st.show_id AS id")
	}
	return sel.ColumnExpr("s.id AS id")
}

// listOrder is the ORDER BY of a list, newest start first, then highest
// id: on show_tags' copies of them for a tag's list (its join, st).
func listOrder(tagID int64) string {
	if tagID != 0 {
		return "st.start DESC, st.show_id DESC"
	}
	return "s.start DESC, s.id DESC"
}

// ownerPage reads a page of q's list with the number of shows in the
// whole list, in one statement: the page's rows in list order, with their
// owners and tag ids, and the count as a scalar subquery, which the
// database runs once. For lists of one owner's shows, where the set it
// counts is small: on MySQL both read the owner's index (userCoverIndex),
// the count on the index alone, the page's rows by the primary key
// (user_id, id), one owner's rows side by side (clusterByOwner). A window
// count over a derived table of the page's ids (COUNT(*) OVER (), joined
// back to the rows) cost MariaDB 40 % more CPU a request (docs/shows.md,
// "Counts").
func (l *Lister) ownerPage(ctx context.Context, f *listFilter) ([]Show, int, error) {
	q := f.q
	vis := visibleTo(q.Viewer)
	total := l.selectFor(f, vis).ColumnExpr("COUNT(*)")
	rows := make([]listRow, 0, q.Page.Size)
	sel := l.selectFor(f, vis).Model(&rows).ColumnExpr("?TableColumns").ColumnExpr("(?) AS list_total", total).
		Relation("User", ownerColumns).OrderExpr(listOrder(f.tagID))
	err := sel.Limit(int64(q.Page.Size)).Offset(int64(q.Page.Offset())).Scan(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("shows: list: page: %w", err)
	}
	if len(rows) == 0 {
		return nil, 0, nil
	}
	list, err := l.tags.attach(ctx, rows)
	if err != nil {
		return nil, 0, err
	}
	return list, rows[0].Total, nil
}

// check applies the text rule (app.TextProblem) to the text filters: a
// 400, whoever the caller (the API, the console).
func (q ListQuery) check() error {
	for _, f := range []struct{ name, v string }{{"filter", q.Filter}, {"slug", q.Slug}, {"tag", q.Tag}} {
		if p := app.TextProblem(f.v); p != "" {
			return app.BadRequest("%s %s", f.name, p)
		}
	}
	return nil
}

// visibility is the part of the rule that depends on the viewer.
type visibility int

const (
	seeAll     visibility = iota // the system
	seePublic                    // private = false AND off = false
	seeVisible                   // public, or the viewer's own
	seeHidden                    // only the viewer's own private or off shows
)

func visibleTo(p *app.Principal) visibility {
	if p == nil {
		return seeAll
	}
	return seeVisible
}

// filtered adds the WHERE clauses (and the tag join) of q to sel.
func filtered(sel *bun.SelectQuery, q ListQuery, tagID int64, now time.Time, vis visibility) *bun.SelectQuery {
	if tagID != 0 {
		sel = sel.Join("JOIN show_tags AS st ON st.show_id = s.id").Where("st.tag_id = ?", tagID)
	}
	switch vis {
	case seePublic:
		sel = sel.Where("s.private = ?", false).Where("s.off = ?", false)
	case seeVisible:
		sel = sel.WhereGroup(" AND ", func(w *bun.SelectQuery) *bun.SelectQuery {
			return w.WhereGroup(" OR ", func(w *bun.SelectQuery) *bun.SelectQuery {
				return w.Where("s.private = ?", false).Where("s.off = ?", false)
			}).WhereOr("s.user_id = ?", q.Viewer.UserID)
		})
	case seeHidden:
		sel = sel.Where("s.user_id = ?", q.Viewer.UserID).WhereGroup(" AND ", func(w *bun.SelectQuery) *bun.SelectQuery {
			return w.Where("s.private = ?", true).WhereOr("s.off = ?", true)
		})
	}
	if q.UserID != 0 {
		sel = sel.Where("s.user_id = ?", q.UserID)
	}
	if q.Filter != "" {
		// The viewer's own hidden shows are few and found on the user
		// index: the gram index would only add its cost.
		sel = whereNameContains(sel, q.Filter, vis != seeHidden)
	}
	if q.Slug != "" {
		sel = sel.Where("s.slug = ?", q.Slug)
	}
	if q.From != nil {
		sel = sel.Where("s.start >= ?", q.From.UTC())
	}
	if q.To != nil {
		sel = sel.Where("s.start < ?", q.To.UTC())
	}
	switch {
	case q.Scheduled != nil && *q.Scheduled:
		sel = sel.Where("s.complete = ?", false).Where("s.live = ?", false).Where("s.start > ?", now)
	case q.Scheduled != nil:
		sel = sel.Where("s.complete = ?", true)
	case q.RanOnly:
		sel = sel.WhereGroup(" AND ", func(w *bun.SelectQuery) *bun.SelectQuery {
			return w.Where("s.live = ?", true).WhereOr("s.complete = ?", true)
		})
	}
	for _, f := range []struct {
		col string
		v   *bool
	}{{"s.live", q.Live}, {"s.archive", q.Archive}, {"s.featured", q.Featured}, {"s.radio", q.Radio}, {"s.off", q.Off}} {
		if f.v != nil {
			sel = sel.Where(f.col+" = ?", *f.v)
		}
	}
	return sel
}

// count is the size of the result set, exact. Where the maintained
// counts answer the filters (ListQuery.countable) it is a SUM over a few
// show_counts rows; otherwise a COUNT on the list's indexes (name, slug and
// time filters, one owner's shows, scheduled=true). For a viewer it is the
// public shows plus the viewer's own hidden ones (user index, small).
func (l *Lister) count(ctx context.Context, f *listFilter) (int, error) {
	q := f.q
	run := func(ctx context.Context, vis visibility) (int, error) {
		if q.countable(vis) {
			return l.countFromSummary(ctx, f, vis)
		}
		if q.Scheduled != nil && *q.Scheduled && q.UserID == 0 && (vis == seePublic || vis == seeAll) {
			return l.scheduledCount(ctx, f, vis)
		}
		n, err := l.selectFor(f, vis).Count(ctx)
		if err != nil {
			return 0, fmt.Errorf("shows: list: count: %w", err)
		}
		return int(n), nil
	}
	if q.Viewer == nil {
		return run(ctx, seeAll)
	}
	if q.UserID != 0 {
		// One owner's shows: small, exact.
		return run(ctx, seeVisible)
	}
	if q.countable(seePublic) {
		// The usual list of a viewer: the public count from the kept
		// counts and the viewer's own hidden shows on the user index,
		// in one round trip.
		own := l.selectFor(f, seeHidden).ColumnExpr("COUNT(*)")
		var n int64
		if err := l.db.NewSelect().ColumnExpr("(?) + (?)", l.summaryQuery(f, seePublic), own).Scan(ctx, &n); err != nil {
			return 0, fmt.Errorf("shows: list: count: %w", err)
		}
		return int(n), nil
	}
	public, err := run(ctx, seePublic)
	if err != nil {
		return 0, err
	}
	own, err := run(ctx, seeHidden)
	if err != nil {
		return 0, err
	}
	return public + own, nil
}
