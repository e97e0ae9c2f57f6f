package shows

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/uptrace/bun"

	"github.com/onair/onair/migrations"
)

// Deep pages (docs/shows.md, "Deep pages"). The API pages by number, and a
// B-tree cannot seek to the Nth entry of a range: page N of a list is
// OFFSET (N-1)×50 entries walked. So each node remembers, per list (filters
// and viewer), the sort key (start, id) of the last row of the pages it
// has served, tagged with the data generation it read them at. A later
// request for page N of the same list at the same generation seeks to the
// nearest remembered page boundary before it, through the list's index
// (start < s OR start = s AND id < i), and walks only the pages in between:
// none for the next page of a client following next_url, or for a page
// asked again. Any show change moves the generation, so a boundary is only
// used on the data it was read from, and the page is the one OFFSET would
// give.
//
// The generation is the one row of show_generation, which every show change
// increments as the last write of its transaction (record). Commits of two
// changes are ordered by that row's lock, so each commit makes a value no
// read saw before — unlike an auto-increment id, which a transaction that
// started first can commit after a later one.

// seekMinPage is the first page worth a seek: before it OFFSET is cheap.
const seekMinPage = 6

// pageCacheKeys bounds the remembered lists; past it they start over.
const pageCacheKeys = 4096

type pageBound struct {
	start time.Time
	id    int64
}

type pageList struct {
	gen   int64
	ends  map[int]pageBound // page number → its last row
	order []int             // insertion order, to bound ends
}

type pageCache struct {
	mu    sync.Mutex
	lists map[string]*pageList
}

// ShowGeneration is the data generation of the shows (one row, id 1).
type ShowGeneration struct {
	bun.BaseModel `bun:"table:show_generation,alias:sg"`

	ID int64 `bun:"id,pk"`
	N  int64 `bun:"n,notnull,default:0"`
}

func createGeneration(ctx context.Context, db bun.IDB) error {
	if err := migrations.CreateTables((*ShowGeneration)(nil))(ctx, db); err != nil {
		return err
	}
	_, err := db.NewInsert().Model(&ShowGeneration{ID: 1}).Exec(ctx)
	return err
}

const pageBoundsPerList = 64

// nearest returns the highest remembered page before page, at gen.
func (c *pageCache) nearest(key string, gen int64, page int) (pageBound, int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.lists[key]
	if l == nil || l.gen != gen {
		return pageBound{}, 0, false
	}
	best := 0
	for p := range l.ends {
		if p < page && p > best {
			best = p
		}
	}
	if best == 0 {
		return pageBound{}, 0, false
	}
	return l.ends[best], best, true
}

func (c *pageCache) remember(key string, gen int64, page int, b pageBound) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lists == nil || len(c.lists) >= pageCacheKeys {
		c.lists = make(map[string]*pageList)
	}
	l := c.lists[key]
	if l == nil || l.gen != gen {
		l = &pageList{gen: gen, ends: map[int]pageBound{}}
		c.lists[key] = l
	}
	if _, ok := l.ends[page]; !ok {
		l.order = append(l.order, page)
		if len(l.order) > pageBoundsPerList {
			delete(l.ends, l.order[0])
			l.order = l.order[1:]
		}
	}
	l.ends[page] = b
}

// Generation is the shows' data generation: it moves with every show
// change, so a page that rendered at one generation and sees another
// knows it may be out of date. The page boundaries, the name matches and
// the cached lists are tagged with it.
func (l *Lister) Generation(ctx context.Context) (int64, error) {
	var gen int64
	if err := l.db.NewSelect().Model((*ShowGeneration)(nil)).Column("n").Where("id = 1").Scan(ctx, &gen); err != nil {
		return 0, fmt.Errorf("shows: list: generation: %w", err)
	}
	return gen, nil
}

// bumpGeneration moves the generation, in a change's transaction tx, as
// its last write: the row's lock is then held only until the commit.
func bumpGeneration(ctx context.Context, tx bun.IDB) error {
	if _, err := tx.NewUpdate().Model((*ShowGeneration)(nil)).Set("n = n + 1").Where("id = 1").Exec(ctx); err != nil {
		return fmt.Errorf("shows: generation: %w", err)
	}
	return nil
}

// pageKey identifies a list: its filters, tag and viewer.
func (q ListQuery) pageKey(tagID int64) string {
	b := func(v *bool) string {
		if v == nil {
			return "-"
		}
		return fmt.Sprint(*v)
	}
	t := func(v *time.Time) string {
		if v == nil {
			return "-"
		}
		return v.UTC().Format(time.RFC3339)
	}
	viewer := int64(-1)
	if q.Viewer != nil {
		viewer = q.Viewer.UserID
	}
	return fmt.Sprintf("%d|%d|%q|%q|%d|%s|%s|%s|%s|%s|%s|%s|%s|%v",
		viewer, q.UserID, q.Filter, q.Slug, tagID, t(q.From), t(q.To), b(q.Scheduled), b(q.Live), b(q.Archive), b(q.Featured), b(q.Radio), b(q.Off), q.RanOnly)
}

// afterBound restricts sel to the rows after b in list order.
func afterBound(sel *bun.SelectQuery, tagged bool, b pageBound) *bun.SelectQuery {
	start, id := "s.start", "s.id"
	if tagged {
		start, id = "st.start", "st.show_id"
	}
	return sel.WhereGroup(" AND ", func(w *bun.SelectQuery) *bun.SelectQuery {
		return w.Where(start+" < ?", b.start).WhereGroup(" OR ", func(w *bun.SelectQuery) *bun.SelectQuery {
			return w.Where(start+" = ?", b.start).Where(id+" < ?", b.id)
		})
	})
}
