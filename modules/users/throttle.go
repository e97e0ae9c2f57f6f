package users

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/onair/onair/app"
)

// throttle counts events per key (failed sign-ins per email and client
// address; reset mails per address and per client) in a fixed window that
// starts at the first; a key that reached the limit waits for the window's
// end.
type throttle interface {
	// blocked is how long key must still wait (0: it may try).
	blocked(ctx context.Context, key string) (time.Duration, error)
	fail(ctx context.Context, key string) error
	reset(ctx context.Context, key string) error
}

// memoryThrottle is the throttle of a single node.
type memoryThrottle struct {
	limit  int
	window time.Duration

	mu  sync.Mutex
	now func() time.Time
	m   map[string]*attempts
}

type attempts struct {
	n     int
	until time.Time
}

func newMemoryThrottle(limit int, window time.Duration) *memoryThrottle {
	return &memoryThrottle{limit: limit, window: window, now: time.Now, m: map[string]*attempts{}}
}

func (t *memoryThrottle) blocked(_ context.Context, key string) (time.Duration, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	a := t.m[key]
	now := t.now()
	if a == nil || !now.Before(a.until) || a.n < t.limit {
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
		a = &attempts{until: now.Add(t.window)}
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
	limit  int
	window time.Duration
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
		return 0, fmt.Errorf("users: throttle: %w", err)
	}
	if n < t.limit {
		return 0, nil
	}
	ttl, err := t.rdb.PTTL(ctx, k).Result()
	if err != nil {
		return 0, fmt.Errorf("users: throttle: %w", err)
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
		return fmt.Errorf("users: throttle: %w", err)
	}
	if n > 1 {
		// A key left without expiry (a crash between INCR and PEXPIRE)
		// gets its window now rather than never.
		ttl, err := t.rdb.PTTL(ctx, k).Result()
		if err != nil {
			return fmt.Errorf("users: throttle: %w", err)
		}
		if ttl > 0 {
			return nil
		}
	}
	if err := t.rdb.PExpire(ctx, k, t.window).Err(); err != nil {
		return fmt.Errorf("users: throttle: %w", err)
	}
	return nil
}

func (t *redisThrottle) reset(ctx context.Context, key string) error {
	if err := t.rdb.Del(ctx, t.rkey(key)).Err(); err != nil {
		return fmt.Errorf("users: throttle: %w", err)
	}
	return nil
}

// Sign-in throttling, shared by every sign-in form (the public pages and
// the console): LoginAttempts failures per email and client address within
// LoginWindow block that pair until the window ends.
const (
	LoginAttempts = 5
	LoginWindow   = 15 * time.Minute
)

// SignIn checks an email and password for a client address, counting
// failures: a wrong pair is ErrNotFound, a blocked one a 429 with
// Retry-After, a suspended user's right pair ErrSuspended (counted as no
// failure: it is no guess). A right pair clears the count.
func (s *Service) SignIn(ctx context.Context, email, password, ip string) (*User, error) {
	key := strings.ToLower(strings.TrimSpace(email)) + "|" + ip
	if wait, err := s.throttle.blocked(ctx, key); err != nil {
		return nil, err
	} else if wait > 0 {
		secs := int((wait + time.Second - 1) / time.Second)
		return nil, app.TooManyRequests(fmt.Sprintf("too many failed sign-ins; try again in %d minutes", (secs+59)/60), secs)
	}
	u, err := s.CheckPassword(ctx, email, password)
	if errors.Is(err, ErrNotFound) {
		if ferr := s.throttle.fail(ctx, key); ferr != nil {
			return nil, ferr
		}
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	if err := s.throttle.reset(ctx, key); err != nil {
		return nil, err
	}
	return u, nil
}

// Sign-up throttling: every attempt of the sign-up form counts against
// its client address, accepted or not, so that neither accounts nor the
// "already registered" answer (which tells whether an address has an
// account) come by the thousand. SettingSignupLimit attempts within
// SignupWindow block the address until the window ends.
const (
	SettingSignupLimit = "ONAIR_SIGNUP_LIMIT"
	DefaultSignupLimit = 10
	SignupWindow       = time.Hour
)

// SignUp creates an account for a person at a client address, within the
// address's sign-up budget; past it, a 429 with Retry-After and nothing
// created.
func (s *Service) SignUp(ctx context.Context, n NewUser, ip string) (*User, error) {
	if s.signups != nil {
		wait, err := s.signups.blocked(ctx, ip)
		if err != nil {
			return nil, err
		}
		if wait > 0 {
			secs := int((wait + time.Second - 1) / time.Second)
			return nil, app.TooManyRequests(fmt.Sprintf("too many sign-ups from your address; try again in %d minutes", (secs+59)/60), secs)
		}
		// Copied: the memory throttle keeps it as a map key, and a
		// handler's string may be Fiber's reused buffer.
		if err := s.signups.fail(ctx, strings.Clone(ip)); err != nil {
			return nil, err
		}
	}
	return s.Create(ctx, n)
}

// UseRedisThrottle shares the sign-in counts, the sign-up budgets and the
// reset mail limits of every node through Redis, under prefix.
func (s *Service) UseRedisThrottle(rdb *redis.Client, prefix string) {
	s.signups = &redisThrottle{rdb: rdb, prefix: prefix + "signup:", limit: s.signupLimit, window: SignupWindow}
	s.throttle = &redisThrottle{rdb: rdb, prefix: prefix + "login:", limit: LoginAttempts, window: LoginWindow}
	s.resetMails = &redisThrottle{rdb: rdb, prefix: prefix + "resetmail:", limit: ResetMailsPerAddress, window: ResetMailWindow}
	s.resetClients = &redisThrottle{rdb: rdb, prefix: prefix + "resetclient:", limit: ResetMailsPerClient, window: ResetMailWindow}
}
