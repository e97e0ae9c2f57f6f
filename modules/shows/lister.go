package shows

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
	"github.com/onair/onair/modules/users"
)

// Lister answers the show lists: GET /v1/shows and /v1/users/:id/shows
// (Page), and the pages' and the console's lists (List). It hides how:
// the list cache (listcache.go), the name filter's matches (matches.go),
// the kept counts (counts.go, scheduled.go) and the remembered page
// boundaries (keyset.go).
type Lister struct {
	// db only reads (app.Core.ReadDB): on SQLite the lists do not wait
	// for the one writer connection.
	db    *bun.DB
	views *Views
	// tags are the tags of listed shows by id (tags.go).
	tags *listTags

	// pages remembers deep pages' boundaries (keyset.go).
	pages pageCache
	// matches keeps name filters' public matches (matches.go).
	matches matchCache
	// scheduled keeps scheduled=true counts (scheduled.go).
	scheduled scheduledCache
	// cache keeps the public form of list answers (listcache.go); nil
	// when ONAIR_SHOWS_LIST_CACHE_MB is 0.
	cache *listCache
	// clock is the kernel's (Core.Clock), which the cache's bounds and
	// the media signer read.
	clock *app.Clock
}

func newLister(db *bun.DB, views *Views, cacheMB int, clock *app.Clock) *Lister {
	l := &Lister{db: db, views: views, tags: newListTags(db), clock: clock}
	if cacheMB > 0 {
		l.cache = newListCache(cacheMB << 20)
	}
	return l
}

// ListPage is a page of a list as the API answers it: the items (the
// shows' views as q.Viewer sees them) and the size of the whole result
// set.
type ListPage struct {
	Items any
	Count int
}

// Page answers the list q for q.Viewer: from the list cache when it
// serves the request, read and rendered otherwise.
func (l *Lister) Page(ctx context.Context, q ListQuery) (ListPage, error) {
	if items, count, ok, err := l.cachedList(ctx, q); err != nil || ok {
		return ListPage{Items: items, Count: count}, err
	}
	list, count, err := l.List(ctx, q)
	if err != nil {
		return ListPage{}, err
	}
	return ListPage{Items: l.views.listViews(list, q.Viewer), Count: count}, nil
}

// listFilter is a list query resolved once, for every statement of the
// list: the page size defaulted, the text filters checked, the tag found
// by its name, the slug normalised, the clock read. The count, the page,
// the scheduled count and the name matches all select with it
// (selectFor).
type listFilter struct {
	q     ListQuery
	tagID int64
	now   time.Time
	// none: a tag or a slug that matches no show, whoever asks.
	none bool
}

// resolve checks and resolves q at now.
func (l *Lister) resolve(ctx context.Context, q ListQuery, now time.Time) (*listFilter, error) {
	if q.Page.Size == 0 {
		q.Page = app.Page{Number: 1, Size: PageSize}
	}
	if err := q.check(); err != nil {
		return nil, err
	}
	f := &listFilter{q: q, now: now}
	if f.q.Tag = users.TagName(q.Tag); f.q.Tag != "" {
		id, err := users.FindTag(ctx, l.db, f.q.Tag)
		if err != nil {
			return nil, fmt.Errorf("shows: list: %w", err)
		}
		f.tagID, f.none = id, id == 0
	}
	if f.q.Slug != "" {
		slug, ok := app.SlugQuery(f.q.Slug)
		if ok {
			f.q.Slug = slug
		}
		f.none = f.none || !ok
	}
	return f, nil
}

// selectFor selects the rows of f's list that vis sees, on the list's
// indexes (listFrom) with every filter of f.
func (l *Lister) selectFor(f *listFilter, vis visibility) *bun.SelectQuery {
	return filtered(l.listFrom(f.q, vis), f.q, f.tagID, f.now, vis)
}

// firstStart reads the earliest start in f's list as vis sees it; found
// is false for an empty list.
func (l *Lister) firstStart(ctx context.Context, f *listFilter, vis visibility) (first time.Time, found bool, err error) {
	sel := l.selectFor(f, vis)
	if f.tagID != 0 {
		sel = sel.ColumnExpr("st.start AS start").OrderExpr("st.start ASC")
	} else {
		sel = sel.ColumnExpr("s.start AS start").OrderExpr("s.start ASC")
	}
	var starts []time.Time
	if err := sel.Limit(1).Scan(ctx, &starts); err != nil {
		return time.Time{}, false, err
	}
	if len(starts) == 0 {
		return time.Time{}, false, nil
	}
	return starts[0], true, nil
}
