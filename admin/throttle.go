package admin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// throttle counts failed sign-ins per key (email and client address) in a
// fixed window that starts at the first failure.
type throttle interface {
	// blocked is how long key must still wait (0: it may try).
	blocked(ctx context.Context, key string) (time.Duration, error)
	fail(ctx context.Context, key string) error
	reset(ctx context.Context, key string) error
}

// memoryThrottle is the throttle of a single node.
type memoryThrottle struct {
	mu  sync.Mutex
	now func() time.Time
	m   map[string]*attempts
}

type attempts struct {
	n     int
	until time.Time
}

func newMemoryThrottle() *memoryThrottle {
	return &memoryThrottle{now: time.Now, m: map[string]*attempts{}}
}

func (t *memoryThrottle) blocked(_ context.Context, key string) (time.Duration, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	a := t.m[key]
	now := t.now()
	if a == nil || !now.Before(a.until) || a.n < LoginAttempts {
		return 0, nil
	}
	return a.until.Sub(now), nil
}

func (t *memoryThrottle) fail(_ context.Context, key string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	if len(t.m) > 10_000 {
		for k, a := range t.m {
			if !now.Before(a.until) {
				delete(t.m, k)
			}
		}
	}
	a := t.m[key]
	if a == nil || !now.Before(a.until) {
		a = &attempts{until: now.Add(LoginWindow)}
		t.m[key] = a
	}
	a.n++
	return nil
}

func (t *memoryThrottle) reset(_ context.Context, key string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.m, key)
	return nil
}

// redisThrottle shares the count between every node of a cluster.
type redisThrottle struct {
	rdb    *redis.Client
	prefix string
}

// rkey hashes the key so an email never appears in Redis.
func (t *redisThrottle) rkey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return t.prefix + hex.EncodeToString(sum[:16])
}

func (t *redisThrottle) blocked(ctx context.Context, key string) (time.Duration, error) {
	k := t.rkey(key)
	n, err := t.rdb.Get(ctx, k).Int()
	if err == redis.Nil {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("admin: throttle: %w", err)
	}
	if n < LoginAttempts {
		return 0, nil
	}
	ttl, err := t.rdb.PTTL(ctx, k).Result()
	if err != nil {
		return 0, fmt.Errorf("admin: throttle: %w", err)
	}
	if ttl <= 0 {
		return 0, nil
	}
	return ttl, nil
}

func (t *redisThrottle) fail(ctx context.Context, key string) error {
	k := t.rkey(key)
	n, err := t.rdb.Incr(ctx, k).Result()
	if err != nil {
		return fmt.Errorf("admin: throttle: %w", err)
	}
	if n > 1 {
		// A key left without expiry (a crash between INCR and PEXPIRE)
		// gets its window now rather than never.
		ttl, err := t.rdb.PTTL(ctx, k).Result()
		if err != nil {
			return fmt.Errorf("admin: throttle: %w", err)
		}
		if ttl > 0 {
			return nil
		}
	}
	if err := t.rdb.PExpire(ctx, k, LoginWindow).Err(); err != nil {
		return fmt.Errorf("admin: throttle: %w", err)
	}
	return nil
}

func (t *redisThrottle) reset(ctx context.Context, key string) error {
	if err := t.rdb.Del(ctx, t.rkey(key)).Err(); err != nil {
		return fmt.Errorf("admin: throttle: %w", err)
	}
	return nil
}
