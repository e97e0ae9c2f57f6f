package app

import (
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/utils"
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
// nodes and Fiber's limiter on Redis storage counts it (server.go).
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
	h := &c.Response().Header
	var buf [20]byte
	if remaining < 0 {
		h.SetCanonical([]byte(fiber.HeaderRetryAfter), strconv.AppendUint(buf[:0], uint64(reset), 10))
		return l.limitReached(c)
	}
	err := c.Next()
	h.SetCanonical(headerRateLimit, strconv.AppendInt(buf[:0], int64(l.max), 10))
	h.SetCanonical(headerRateRemaining, strconv.AppendInt(buf[:0], int64(remaining), 10))
	h.SetCanonical(headerRateReset, strconv.AppendUint(buf[:0], uint64(reset), 10))
	return err
}
