package live

import (
	"sync"
	"time"
)

// viewerWindow is how long a client address counts as watching after its
// last poll of a live playlist: players poll every target duration (2 s),
// so 30 s rides out a stall without counting a listener who left long ago.
const viewerWindow = 30 * time.Second

// viewerRefresh is how stale a viewer's sighting may be in the count the
// nodes share (audience.go) before this node sends it again: a viewer who
// polls every 2 s is sent once every 10 s, not at every poll.
const viewerRefresh = 10 * time.Second

// viewers counts the distinct client addresses polling each show's live
// playlists, the way HLS servers without a player beacon count an
// audience. Two people behind one NAT count once.
type viewers struct {
	window time.Duration

	mu   sync.Mutex
	seen map[int64]map[string]*sighting // show → client address → sighting
}

// sighting is a client's last poll, and the last poll of it this node
// shared with the others (zero: not yet).
type sighting struct {
	last, shared time.Time
}

func newViewers(window time.Duration) *viewers {
	return &viewers{window: window, seen: map[int64]map[string]*sighting{}}
}

// saw records a poll of show's live playlist by client.
func (v *viewers) saw(show int64, client string, now time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	m := v.seen[show]
	if m == nil {
		m = map[string]*sighting{}
		v.seen[show] = m
	}
	if s := m[client]; s != nil {
		s.last = now
		return
	}
	m[client] = &sighting{last: now}
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

// unshared returns, per show, the clients (with their last poll) whose
// newest sighting the other nodes lack: new ones at once, the others once
// their shared sighting is viewerRefresh old. It marks them shared.
func (v *viewers) unshared(now time.Time) map[int64]map[string]time.Time {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := map[int64]map[string]time.Time{}
	for show := range v.seen {
		if v.prune(show, now) == 0 {
			continue
		}
		for client, s := range v.seen[show] {
			if !s.shared.IsZero() && s.last.Sub(s.shared) < viewerRefresh {
				continue
			}
			if out[show] == nil {
				out[show] = map[string]time.Time{}
			}
			out[show][client] = s.last
			s.shared = s.last
		}
	}
	return out
}

// forget drops a show's audience (it stopped or was deleted).
func (v *viewers) forget(show int64) {
	v.mu.Lock()
	delete(v.seen, show)
	v.mu.Unlock()
}

func (v *viewers) prune(show int64, now time.Time) int {
	m := v.seen[show]
	for client, s := range m {
		if now.Sub(s.last) > v.window {
			delete(m, client)
		}
	}
	if len(m) == 0 {
		delete(v.seen, show)
	}
	return len(m)
}
