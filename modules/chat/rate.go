package chat

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// RateGate lets one action per key through per window: in memory on one
// node, in Redis when several nodes share the chat.
type RateGate interface {
	// Allow reports whether the action may happen now; if not, how long
	// until it may.
	Allow(ctx context.Context, key string, window time.Duration) (bool, time.Duration)
}

// memoryGate is the single-node RateGate.
type memoryGate struct {
	mu   sync.Mutex
	next map[string]time.Time
}

func newMemoryGate() *memoryGate { return &memoryGate{next: map[string]time.Time{}} }

func (g *memoryGate) Allow(_ context.Context, key string, window time.Duration) (bool, time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := time.Now()
	if until, ok := g.next[key]; ok && now.Before(until) {
		return false, until.Sub(now)
	}
	if len(g.next) > 50_000 {
		for k, until := range g.next {
			if now.After(until) {
				delete(g.next, k)
			}
		}
	}
	g.next[key] = now.Add(window)
	return true, 0
}

// redisGate is the shared RateGate: SET NX with the window as expiry.
// While Redis does not answer, the node's own gate decides (the chat
// stays rate limited, per node; docs/operations.md).
type redisGate struct {
	rdb    *redis.Client
	prefix string
	local  *memoryGate
	away   func() bool // app.RedisState.Down
}

func (g *redisGate) Allow(ctx context.Context, key string, window time.Duration) (bool, time.Duration) {
	if g.away() {
		return g.local.Allow(ctx, key, window)
	}
	k := g.prefix + "rate:" + key
	ok, err := g.rdb.SetNX(ctx, k, 1, window).Result()
	if err != nil {
		return g.local.Allow(ctx, key, window)
	}
	if ok {
		return true, 0
	}
	ttl, err := g.rdb.PTTL(ctx, k).Result()
	if err != nil || ttl <= 0 {
		ttl = window
	}
	return false, ttl
}
