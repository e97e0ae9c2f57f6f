package shows

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// The count of a scheduled=true list (docs/shows.md, "Counts") depends on
// the clock: a show leaves the set when its start passes, without any
// change of its row. It changes, then, only when a show changes (the data
// generation, keyset.go) or when the clock reaches the earliest start in
// the set. So the public count is kept per node with both: the generation
// it was read at and that earliest start; it is used while the generation
// is the same and the clock has not reached the start, which makes it
// exact.

type scheduledEntry struct {
	gen   int64
	n     int
	until time.Time // the earliest start among the counted shows
}

type scheduledCache struct {
	mu sync.Mutex
	m  map[string]scheduledEntry
}

const scheduledEntries = 256

// scheduledCount counts a scheduled=true list visible as vis (seePublic or
// seeAll).
func (l *Lister) scheduledCount(ctx context.Context, f *listFilter, vis visibility) (int, error) {
	gen, err := l.Generation(ctx)
	if err != nil {
		return 0, err
	}
	kq := f.q
	kq.Viewer = nil
	key := fmt.Sprintf("%d|%s", vis, kq.pageKey(f.tagID))
	l.scheduled.mu.Lock()
	e, ok := l.scheduled.m[key]
	l.scheduled.mu.Unlock()
	if ok && e.gen == gen && f.now.Before(e.until) {
		return e.n, nil
	}
	n64, err := l.selectFor(f, vis).Count(ctx)
	if err != nil {
		return 0, fmt.Errorf("shows: list: count: %w", err)
	}
	first, found, err := l.firstStart(ctx, f, vis)
	if err != nil {
		return 0, fmt.Errorf("shows: list: count: %w", err)
	}
	n := int(n64)
	e = scheduledEntry{gen: gen, n: n, until: f.now} // empty set: not kept
	if found {
		e.until = first
	}
	l.scheduled.mu.Lock()
	if l.scheduled.m == nil || len(l.scheduled.m) >= scheduledEntries {
		l.scheduled.m = make(map[string]scheduledEntry)
	}
	l.scheduled.m[key] = e
	l.scheduled.mu.Unlock()
	return n, nil
}
