package live

import (
	"sync"
	"sync/atomic"
	"time"
)

// viewerWindow is how long a playback session counts as watching after its
// last poll of a live playlist: players poll every target duration (2 s),
// so 30 s rides out a stall without counting a listener who left long ago.
const viewerWindow = 30 * time.Second

// viewerRefresh is how stale a viewer's sighting may be in the count the
// nodes share (audience.go) before this node sends it again: a viewer who
// polls every 2 s is sent once every 10 s, not at every poll.
const viewerRefresh = 10 * time.Second

// viewers counts the playback sessions polling each show's live
// playlists (sessions.go): a player page's session, or a plain client's
// address and User-Agent. Two players behind one NAT count twice.
type viewers struct {
	window time.Duration

	// mu is read-locked by the poll of a known viewer (its sighting's
	// time is atomic), which is every poll but a viewer's first: the
	// answers to a crowd's blocking reloads, released together, do not
	// queue on it (bench/results/2026-11-28-wake.md).
	mu   sync.RWMutex
	seen map[int64]*audience
}

// audience is one show's viewers on this node: their sightings, and how
// many of them each address group has (sessionsPerAddress caps it).
type audience struct {
	keys    map[string]*sighting
	perAddr map[string]int
}

// sighting is a viewer's last poll, and the last poll of it this node
// shared with the others (zero: not yet).
type sighting struct {
	last   atomic.Int64 // Unix nanoseconds
	shared time.Time
	group  string
}

func (s *sighting) lastPoll() time.Time { return time.Unix(0, s.last.Load()) }

func newViewers(window time.Duration) *viewers {
	return &viewers{window: window, seen: map[int64]*audience{}}
}

// saw records a poll of show's live playlist by v. A new viewer of an
// address group that has sessionsPerAddress already counts as the group's
// one overflow viewer.
func (v *viewers) saw(show int64, who viewer, now time.Time) {
	v.mu.RLock()
	if a := v.seen[show]; a != nil {
		if s := a.keys[who.key]; s != nil {
			s.last.Store(now.UnixNano())
			v.mu.RUnlock()
			return
		}
	}
	v.mu.RUnlock()
	v.mu.Lock()
	defer v.mu.Unlock()
	a := v.seen[show]
	if a == nil {
		a = &audience{keys: map[string]*sighting{}, perAddr: map[string]int{}}
		v.seen[show] = a
	}
	key := who.key
	if s := a.keys[key]; s != nil {
		s.last.Store(now.UnixNano())
		return
	}
	if a.perAddr[who.group] >= sessionsPerAddress {
		key = "o:" + who.group
		if s := a.keys[key]; s != nil {
			s.last.Store(now.UnixNano())
			return
		}
	}
	s := &sighting{group: who.group}
	s.last.Store(now.UnixNano())
	a.keys[key] = s
	a.perAddr[who.group]++
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
		for client, s := range v.seen[show].keys {
			last := s.lastPoll()
			if !s.shared.IsZero() && last.Sub(s.shared) < viewerRefresh {
				continue
			}
			if out[show] == nil {
				out[show] = map[string]time.Time{}
			}
			out[show][client] = last
			s.shared = last
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
	a := v.seen[show]
	if a == nil {
		return 0
	}
	for key, s := range a.keys {
		if now.Sub(s.lastPoll()) > v.window {
			delete(a.keys, key)
			if a.perAddr[s.group]--; a.perAddr[s.group] <= 0 {
				delete(a.perAddr, s.group)
			}
		}
	}
	if len(a.keys) == 0 {
		delete(v.seen, show)
	}
	return len(a.keys)
}
