package users

import (
	"context"
	"crypto/sha256"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onair/onair/app"
)

// A lookup under way when a token is revoked (or a user changed) must not
// put its answer back: it may have read the row before the change, and
// the revocation is promised at once on the node that made it.
func TestTokenCacheKeepsNoAnswerOlderThanADrop(t *testing.T) {
	c := &tokenCache{ttl: time.Hour}
	sum := sha256.Sum256([]byte("onair_token"))
	p := &app.Principal{UserID: 1, TokenID: 7, Roles: []string{app.RoleUser}}
	now := time.Now()

	gen := c.generation() // the lookup begins...
	c.drop(7, 0)          // ...the token is revoked meanwhile...
	c.put(sum, p, now, gen)
	if c.get(sum, now) != nil {
		t.Fatal("an answer read before the revocation was kept")
	}

	// A lookup that began after the drop is kept, and lasts its ttl.
	c.put(sum, p, now, c.generation())
	if c.get(sum, now) != p {
		t.Fatal("a fresh answer was not kept")
	}
	if c.get(sum, now.Add(time.Hour)) != nil {
		t.Fatal("an answer outlived the ttl")
	}
}

// The misses of one token share one lookup, which must not carry the
// context of the request that started it: a client that goes away
// mid-lookup gets its own cancellation at once, and the lookup goes on
// for the others, whose answer is kept.
func TestTokenLookupOutlivesTheRequestThatStartedIt(t *testing.T) {
	c := &tokenCache{ttl: time.Hour}
	sum := sha256.Sum256([]byte("onair_token"))
	want := &app.Principal{UserID: 1, TokenID: 7, Roles: []string{app.RoleUser}}
	entered, release := make(chan struct{}), make(chan struct{})
	var lookups atomic.Int32
	var lookupErr error
	var hasDeadline bool
	lookup := func(ctx context.Context, got [sha256.Size]byte) (*app.Principal, error) {
		lookups.Add(1)
		if got != sum {
			t.Errorf("looked up %x, want %x", got, sum)
		}
		close(entered)
		<-release
		lookupErr = ctx.Err()
		_, hasDeadline = ctx.Deadline()
		return want, lookupErr
	}

	ctxA, cancelA := context.WithCancel(context.Background())
	a := c.join(ctxA, sum, lookup)
	<-entered
	// The lookup is under way (it waits on release): B joins it.
	b := c.join(context.Background(), sum, lookup)
	cancelA()
	if p, err := await(ctxA, a); !errors.Is(err, context.Canceled) || p != nil {
		t.Fatalf("the canceled request got %v, %v; want context.Canceled", p, err)
	}
	close(release)
	if p, err := await(context.Background(), b); err != nil || p != want {
		t.Fatalf("the request sharing the lookup got %v, %v", p, err)
	}
	if lookupErr != nil || !hasDeadline {
		t.Fatalf("the lookup ran with ctx error %v, deadline %v: want the starting request's cancellation cut off and a deadline of its own", lookupErr, hasDeadline)
	}
	if n := lookups.Load(); n != 1 {
		t.Fatalf("%d lookups for two requests", n)
	}
	if c.get(sum, time.Now()) != want {
		t.Fatal("the shared answer was not kept")
	}
}

// A shared lookup that outlives its own deadline (SQLite held by another
// writer past the busy timeout while the pool's one connection waits)
// answers app.ErrBusy, which the API turns into 503 unavailable with
// Retry-After, not the "timeout" of a request that outlived its own.
func TestTokenLookupPastItsDeadlineIsUnavailable(t *testing.T) {
	c := &tokenCache{ttl: time.Hour, lookupTimeout: 20 * time.Millisecond}
	sum := sha256.Sum256([]byte("onair_token"))
	lookup := func(ctx context.Context, _ [sha256.Size]byte) (*app.Principal, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	p, err := c.share(context.Background(), sum, lookup)
	if p != nil || !errors.Is(err, app.ErrBusy) || !app.IsUnavailable(err) {
		t.Fatalf("share = %v, %v; want app.ErrBusy, unavailable", p, err)
	}

	// A lookup's own failure is passed on as it is.
	boom := errors.New("boom")
	_, err = c.share(context.Background(), sum, func(context.Context, [sha256.Size]byte) (*app.Principal, error) { return nil, boom })
	if !errors.Is(err, boom) || app.IsUnavailable(err) {
		t.Fatalf("share = %v, want boom as it is", err)
	}
}
