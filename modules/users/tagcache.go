package users

import (
	"context"
	"fmt"
	"sync"

	"github.com/uptrace/bun"
)

// TagCache maps tag ids to their rows for the shows lists, which then read
// only a show's tag ids with the show. A tag row never changes once it is
// written: a show's tags are re-pointed, never renamed, and the only
// rewrites of the table (this module's migrations 0006, a merge of
// duplicates, and 0009, unique slugs) run before anything is served. So
// an entry never goes stale, and a tag another node wrote is
// read from the database the first time it is asked for. The cache holds
// one database's tags; it is emptied when it reaches its bound.
type TagCache struct {
	mu   sync.RWMutex
	byID map[int64]Tag
	max  int
}

// NewTagCache returns an empty cache of at most max tags.
func NewTagCache(max int) *TagCache {
	return &TagCache{byID: make(map[int64]Tag), max: max}
}

// Get returns the tags with the given ids (each once), reading those it
// does not hold in one statement. An id without a row is left out.
func (c *TagCache) Get(ctx context.Context, db bun.IDB, ids []int64) (map[int64]Tag, error) {
	out := make(map[int64]Tag, len(ids))
	var missing []int64
	c.mu.RLock()
	for _, id := range ids {
		if t, ok := c.byID[id]; ok {
			out[id] = t
		} else {
			missing = append(missing, id)
		}
	}
	c.mu.RUnlock()
	if len(missing) == 0 {
		return out, nil
	}
	var rows []Tag
	if err := db.NewSelect().Model(&rows).Where("id IN (?)", bun.List(missing)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("users: tags: %w", err)
	}
	c.mu.Lock()
	if len(c.byID)+len(rows) > c.max {
		clear(c.byID)
	}
	for _, t := range rows {
		c.byID[t.ID] = t
		out[t.ID] = t
	}
	c.mu.Unlock()
	return out, nil
}
