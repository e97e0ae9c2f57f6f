package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// The failed-authentication throttle (ONAIR_AUTH_FAILURES).
//
// Every /v1 request that fails the token check (no token, another scheme,
// an unknown or revoked token) counts against its client address, in a
// fixed one-minute window. Once an address has failed the allowance, its
// /v1 requests are answered 429 with Retry-After until the window ends,
// before the token is even looked up: guessing tokens costs the guesser a
// minute per allowance, and the database nothing. Requests with a valid
// token do not count; their budget is the per-token limiter's.
//
// The success path costs no I/O: the counter (Redis on a cluster) is only
// written when a check fails, and INCR's answer tells the node that the
// address is over its allowance; the node then keeps the address's block
// in memory until the window ends and answers its requests 429 without
// asking anyone. Another node learns of the block at the address's next
// failure there (one more token lookup per node and window).
//
// The counter is Fiber's limiter's idea (a fixed window per key) but needs
// an atomic increment that is read before the request is judged, which the
// limiter's get-then-set storage does not give across nodes: with Redis it
// is INCR and EXPIRE on {prefix}authfail:{address}, shared by every node;
// without, a map in memory.
type authThrottle struct {
	max       int
	window    time.Duration
	counter   failureCounter
	log       *slog.Logger
	throttled prometheus.Counter

	mu        sync.Mutex
	blocked   map[string]time.Time // address → end of its window
	nextSweep time.Time
}

// failureCounter counts failures per key in fixed windows.
type failureCounter interface {
	// add records one failure of key and returns the failures of key in
	// its current window, this one included, and the time left in it.
	add(ctx context.Context, key string) (int, time.Duration, error)
}

func newAuthThrottle(core *Core) (*authThrottle, error) {
	t := &authThrottle{
		max:     core.Config.AuthFailures,
		window:  time.Minute,
		log:     core.Log,
		blocked: map[string]time.Time{},
		throttled: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "onair_auth_throttled_total",
			Help: "/v1 requests answered 429 because their client address failed authentication too often (ONAIR_AUTH_FAILURES).",
		}),
	}
	if core.Redis != nil {
		t.counter = &redisFailures{rdb: core.Redis, prefix: core.Config.RedisPrefix + "authfail:", window: t.window}
	} else {
		t.counter = &memoryFailures{window: t.window, windows: map[string]*failureWindow{}}
	}
	if err := core.Metrics.Register(t.throttled); err != nil {
		return nil, fmt.Errorf("app: auth throttle metric: %w", err)
	}
	return t, nil
}

// middleware answers 429 to an address over its allowance, and counts the
// 401s of the token check that runs after it.
func (t *authThrottle) middleware() fiber.Handler {
	return func(c *fiber.Ctx) error {
		if left := t.blockedFor(c); left > 0 {
			return t.refuse(left)
		}
		err := c.Next()
		if !failedAuth(err) {
			return err
		}
		key := ClientKey(c.IP())
		n, left, aerr := t.counter.add(c.UserContext(), key)
		if aerr != nil {
			// The throttle is a guard, not a gate: with Redis away the
			// token check still protects the API.
			t.log.Warn("auth throttle: count failed", "err", aerr)
			return err
		}
		if n >= t.max {
			t.block(key, left)
		}
		if n > t.max {
			// Over the allowance already (counted on another node).
			return t.refuse(left)
		}
		return err
	}
}

func (t *authThrottle) refuse(left time.Duration) error {
	t.throttled.Inc()
	return TooManyRequests("too many failed authentications from this address", max(1, int((left+time.Second-1)/time.Second)))
}

// blockedFor is the time left in the block of the request's address this
// node knows of; 0 when none. With no address blocked (the usual case) it
// does not even read the address (c.IP formats it anew each call).
func (t *authThrottle) blockedFor(c *fiber.Ctx) time.Duration {
	t.mu.Lock()
	if len(t.blocked) == 0 {
		t.mu.Unlock()
		return 0
	}
	t.mu.Unlock()
	key := ClientKey(c.IP())
	t.mu.Lock()
	until, ok := t.blocked[key]
	t.mu.Unlock()
	if !ok {
		return 0
	}
	return time.Until(until)
}

func (t *authThrottle) block(key string, left time.Duration) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if now.After(t.nextSweep) {
		for k, until := range t.blocked {
			if !now.Before(until) {
				delete(t.blocked, k)
			}
		}
		t.nextSweep = now.Add(t.window)
	}
	t.blocked[key] = now.Add(left)
}

// failedAuth tells whether the token check refused the request.
func failedAuth(err error) bool {
	if err == nil {
		return false // the usual answer, without errors.As's allocation
	}
	var e *Error
	return errors.As(err, &e) && e.Status == fiber.StatusUnauthorized
}

type failureWindow struct {
	n     int
	until time.Time
}

// memoryFailures keeps the windows of one process. Expired windows are
// swept as the map is used, at most once a window.
type memoryFailures struct {
	window    time.Duration
	mu        sync.Mutex
	windows   map[string]*failureWindow
	nextSweep time.Time
}

func (m *memoryFailures) add(_ context.Context, key string) (int, time.Duration, error) {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if now.After(m.nextSweep) {
		for k, w := range m.windows {
			if !now.Before(w.until) {
				delete(m.windows, k)
			}
		}
		m.nextSweep = now.Add(m.window)
	}
	w := m.windows[key]
	if w == nil || !now.Before(w.until) {
		w = &failureWindow{until: now.Add(m.window)}
		m.windows[key] = w
	}
	w.n++
	return w.n, w.until.Sub(now), nil
}

// redisFailures shares the windows between nodes: a key per address that
// expires with its window.
type redisFailures struct {
	rdb    *redis.Client
	prefix string
	window time.Duration
}

func (r *redisFailures) add(ctx context.Context, key string) (int, time.Duration, error) {
	// The first failure opens the window (SET NX with its expiry); every
	// failure, that one included, counts.
	pipe := r.rdb.TxPipeline()
	pipe.SetNX(ctx, r.prefix+key, 0, r.window)
	n := pipe.Incr(ctx, r.prefix+key)
	ttl := pipe.PTTL(ctx, r.prefix+key)
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, 0, err
	}
	return int(n.Val()), max(ttl.Val(), 0), nil
}
