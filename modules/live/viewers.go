package live

import (
	"sync"
	"time"
)

// viewerWindow is how long a client address counts as watching after its
// last poll of a live playlist: players poll every target duration (2 s),
// so 30 s rides out a stall without counting a listener who left long ago.
const viewerWindow = 30 * time.Second

// viewers counts the distinct client addresses polling each show's live
// playlists, the way HLS servers without a player beacon count an
// audience. Two people behind one NAT count once.
type viewers struct {
	window time.Duration

	mu   sync.Mutex
	seen map[int64]map[string]time.Time // show → client address → last poll
}

func newViewers(window time.Duration) *viewers {
	return &viewers{window: window, seen: map[int64]map[string]time.Time{}}
}

// saw records a poll of show's live playlist by client.
func (v *viewers) saw(show int64, client string, now time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	m := v.seen[show]
	if m == nil {
		m = map[string]time.Time{}
		v.seen[show] = m
	}
	m[client] = now
}

// count returns the viewers of one show now.
func (v *viewers) count(show int64, now time.Time) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.prune(show, now)
}

// total returns the viewers of every show now, forgetting the stale ones.
func (v *viewers) total(now time.Time) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	n := 0
	for show := range v.seen {
		n += v.prune(show, now)
	}
	return n
}

// forget drops a show's audience (it stopped or was deleted).
func (v *viewers) forget(show int64) {
	v.mu.Lock()
	delete(v.seen, show)
	v.mu.Unlock()
}

func (v *viewers) prune(show int64, now time.Time) int {
	m := v.seen[show]
	for client, last := range m {
		if now.Sub(last) > v.window {
			delete(m, client)
		}
	}
	if len(m) == 0 {
		delete(v.seen, show)
	}
	return len(m)
}
