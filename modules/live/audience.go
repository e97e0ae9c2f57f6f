package live

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/onair/onair/app"
)

// The audience of a live show: how many watch it now (viewers.go counts the
// players polling this node) and the most at once during its run (the
// peak, recorded on the show).
//
// Across nodes, a player may poll any node (a load balancer spreads them;
// the node forwards to the ingesting one, proxy.go, and counts the viewer
// where it asked). So, with Redis, every node shares its sightings in a
// sorted set per show, {prefix}live:viewers:{show}, client address →
// time of its last poll in ms: every viewerShareEvery each node sends the
// sightings the set lacks (a known viewer once per viewerRefresh), with
// ZADD GT so a node's older sighting never moves a newer one back. The
// count is the members seen within viewerWindow, so one address polling
// two nodes counts once, and a node that dies takes its viewers with it
// within the window (up to viewerRefresh + viewerShareEvery later than on
// one node).
//
// The peak is kept by the node ingesting the show, from that shared count:
// it samples the count every peakEvery and records a rise on the show at
// most every peakSaveEvery, and at once when the publication ends or the
// show stops. The column only grows (shows.RecordPeak), so a publisher
// that moves to another node keeps the larger peak.

const (
	viewerShareEvery = 2 * time.Second
	peakEvery        = 2 * time.Second
	peakSaveEvery    = 10 * time.Second
	// audienceTimeout bounds a count's round trip to Redis; past it the
	// node answers with its own viewers.
	audienceTimeout = time.Second
)

func (c *cluster) viewersKey(show int64) string {
	return c.prefix + "live:viewers:" + strconv.FormatInt(show, 10)
}

// shareViewers sends this node's new sightings and trims the stale ones.
func (c *cluster) shareViewers(ctx context.Context) {
	now := time.Now()
	batch := c.viewers.unshared(now)
	if len(batch) == 0 {
		return
	}
	stale := strconv.FormatInt(now.Add(-viewerWindow).UnixMilli(), 10)
	pipe := c.rdb.Pipeline()
	for show, clients := range batch {
		key := c.viewersKey(show)
		members := make([]redis.Z, 0, len(clients))
		for client, last := range clients {
			members = append(members, redis.Z{Score: float64(last.UnixMilli()), Member: client})
		}
		pipe.ZAddArgs(ctx, key, redis.ZAddArgs{GT: true, Members: members})
		pipe.ZRemRangeByScore(ctx, key, "-inf", "("+stale)
		pipe.PExpire(ctx, key, 2*viewerWindow)
	}
	if _, err := pipe.Exec(ctx); err != nil && ctx.Err() == nil {
		c.log.Log(ctx, app.RedisLevel(err, slog.LevelWarn), "live: share viewers", "err", err)
	}
}

// countViewers is the show's viewers on every node.
func (c *cluster) countViewers(show int64) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), audienceTimeout)
	defer cancel()
	from := strconv.FormatInt(time.Now().Add(-viewerWindow).UnixMilli(), 10)
	n, err := c.rdb.ZCount(ctx, c.viewersKey(show), from, "+inf").Result()
	return int(n), err
}

// forgetViewers drops a show's shared audience (it stopped or was
// deleted).
func (c *cluster) forgetViewers(ctx context.Context, show int64) {
	if err := c.rdb.Del(ctx, c.viewersKey(show)).Err(); err != nil {
		c.log.Log(ctx, app.RedisLevel(err, slog.LevelWarn), "live: forget viewers", "show", show, "err", err)
	}
}

// Viewers counts the client addresses watching a live show now (polling
// its playlists within the last 30 s), on every node of a cluster. Those
// this node saw but has not shared yet are in its own count; when Redis
// does not answer, that count is the answer.
func (m *Module) Viewers(showID int64) int {
	n := m.viewers.count(showID, time.Now())
	if m.cluster != nil {
		shared, err := m.cluster.countViewers(showID)
		if err != nil {
			m.core.Log.Log(context.Background(), app.RedisLevel(err, slog.LevelWarn), "live: count viewers", "show", showID, "err", err)
		}
		n = max(n, shared)
	}
	return n
}

// peak is the peak of one show this node ingests.
type peak struct {
	max, saved int
	savedAt    time.Time
}

// peaks are the peaks of the shows this node ingests.
type peaks struct {
	mu sync.Mutex
	m  map[int64]*peak
}

// observe takes a count of the show's viewers; it returns the peak, and
// whether it rose enough since it was last recorded to be recorded now.
func (p *peaks) observe(show int64, n int, now time.Time) (int, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[int64]*peak{}
	}
	pk := p.m[show]
	if pk == nil {
		pk = &peak{}
		p.m[show] = pk
	}
	pk.max = max(pk.max, n)
	return pk.max, pk.max > pk.saved && now.Sub(pk.savedAt) >= peakSaveEvery
}

// saved notes that n was recorded.
func (p *peaks) saved(show int64, n int, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pk := p.m[show]; pk != nil {
		pk.saved, pk.savedAt = max(pk.saved, n), now
	}
}

// take forgets the show's peak and returns what was not recorded yet (0:
// nothing).
func (p *peaks) take(show int64) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	pk := p.m[show]
	delete(p.m, show)
	if pk == nil || pk.max <= pk.saved {
		return 0
	}
	return pk.max
}

// samplePeaks counts the viewers of every show this node ingests and
// records the peaks that rose.
func (m *Module) samplePeaks(ctx context.Context) {
	m.mu.Lock()
	ids := make([]int64, 0, len(m.streams))
	for id := range m.streams {
		ids = append(ids, id)
	}
	m.mu.Unlock()
	for _, id := range ids {
		now := time.Now()
		if n, save := m.peaks.observe(id, m.Viewers(id), now); save {
			if err := m.shows.RecordPeak(ctx, id, n); err != nil {
				if ctx.Err() == nil {
					m.core.Log.Warn("live: record peak viewers", "show", id, "err", err)
				}
				continue
			}
			m.peaks.saved(id, n, now)
		}
	}
}

// endPeak records what is left of the show's peak (its publication ended,
// or it stopped) and forgets it.
func (m *Module) endPeak(show int64) {
	n := m.peaks.take(show)
	if n == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.shows.RecordPeak(ctx, show, n); err != nil {
		m.core.Log.Error("live: record peak viewers", "show", show, "err", err)
	}
}
