package shows

import (
	"container/list"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/uptrace/bun"
	"golang.org/x/sync/singleflight"

	"github.com/onair/onair/app"
	"github.com/onair/onair/modules/users"
)

// List results (docs/shows.md, "List cache"). A warm list request spent
// most of its CPU, on both sides, reading the count, the page, its owners
// and tags and encoding them again, though they change only when a show
// does. So each node keeps, per list (filters and page), the public form
// of its answer: the count and the encoded items, tagged with the data
// generation (keyset.go) they were read at. A request then reads, in one
// statement (one snapshot):
//
//   - the generation: a show change moves it, so an entry of another
//     generation is stale;
//   - what a list shows but a show change does not move: each cached
//     show's comments_count and favorites_count and its owner's profile
//     fields. When one differs, the entry is patched and re-encoded
//     (no list query runs);
//   - how many of the viewer's own private and off shows the list
//     matches: a viewer with one sees a list that is not the public one
//     and is answered from an entry of their own, as is a viewer who owns
//     a show of the page (they also get its peak_viewers); staff bypass
//     the cache.
//
// A list is stored the second time it misses, so one asked once (a random
// user's) costs nothing more than before. A scheduled=true list also
// depends on the clock: its entry is kept only
// until the earliest start in its set passes. Entries are bounded in number
// and in bytes (least recently used first out).

// SettingListCache is the memory of the list cache, in MiB (0: off).
const SettingListCache = "ONAIR_SHOWS_LIST_CACHE_MB"

// listCacheEntries bounds the number of cached lists whatever their size;
// listCacheAsked the lists remembered as asked once (admit).
const (
	listCacheEntries = 4096
	listCacheAsked   = 16384
)

// listEntry is one cached list. It is never changed once stored: a patch
// stores a new one.
type listEntry struct {
	key string
	gen int64
	// viewer is the user the entry is for (their hidden shows included,
	// their shows in the owner's form); 0 for the public list.
	viewer int64
	// clock is the kernel's, which the media signer reads (tests move it).
	clock *app.Clock
	until time.Time // zero: not bound to the clock
	// tokens is when the signed media links of the private shows the
	// entry holds change (zero: none holds any).
	tokens time.Time
	q      ListQuery // normalized (tag name, slug), without viewer
	tagID  int64
	empty  bool // a tag or slug that matches nothing, whoever asks
	count  int
	shows  []Show
	index  map[int64]int // show id → its place in shows
	vol    []listVolatile
	items  []byte // the JSON array of the shows' public views
	size   int
}

// listVolatile is what a cached show displays that a show change does not
// move (no generation bump): the counters and the owner's profile.
type listVolatile struct {
	comments, favorites            int64
	peak                           int64 // kept for a viewer's own entry only
	slug, name                     string
	location, description          sql.NullString
	avatar, cover                  sql.NullString
	dj, producer, featured, exists bool
}

// volatileOf is what of sh the entry checks on each use: the peak (which
// a show change does not move either) only where the owner's form shows
// it, in the owner's own entry.
func (e *listEntry) volatileOf(sh *Show) listVolatile {
	v := listVolatile{comments: int64(sh.CommentsCount), favorites: int64(sh.FavoritesCount), exists: true}
	if e.viewer != 0 && sh.UserID == e.viewer {
		v.peak = int64(sh.PeakViewers)
	}
	if u := sh.User; u != nil {
		v.slug, v.name, v.dj, v.producer, v.featured = u.Slug, u.Name, u.DJ, u.Producer, u.Featured
		v.location, v.description = nullString(u.Location), nullString(u.Description)
		v.avatar, v.cover = nullString(u.AvatarKey), nullString(u.CoverKey)
	}
	return v
}

func nullString(s *string) sql.NullString {
	if s == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: *s, Valid: true}
}

func stringPtr(s sql.NullString) *string {
	if !s.Valid {
		return nil
	}
	v := s.String
	return &v
}

type listCache struct {
	maxBytes   int
	maxEntries int
	maxAsked   int

	mu    sync.Mutex
	bytes int
	lru   *list.List // of *listEntry, most recently used first
	m     map[string]*list.Element
	asked map[string]struct{} // lists missed once lately (admit)

	flight   singleflight.Group
	requests *prometheus.CounterVec
	evicted  prometheus.Counter
}

func newListCache(maxBytes int) *listCache {
	return &listCache{
		maxBytes:   maxBytes,
		maxEntries: listCacheEntries,
		maxAsked:   listCacheAsked,
		lru:        list.New(),
		m:          map[string]*list.Element{},
		asked:      map[string]struct{}{},
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "onair_shows_list_cache_requests_total",
			Help: "Show list requests by how the list cache answered: hit, patched (counters or an owner's profile re-read), miss (read and stored), bypass (staff, or a change under way).",
		}, []string{"result"}),
		evicted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "onair_shows_list_cache_evictions_total",
			Help: "Cached show lists dropped to stay within ONAIR_SHOWS_LIST_CACHE_MB or the entry bound.",
		}),
	}
}

func (c *listCache) collectors() []prometheus.Collector {
	return []prometheus.Collector{c.requests, c.evicted}
}

// admit tells whether key was asked before (since the set of recent keys
// last started over) and notes it otherwise: a list is stored from its
// second miss on.
func (c *listCache) admit(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.asked[key]; ok {
		delete(c.asked, key)
		return true
	}
	if len(c.asked) >= c.maxAsked {
		clear(c.asked)
	}
	c.asked[key] = struct{}{}
	return false
}

func (c *listCache) get(key string) *listEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.m[key]
	if !ok {
		return nil
	}
	c.lru.MoveToFront(el)
	return el.Value.(*listEntry)
}

// put stores e, unless the entry it replaces is newer, and evicts the
// least recently used entries past the bounds.
func (c *listCache) put(e *listEntry) {
	if e.size > c.maxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.m[e.key]; ok {
		old := el.Value.(*listEntry)
		if old.gen > e.gen {
			return
		}
		c.bytes -= old.size
		el.Value = e
		c.lru.MoveToFront(el)
	} else {
		c.m[e.key] = c.lru.PushFront(e)
	}
	c.bytes += e.size
	for c.bytes > c.maxBytes || c.lru.Len() > c.maxEntries {
		el := c.lru.Back()
		old := el.Value.(*listEntry)
		c.lru.Remove(el)
		delete(c.m, old.key)
		c.bytes -= old.size
		c.evicted.Inc()
	}
}

// stats is the number of entries and their bytes (tests, docs).
func (c *listCache) stats() (int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len(), c.bytes
}

// cachedList answers a list request of q.Viewer from the cache: the items
// (a JSON array) and the count. ok is false when the cache does not serve
// this request; the caller then reads the list itself.
//
// A viewer whose own private or off shows the list matches, or who owns
// a show of the page, is served from an entry of their own (the list as
// they see it, their shows in the owner's form) instead of the public
// one; it is admitted, checked and patched the same way.
func (l *Lister) cachedList(ctx context.Context, q ListQuery) (json.RawMessage, int, bool, error) {
	c := l.cache
	if c == nil || q.Viewer == nil || q.Viewer.IsStaff() {
		if c != nil {
			c.requests.WithLabelValues("bypass").Inc()
		}
		return nil, 0, false, nil
	}
	if q.Page.Size == 0 {
		q.Page = app.Page{Number: 1, Size: PageSize}
	}
	if err := q.check(); err != nil {
		return nil, 0, false, err
	}
	uid := q.Viewer.UserID
	key := listKey(q)
	ownKey := key + "|v" + strconv.FormatInt(uid, 10)
	// Once a viewer has an entry of their own for the list, it is theirs.
	var viewer int64
	if c.get(ownKey) != nil {
		viewer = uid
	}
	result := "hit"
	stale := false
	for try := 0; try < 2; try++ {
		k := key
		if viewer != 0 {
			k = ownKey
		}
		if e := c.get(k); e != nil {
			items, count, v, err := l.useEntry(ctx, e, uid)
			switch {
			case err != nil:
				return nil, 0, false, err
			case v == entryServed || v == entryPatched:
				if v == entryPatched && result == "hit" {
					result = "patched"
				}
				c.requests.WithLabelValues(result).Inc()
				return items, count, true, nil
			case v == entryNotTheirs && viewer == 0:
				// The public list is not what this viewer sees: their
				// own, admitted at once (the list is asked, and this
				// viewer asks it).
				viewer, try, stale = uid, -1, true
				continue
			}
			stale = true
		}
		if try > 0 {
			break
		}
		result = "miss"
		if !stale && !c.admit(k) {
			// Asked for the first time (lately): read as usual. A list
			// asked once, such as a random user's, would only pay for
			// the generation read and the check.
			c.requests.WithLabelValues(result).Inc()
			return nil, 0, false, nil
		}
		gen, err := l.Generation(ctx)
		if err != nil {
			return nil, 0, false, err
		}
		// The requests that miss the same list at the same generation
		// wait for one read of it, detached from the request that
		// starts it (its cancellation must not fail the others).
		shared := context.WithoutCancel(ctx)
		v, err, _ := c.flight.Do(strconv.FormatInt(gen, 10)+"|"+k, func() (any, error) {
			return l.fillList(shared, q, k, gen, viewer)
		})
		if err != nil {
			return nil, 0, false, err
		}
		if e := v.(*listEntry); e.answers(uid) {
			// Read during this request: no check to make.
			c.requests.WithLabelValues(result).Inc()
			return e.items, e.count, true, nil
		}
	}
	// The generation moved between the read and the check: a change is
	// under way; this request reads the list itself.
	c.requests.WithLabelValues("bypass").Inc()
	return nil, 0, false, nil
}

// What useEntry found an entry to be for a request.
type entryUse int

const (
	entryStale     entryUse = iota // older than the data (or the clock): read again
	entryServed                    // as it is
	entryPatched                   // after re-reading its counters and profiles
	entryNotTheirs                 // a public entry, and the viewer sees another list
)

// useEntry checks e for a request of viewer uid and answers from it when
// it is current: one statement (checkList), and when a counter or a
// profile moved, one more and a new encoding (patchList).
func (l *Lister) useEntry(ctx context.Context, e *listEntry, uid int64) (json.RawMessage, int, entryUse, error) {
	if e.viewer == 0 && e.owns(uid) {
		// The owner's form of their shows (peak_viewers).
		return nil, 0, entryNotTheirs, nil
	}
	gen, own, same, err := l.checkList(ctx, e, uid)
	if err != nil {
		return nil, 0, entryStale, err
	}
	if gen != e.gen || e.expired() {
		return nil, 0, entryStale, nil
	}
	if own > 0 {
		return nil, 0, entryNotTheirs, nil
	}
	if same {
		return e.items, e.count, entryServed, nil
	}
	// A counter or a profile moved: read what they show and encode the
	// list again.
	st, err := l.listState(ctx, e, uid)
	if err != nil {
		return nil, 0, entryStale, err
	}
	if st.gen != e.gen || st.own != 0 || !st.holds(e) {
		return nil, 0, entryStale, nil
	}
	if !st.same(e) {
		if e, err = l.patchList(e, st); err != nil {
			return nil, 0, entryStale, err
		}
		l.cache.put(e)
	}
	return e.items, e.count, entryPatched, nil
}

// answers tells whether e, just read for a request of viewer uid (or
// by a request of another viewer that this one waited on), is that
// viewer's answer without the check useEntry makes: its own entry, or the
// public form of a list the viewer's hidden shows cannot be in (one other
// user's shows, or a tag or slug that matches nothing) and that holds none
// of the viewer's shows. Otherwise the entry is checked like any other
// (the count of the viewer's hidden shows in it).
func (e *listEntry) answers(uid int64) bool {
	if e.expired() {
		return false
	}
	if e.viewer != 0 {
		return e.viewer == uid
	}
	return (e.empty || e.othersOnly(uid)) && !e.owns(uid)
}

// expired tells whether the clock has passed e's bounds: the earliest
// scheduled start in its set, or the hour its signed media links change.
func (e *listEntry) expired() bool {
	return (!e.until.IsZero() && !e.clock.Stamp().Before(e.until)) || (!e.tokens.IsZero() && !e.clock.Now().Before(e.tokens))
}

// othersOnly tells whether e's list is one user's shows, not uid's: none
// of uid's hidden shows can match it.
func (e *listEntry) othersOnly(uid int64) bool { return e.q.UserID != 0 && e.q.UserID != uid }

// listKey identifies a cached list: its filters (the tag by what names it,
// users.TagQuery) and page, not the viewer.
func listKey(q ListQuery) string {
	q.Viewer = nil
	return q.pageKey(0) + "|" + users.TagQuery(q.Tag) + "|" + strconv.Itoa(q.Page.Number) + "|" + strconv.Itoa(q.Page.Size)
}

func (e *listEntry) owns(userID int64) bool {
	for i := range e.shows {
		if e.shows[i].UserID == userID {
			return true
		}
	}
	return false
}

// publicViewer is a principal who owns no show and is not staff: the list
// it gets is the public one.
func publicViewer() *app.Principal { return &app.Principal{} }

// fillList reads the public form of q's list at generation gen or later
// (every read starts after gen was read) and stores it tagged with gen: a
// later change moves the generation, so the entry is never used on data
// older than it holds.
func (l *Lister) fillList(ctx context.Context, q ListQuery, key string, gen int64, viewer int64) (*listEntry, error) {
	e := &listEntry{key: key, gen: gen, viewer: viewer, clock: l.clock}
	pq := q
	pq.Viewer = e.principal()
	vis := seePublic
	if viewer != 0 {
		vis = seeVisible
	}
	// The clock is read before the list, so the bound is never later
	// than the start of a show the list still holds.
	f, err := l.resolve(ctx, pq, l.clock.Stamp())
	if err != nil {
		return nil, err
	}
	e.tagID, e.empty = f.tagID, f.none
	if pq.Scheduled != nil && *pq.Scheduled && !e.empty {
		first, found, err := l.firstStart(ctx, f, vis)
		if err != nil {
			return nil, fmt.Errorf("shows: list cache: first start: %w", err)
		}
		// An empty set stays empty until a show changes: no bound.
		if found {
			e.until = first
		}
	}
	signedAt := l.clock.Now() // before the links are signed
	list, count, err := l.read(ctx, f)
	if err != nil {
		return nil, err
	}
	e.count, e.shows = count, list
	// The media links of a private show (in a viewer's own entry) are
	// signed with a token that changes when the hour turns (live module,
	// media.go): the entry lasts until then, so it always carries the
	// links a fresh read signs.
	for i := range list {
		if list[i].Private {
			e.tokens = signedAt.Truncate(time.Hour).Add(time.Hour)
			break
		}
	}
	e.q = f.q
	e.q.Viewer = nil
	e.vol = make([]listVolatile, len(list))
	for i := range list {
		e.vol[i] = e.volatileOf(&list[i])
	}
	if err := l.encodeList(e); err != nil {
		return nil, err
	}
	l.cache.put(e)
	return e, nil
}

// principal is who the entry's list is for: a user without shows (the
// public list) or its viewer, not staff.
func (e *listEntry) principal() *app.Principal {
	if e.viewer == 0 {
		return publicViewer()
	}
	return &app.Principal{UserID: e.viewer}
}

// encodeList renders e's shows as its viewer sees them (the public form
// for the public list).
func (l *Lister) encodeList(e *listEntry) error {
	items, err := json.Marshal(l.views.listViews(e.shows, e.principal()))
	if err != nil {
		return fmt.Errorf("shows: list cache: encode: %w", err)
	}
	e.items = items
	e.index = make(map[int64]int, len(e.shows))
	for i := range e.shows {
		e.index[e.shows[i].ID] = i
	}
	// The shows are about the size of their JSON; the rest is overhead.
	e.size = 2*len(items) + 512
	return nil
}

// listState is what one statement reads to check an entry.
type listState struct {
	gen int64
	own int64
	vol map[int64]listVolatile
}

type listStateRow struct {
	Gen         int64          `bun:"gen"`
	Own         int64          `bun:"own"`
	ID          sql.NullInt64  `bun:"id"`
	Comments    sql.NullInt64  `bun:"comments_count"`
	Favorites   sql.NullInt64  `bun:"favorites_count"`
	Slug        sql.NullString `bun:"slug"`
	Name        sql.NullString `bun:"name"`
	Location    sql.NullString `bun:"location"`
	Description sql.NullString `bun:"description"`
	AvatarKey   sql.NullString `bun:"avatar_key"`
	CoverKey    sql.NullString `bun:"cover_key"`
	DJ          sql.NullBool   `bun:"dj"`
	Producer    sql.NullBool   `bun:"producer"`
	Featured    sql.NullBool   `bun:"featured"`
	UserID      sql.NullInt64  `bun:"user_id"`
	Peak        sql.NullInt64  `bun:"peak_viewers"`
}

// stateQuery is the one statement that checks an entry: the generation,
// how many of viewer's own hidden shows e's list matches, and the volatile
// fields of e's shows (one row each; one row of NULLs for an empty list).
func (l *Lister) stateQuery(e *listEntry, viewer int64) *bun.SelectQuery {
	sel := l.db.NewSelect().TableExpr("show_generation AS g").ColumnExpr("g.n AS gen").Where("g.id = 1")
	if e.empty || e.viewer != 0 || e.othersOnly(viewer) {
		// A viewer's own entry already holds their hidden shows; another
		// user's shows hold none.
		sel = sel.ColumnExpr("0 AS own")
	} else {
		q := e.q
		q.Viewer = &app.Principal{UserID: viewer}
		own := l.selectFor(&listFilter{q: q, tagID: e.tagID, now: l.clock.Stamp()}, seeHidden).ColumnExpr("COUNT(*)")
		sel = sel.ColumnExpr("(?) AS own", own)
	}
	if len(e.shows) == 0 {
		return sel.ColumnExpr("NULL AS id, NULL AS comments_count, NULL AS favorites_count").
			ColumnExpr("NULL AS slug, NULL AS name, NULL AS location, NULL AS description, NULL AS avatar_key, NULL AS cover_key, NULL AS dj, NULL AS producer, NULL AS featured").
			ColumnExpr("NULL AS user_id, NULL AS peak_viewers")
	}
	ids := make([]int64, len(e.shows))
	for i := range e.shows {
		ids[i] = e.shows[i].ID
	}
	return sel.Join("LEFT JOIN shows AS cs ON cs.id IN (?)", bun.List(ids)).
		Join("LEFT JOIN users AS cu ON cu.id = cs.user_id").
		ColumnExpr("cs.id, cs.comments_count, cs.favorites_count").
		ColumnExpr("cu.slug, cu.name, cu.location, cu.description, cu.avatar_key, cu.cover_key, cu.dj, cu.producer, cu.featured").
		ColumnExpr("cs.user_id, cs.peak_viewers")
}

// checkList runs stateQuery and compares the volatile fields with e's as
// the driver hands them over (no values built: this is every hit's cost).
// same is false when one differs or a show is missing.
func (l *Lister) checkList(ctx context.Context, e *listEntry, viewer int64) (gen, own int64, same bool, err error) {
	rows, err := l.stateQuery(e, viewer).Rows(ctx)
	if err != nil {
		return 0, 0, false, fmt.Errorf("shows: list cache: check: %w", err)
	}
	defer rows.Close()
	const ncols = 16
	var (
		cols [ncols]sql.RawBytes
		bufs [ncols][8]byte
		dest [ncols]any
	)
	for i := range dest {
		dest[i] = &cols[i]
	}
	same = true
	seen, read := 0, false
	for rows.Next() {
		// A non-nil empty buffer each time, so an empty string stays
		// apart from NULL (which the driver sets to nil) on every driver.
		for i := range cols {
			cols[i] = bufs[i][:0]
		}
		if err := rows.Scan(dest[:]...); err != nil {
			return 0, 0, false, fmt.Errorf("shows: list cache: check: %w", err)
		}
		g, ok1 := rawInt(cols[0])
		o, ok2 := rawInt(cols[1])
		if !ok1 || !ok2 {
			return 0, 0, false, fmt.Errorf("shows: list cache: check: generation %q, own %q", cols[0], cols[1])
		}
		gen, own, read = g, o, true
		if cols[2] == nil {
			continue
		}
		id, _ := rawInt(cols[2])
		i, ok := e.index[id]
		if !ok {
			same = false
			continue
		}
		seen++
		v := &e.vol[i]
		if !rawIntIs(cols[3], v.comments) || !rawIntIs(cols[4], v.favorites) ||
			string(cols[5]) != v.slug || string(cols[6]) != v.name ||
			!rawNullIs(cols[7], v.location) || !rawNullIs(cols[8], v.description) ||
			!rawNullIs(cols[9], v.avatar) || !rawNullIs(cols[10], v.cover) ||
			rawBool(cols[11]) != v.dj || rawBool(cols[12]) != v.producer || rawBool(cols[13]) != v.featured ||
			(e.viewer != 0 && rawIntIs(cols[14], e.viewer) && !rawIntIs(cols[15], v.peak)) {
			same = false
		}
	}
	if err := rows.Err(); err != nil {
		return 0, 0, false, fmt.Errorf("shows: list cache: check: %w", err)
	}
	if !read {
		return 0, 0, false, fmt.Errorf("shows: list cache: check: no generation row")
	}
	return gen, own, same && seen == len(e.shows), nil
}

func rawInt(b []byte) (int64, bool) {
	n, err := strconv.ParseInt(string(b), 10, 64)
	return n, err == nil
}

func rawIntIs(b []byte, v int64) bool {
	n, ok := rawInt(b)
	return ok && n == v
}

// rawBool reads a boolean column: 0/1 on both databases (or true/false).
func rawBool(b []byte) bool { return string(b) == "1" || string(b) == "true" }

func rawNullIs(b []byte, v sql.NullString) bool {
	if b == nil {
		return !v.Valid
	}
	return v.Valid && string(b) == v.String
}

// listState reads stateQuery into values, for a patch.
func (l *Lister) listState(ctx context.Context, e *listEntry, viewer int64) (listState, error) {
	sel := l.stateQuery(e, viewer)
	var rows []listStateRow
	if err := sel.Scan(ctx, &rows); err != nil {
		return listState{}, fmt.Errorf("shows: list cache: check: %w", err)
	}
	if len(rows) == 0 {
		return listState{}, fmt.Errorf("shows: list cache: check: no generation row")
	}
	st := listState{gen: rows[0].Gen, own: rows[0].Own, vol: make(map[int64]listVolatile, len(rows))}
	for _, r := range rows {
		if !r.ID.Valid {
			continue
		}
		v := listVolatile{
			comments: r.Comments.Int64, favorites: r.Favorites.Int64,
			slug: r.Slug.String, name: r.Name.String,
			location: r.Location, description: r.Description, avatar: r.AvatarKey, cover: r.CoverKey,
			dj: r.DJ.Bool, producer: r.Producer.Bool, featured: r.Featured.Bool, exists: true,
		}
		if e.viewer != 0 && r.UserID.Int64 == e.viewer {
			v.peak = r.Peak.Int64
		}
		st.vol[r.ID.Int64] = v
	}
	return st, nil
}

// holds tells whether st read every show of e. A show cannot go without
// a generation change; if one did, the entry is not to be trusted.
func (st listState) holds(e *listEntry) bool {
	for i := range e.shows {
		if _, ok := st.vol[e.shows[i].ID]; !ok {
			return false
		}
	}
	return true
}

// same tells whether every show of e displays what st read.
func (st listState) same(e *listEntry) bool {
	for i := range e.shows {
		if st.vol[e.shows[i].ID] != e.vol[i] {
			return false
		}
	}
	return true
}

// patchList is e with the volatile fields st read, re-encoded.
func (l *Lister) patchList(e *listEntry, st listState) (*listEntry, error) {
	n := *e
	n.shows = make([]Show, len(e.shows))
	n.vol = make([]listVolatile, len(e.shows))
	for i := range e.shows {
		sh := e.shows[i]
		v := st.vol[sh.ID]
		if v != e.vol[i] {
			sh.CommentsCount, sh.FavoritesCount = int(v.comments), int(v.favorites)
			if e.viewer != 0 && sh.UserID == e.viewer {
				sh.PeakViewers = int(v.peak)
			}
			if sh.User != nil {
				u := *sh.User
				u.Slug, u.Name, u.DJ, u.Producer, u.Featured = v.slug, v.name, v.dj, v.producer, v.featured
				u.Location, u.Description = stringPtr(v.location), stringPtr(v.description)
				u.AvatarKey, u.CoverKey = stringPtr(v.avatar), stringPtr(v.cover)
				sh.User = &u
			}
		}
		n.shows[i], n.vol[i] = sh, v
	}
	if err := l.encodeList(&n); err != nil {
		return nil, err
	}
	return &n, nil
}
