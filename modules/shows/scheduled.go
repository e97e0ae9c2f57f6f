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
func (s *Service) scheduledCount(ctx context.Context, q ListQuery, tagID int64, now time.Time, vis visibility) (int, error) {
	gen, err := s.generation(ctx)
	if err != nil {
		return 0, err
	}
	kq := q
	kq.Viewer = nil
	key := fmt.Sprintf("%d|%s", vis, kq.pageKey(tagID))
	s.scheduled.mu.Lock()
	e, ok := s.scheduled.m[key]
	s.scheduled.mu.Unlock()
	if ok && e.gen == gen && now.Before(e.until) {
		return e.n, nil
	}
	n64, err := s.filtered(s.listFrom(q, vis), q, tagID, now, vis).Count(ctx)
	if err != nil {
		return 0, fmt.Errorf("shows: list: count: %w", err)
	}
	first := s.filtered(s.listFrom(q, vis), q, tagID, now, vis)
	if tagID != 0 {
		first = first.ColumnExpr("st.start AS start").OrderExpr("st.start ASC")
	} else {
		first = first.ColumnExpr("s.start AS start").OrderExpr("s.start ASC")
	}
	var starts []time.Time
	if err := first.Limit(1).Scan(ctx, &starts); err != nil {
		return 0, fmt.Errorf("shows: list: count: %w", err)
	}
	n := int(n64)
	e = scheduledEntry{gen: gen, n: n, until: now} // empty set: not kept
	if len(starts) == 1 {
		e.until = starts[0]
	}
	s.scheduled.mu.Lock()
	if s.scheduled.m == nil || len(s.scheduled.m) >= scheduledEntries {
		s.scheduled.m = make(map[string]scheduledEntry)
	}
	s.scheduled.m[key] = e
	s.scheduled.mu.Unlock()
	return n, nil
}
