package users

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/singleflight"

	"github.com/onair/onair/app"
)

// SettingTokenCacheTTL is how long a node trusts a token it has looked up
// (docs/operations.md, "Token cache").
const SettingTokenCacheTTL = "ONAIR_TOKEN_CACHE_TTL"

// tokenCacheMax bounds the cache; past it the cache starts over.
const tokenCacheMax = 50_000

// tokenCache keeps, per node, the principal of each token looked up in the
// last ttl, so a client's requests cost one token query per ttl rather
// than one each. A revocation or a change of the user's roles made through
// the service drops the entries at once on the node that made it and, with
// Redis, on every node through a pub/sub message; a change that misses
// both (a row edited by hand, a lost message) is seen after at most ttl.
//
// A lookup that was under way when an entry was dropped does not put its
// answer back (gen): the answer may predate the change. Concurrent misses
// of one token share one lookup (flight).
type tokenCache struct {
	ttl time.Duration
	mu  sync.RWMutex
	m   map[[sha256.Size]byte]tokenEntry
	// gen counts the drops; put keeps an answer only when none happened
	// since its lookup began.
	gen    uint64
	flight singleflight.Group
	// lookupTimeout is tokenLookupTimeout unless a test sets it.
	lookupTimeout time.Duration

	rdb     *redis.Client
	channel string
	log     *slog.Logger
}

type tokenEntry struct {
	p     *app.Principal // shared by every request of the token: read-only
	until time.Time
}

func (c *tokenCache) get(sum [sha256.Size]byte, now time.Time) *app.Principal {
	if c == nil || c.ttl <= 0 {
		return nil
	}
	c.mu.RLock()
	e, ok := c.m[sum]
	c.mu.RUnlock()
	if !ok || !now.Before(e.until) {
		return nil
	}
	return e.p
}

// tokenLookupTimeout bounds a shared token lookup, which runs detached
// from the requests waiting on it. One that gives up (SQLite held by a
// writer past its busy timeout, the pool's one connection busy) answers
// app.ErrBusy: 503 unavailable with Retry-After for every request that
// waited on it, never a timeout.
const tokenLookupTimeout = 10 * time.Second

// share answers a miss: the misses of one token at the same moment (a
// client's concurrent requests when its entry ends) share one lookup, so
// one query and one last_used_at write, not one per request.
func (c *tokenCache) share(ctx context.Context, sum [sha256.Size]byte, lookup func(context.Context, [sha256.Size]byte) (*app.Principal, error)) (*app.Principal, error) {
	return await(ctx, c.join(ctx, sum, lookup))
}

// join starts the lookup of a token, or joins the one under way. The
// lookup runs detached from the request that happens to start it, so that
// one's cancellation (a client gone mid-request) does not fail the
// others; each caller awaits it on its own ctx.
func (c *tokenCache) join(ctx context.Context, sum [sha256.Size]byte, lookup func(context.Context, [sha256.Size]byte) (*app.Principal, error)) <-chan singleflight.Result {
	return c.flight.DoChan(string(sum[:]), func() (any, error) {
		timeout := c.lookupTimeout
		if timeout <= 0 {
			timeout = tokenLookupTimeout
		}
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		defer cancel()
		gen := c.generation()
		p, err := lookup(lctx, sum)
		if err != nil && errors.Is(err, context.DeadlineExceeded) && lctx.Err() != nil {
			err = fmt.Errorf("%w: %w", app.ErrBusy, err)
		}
		if p != nil {
			c.put(sum, p, time.Now(), gen)
		}
		return p, err
	})
}

// await is the answer of a lookup, or ctx's error if ctx ends first.
func await(ctx context.Context, ch <-chan singleflight.Result) (*app.Principal, error) {
	select {
	case r := <-ch:
		p, _ := r.Val.(*app.Principal)
		return p, r.Err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// on tells whether the cache keeps anything.
func (c *tokenCache) on() bool { return c != nil && c.ttl > 0 }

// generation is the count of drops so far; pass it to put.
func (c *tokenCache) generation() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.gen
}

// put keeps the answer of a lookup that began at generation gen, unless
// an entry was dropped since.
func (c *tokenCache) put(sum [sha256.Size]byte, p *app.Principal, now time.Time, gen uint64) {
	if !c.on() {
		return
	}
	c.mu.Lock()
	if c.gen != gen {
		c.mu.Unlock()
		return
	}
	if c.m == nil || len(c.m) >= tokenCacheMax {
		c.m = make(map[[sha256.Size]byte]tokenEntry)
	}
	c.m[sum] = tokenEntry{p: p, until: now.Add(c.ttl)}
	c.mu.Unlock()
}

// drop forgets the entries of a token (tokenID) or of every token of a
// user (userID); 0 matches nothing.
func (c *tokenCache) drop(tokenID, userID int64) {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.gen++
	for k, e := range c.m {
		if (tokenID != 0 && e.p.TokenID == tokenID) || (userID != 0 && e.p.UserID == userID) {
			delete(c.m, k)
		}
	}
	c.mu.Unlock()
}

// invalidate drops the entries here and tells the other nodes.
func (c *tokenCache) invalidate(ctx context.Context, tokenID, userID int64) {
	if c == nil {
		return
	}
	c.drop(tokenID, userID)
	if c.rdb == nil {
		return
	}
	msg := "t:" + strconv.FormatInt(tokenID, 10)
	if userID != 0 {
		msg = "u:" + strconv.FormatInt(userID, 10)
	}
	if err := c.rdb.Publish(ctx, c.channel, msg).Err(); err != nil && c.log != nil {
		c.log.Log(ctx, app.RedisLevel(err, slog.LevelWarn), "users: token cache: publish failed; other nodes see the change within the cache's ttl", "err", err)
	}
}

// listen applies the other nodes' invalidations until ctx ends. ready is
// closed once the subscription is in place.
func (c *tokenCache) listen(ctx context.Context, ready chan<- struct{}) {
	sub := c.rdb.Subscribe(ctx, c.channel)
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil && ctx.Err() == nil && c.log != nil {
		c.log.Log(ctx, app.RedisLevel(err, slog.LevelWarn), "users: token cache: subscribe failed", "err", err)
	}
	close(ready)
	ch := sub.Channel()
	for {
		select {
		case <-ctx.Done():
			return
		case m, ok := <-ch:
			if !ok {
				return
			}
			kind, idText, _ := strings.Cut(m.Payload, ":")
			id, err := strconv.ParseInt(idText, 10, 64)
			if err != nil {
				continue
			}
			switch kind {
			case "t":
				c.drop(id, 0)
			case "u":
				c.drop(0, id)
			}
		}
	}
}
