package app

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/utils"
	"github.com/redis/go-redis/v9"
)

// memoryLimiter is the per-token rate limit of a node without Redis
// (ONAIR_RATE_LIMIT, docs/api.md "Rate limits"). It counts exactly as
// Fiber's limiter does in memory — a fixed window of rateWindow seconds
// from a key's first request, on Fiber's once-a-second clock, the
// X-RateLimit-* trio on every answer, Retry-After and LimitReached past
// the limit — but without its costs on every /v1 request: Fiber's
// limiter goes through a storage interface (the key copied, the entry
// stored again) under one lock for every key, and sets its headers by
// names it normalises and values it formats into new strings. Here the
// key is the principal's cached one, the lock is held for a map lookup
// and two integers, and the headers are written in their canonical form
// from a buffer on the stack. With Redis, the budget is shared between
// nodes and redisLimiter counts it.
type memoryLimiter struct {
	max          int
	window       uint32 // seconds
	key          func(c *fiber.Ctx) string
	limitReached fiber.Handler

	mu        sync.Mutex
	windows   map[string]*limitWindow
	nextSweep uint32
}

type limitWindow struct {
	hits int
	exp  uint32 // end of the window, in utils.Timestamp seconds
}

// The X-RateLimit-* names as fasthttp normalises them on the wire.
var (
	headerRateLimit     = []byte("X-Ratelimit-Limit")
	headerRateRemaining = []byte("X-Ratelimit-Remaining")
	headerRateReset     = []byte("X-Ratelimit-Reset")
)

func newMemoryLimiter(max int, window uint32, key func(*fiber.Ctx) string, limitReached fiber.Handler) *memoryLimiter {
	utils.StartTimeStampUpdater()
	return &memoryLimiter{max: max, window: window, key: key, limitReached: limitReached, windows: map[string]*limitWindow{}}
}

// hit counts one request of key at ts and returns the requests left in
// its window (negative past the limit) and the seconds until it resets.
// Windows that have ended are swept at most once a window.
func (l *memoryLimiter) hit(key string, ts uint32) (remaining int, reset uint32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ts >= l.nextSweep {
		for k, w := range l.windows {
			if ts >= w.exp {
				delete(l.windows, k)
			}
		}
		l.nextSweep = ts + l.window
	}
	w := l.windows[key]
	if w == nil {
		w = &limitWindow{exp: ts + l.window}
		l.windows[key] = w
	} else if ts >= w.exp {
		w.hits, w.exp = 0, ts+l.window
	}
	w.hits++
	return l.max - w.hits, w.exp - ts
}

func (l *memoryLimiter) handler(c *fiber.Ctx) error {
	remaining, reset := l.hit(l.key(c), atomic.LoadUint32(&utils.Timestamp))
	return limited(c, l.max, remaining, reset, l.limitReached)
}

// limited answers with limitReached past the limit (remaining < 0), with
// Retry-After set; otherwise it runs the request and adds the
// X-RateLimit-* trio to its answer.
func limited(c *fiber.Ctx, max, remaining int, reset uint32, limitReached fiber.Handler) error {
	h := &c.Response().Header
	var buf [20]byte
	if remaining < 0 {
		h.SetCanonical([]byte(fiber.HeaderRetryAfter), strconv.AppendUint(buf[:0], uint64(reset), 10))
		return limitReached(c)
	}
	err := c.Next()
	h.SetCanonical(headerRateLimit, strconv.AppendInt(buf[:0], int64(max), 10))
	h.SetCanonical(headerRateRemaining, strconv.AppendInt(buf[:0], int64(remaining), 10))
	h.SetCanonical(headerRateReset, strconv.AppendUint(buf[:0], uint64(reset), 10))
	return err
}

// redisLimiter is the per-token rate limit shared by every node on one
// Redis: the same fixed window from a key's first request as
// memoryLimiter, counted by one script run in Redis, so two nodes
// answering the same token at the same moment cannot both take the last
// request of its budget (a read of the count and a write of it plus one,
// as Fiber's limiter does through its storage interface, can).
type redisLimiter struct {
	max          int
	window       time.Duration
	rdb          *redis.Client
	key          func(c *fiber.Ctx) string
	limitReached fiber.Handler
	// local counts while Redis is away: each node then applies the
	// limit on its own.
	local *memoryLimiter
	state *RedisState
	log   *slog.Logger
}

// limitScript counts a request in KEYS[1]: the first of a window starts
// its expiry of ARGV[1] ms. It returns the count and the ms left.
var limitScript = redis.NewScript(`
local n = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if n == 1 or ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {n, ttl}
`)

// hit counts one request of key and returns the requests left in its
// window (negative past the limit) and the seconds until it resets.
func (l *redisLimiter) hit(ctx context.Context, key string) (remaining int, reset uint32, err error) {
	res, err := limitScript.Run(ctx, l.rdb, []string{key}, l.window.Milliseconds()).Int64Slice()
	if err != nil {
		return 0, 0, err
	}
	if len(res) != 2 {
		return 0, 0, fmt.Errorf("rate limit script answered %v", res)
	}
	return l.max - int(res[0]), uint32((res[1] + 999) / 1000), nil
}

// handler counts in Redis; when Redis does not answer, the node counts on
// its own (memoryLimiter), so the limit still protects the service while
// Redis is away, per node rather than shared (RedisState logs the outage
// once). A reply that is not an outage is a fault of the script: the
// request passes, and the fault is logged.
func (l *redisLimiter) handler(c *fiber.Ctx) error {
	if l.state.Down() {
		return l.local.handler(c)
	}
	remaining, reset, err := l.hit(c.UserContext(), l.key(c))
	if err != nil {
		if !IsRedisOutage(err) {
			l.log.Error("rate limit: Redis refused the count; the request passes", "err", err)
			return c.Next()
		}
		return l.local.handler(c)
	}
	return limited(c, l.max, remaining, reset, l.limitReached)
}
