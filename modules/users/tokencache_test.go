package users_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/onair/onair/app"
	"github.com/onair/onair/app/events"
	"github.com/onair/onair/app/outbox"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/users"
)

func tokenTTL(d time.Duration) func(*app.Config) {
	return func(c *app.Config) { c.Set(users.SettingTokenCacheTTL, d) }
}

// tokenID finds the id of the user's only token.
func tokenID(t *testing.T, env *onairtest.Env, userID int64) int64 {
	t.Helper()
	svc := onairtestUsers(env)
	list, err := svc.Tokens(context.Background(), userID)
	if err != nil || len(list) != 1 {
		t.Fatalf("tokens of %d: %v (%d)", userID, err, len(list))
	}
	return list[0].ID
}

func onairtestUsers(env *onairtest.Env) *users.Service {
	m, _ := onairtest.Module[*users.Module](env)
	return m.Service
}

// On the node that revokes, a cached token is refused at once, whatever
// the cache's ttl; a role change (radio approval) shows at once too.
func TestTokenCacheRevokedAtOnceOnItsNode(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{Configure: tokenTTL(time.Hour)})
	u, tok := env.CreateUser("Cache Revoke")
	for range 3 {
		env.Do("GET", "/v1/users/me", tok, nil).Expect(t, http.StatusOK)
	}
	svc := onairtestUsers(env)
	radioShow := map[string]any{"name": "Radio", "description": "d", "radio": true}
	env.Do("POST", "/v1/shows", tok, radioShow).Expect(t, http.StatusForbidden)
	if _, err := svc.SetRadio(context.Background(), u.ID, true); err != nil {
		t.Fatal(err)
	}
	// The principal's roles come from the cache: the approval dropped it.
	env.Do("POST", "/v1/shows", tok, radioShow).Expect(t, http.StatusCreated)
	if err := svc.RevokeToken(context.Background(), u.ID, tokenID(t, env, u.ID)); err != nil {
		t.Fatal(err)
	}
	env.Do("GET", "/v1/users/me", tok, nil).Expect(t, http.StatusUnauthorized)
}

// With Redis, a revocation on node A reaches node B's cache through
// pub/sub: B refuses the token long before the ttl (an hour here) ends.
func TestTokenCacheRevocationReachesOtherNodes(t *testing.T) {
	if os.Getenv(onairtest.MySQLEnv) == "" || os.Getenv(onairtest.RedisEnv) == "" {
		testload.Skip(t, "needs %s and %s (the README's test command sets both)", onairtest.MySQLEnv, onairtest.RedisEnv)
	}
	db := onairtest.FreshMySQL(t)
	prefix := fmt.Sprintf("onairtest:tc%d:", time.Now().UnixNano())
	opts := onairtest.Options{DatabaseURL: db, Redis: true, RedisPrefix: prefix, Configure: tokenTTL(time.Hour)}
	a := onairtest.New(t, opts)
	b := onairtest.New(t, opts)
	u, tok := a.CreateUser("Cache Nodes")
	b.Do("GET", "/v1/users/me", tok, nil).Expect(t, http.StatusOK) // cached on B
	start := time.Now()
	if err := onairtestUsers(a).RevokeToken(context.Background(), u.ID, tokenID(t, a, u.ID)); err != nil {
		t.Fatal(err)
	}
	testload.Poll(t, "node B to refuse the revoked token", func() error {
		if r := b.Do("GET", "/v1/users/me", tok, nil); r.Status != http.StatusUnauthorized {
			return fmt.Errorf("status %d", r.Status)
		}
		return nil
	})
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("node B refused the token after %s", d)
	}
}

// Without Redis, another node sees a revocation when its cached entry
// expires: within the ttl, never later.
func TestTokenCacheRevocationWithinTTL(t *testing.T) {
	if os.Getenv(onairtest.MySQLEnv) == "" {
		testload.Skip(t, "needs %s (two nodes share a database)", onairtest.MySQLEnv)
	}
	const ttl = 2 * time.Second
	db := onairtest.FreshMySQL(t)
	opts := onairtest.Options{DatabaseURL: db, Configure: tokenTTL(ttl)}
	a := onairtest.New(t, opts)
	b := onairtest.New(t, opts)
	u, tok := a.CreateUser("Cache TTL")
	b.Do("GET", "/v1/users/me", tok, nil).Expect(t, http.StatusOK)
	cachedAt := time.Now() // B's entry was made before this
	if err := onairtestUsers(a).RevokeToken(context.Background(), u.ID, tokenID(t, a, u.ID)); err != nil {
		t.Fatal(err)
	}
	a.Do("GET", "/v1/users/me", tok, nil).Expect(t, http.StatusUnauthorized)
	testload.Poll(t, "node B to refuse the revoked token", func() error {
		if r := b.Do("GET", "/v1/users/me", tok, nil); r.Status != http.StatusUnauthorized {
			return fmt.Errorf("status %d", r.Status)
		}
		return nil
	})
	if d := time.Since(cachedAt); d > ttl+time.Second {
		t.Fatalf("node B refused the token %s after caching it (ttl %s)", d, ttl)
	}
}

// With Redis, deleting a user on node A is a durable event (outbox): node
// B's subscribers hear it once, as remote, and B's cache drops the user's
// tokens long before the ttl (an hour here) ends.
func TestDeletionReachesOtherNodes(t *testing.T) {
	if os.Getenv(onairtest.MySQLEnv) == "" || os.Getenv(onairtest.RedisEnv) == "" {
		testload.Skip(t, "needs %s and %s (the README's test command sets both)", onairtest.MySQLEnv, onairtest.RedisEnv)
	}
	db := onairtest.FreshMySQL(t)
	prefix := fmt.Sprintf("onairtest:del%d:", time.Now().UnixNano())
	opts := onairtest.Options{DatabaseURL: db, Redis: true, RedisPrefix: prefix, Configure: tokenTTL(time.Hour)}
	a := onairtest.New(t, opts)
	b := onairtest.New(t, opts)
	t.Cleanup(func() { a.Core.Redis.Del(context.Background(), prefix+outbox.Stream) })
	var mu sync.Mutex
	var heard []string
	events.Subscribe(b.Core.Events, users.Deleted, func(ctx context.Context, d *users.Deletion) {
		mu.Lock()
		defer mu.Unlock()
		heard = append(heard, fmt.Sprintf("user %d by %d remote=%v", d.UserID, d.By.UserID, outbox.Remote(ctx)))
	})
	staff, _ := a.CreateUser("Deleting Admin", onairtest.Role("admin"))
	u, tok := a.CreateUser("Deleted Everywhere")
	b.Do("GET", "/v1/users/me", tok, nil).Expect(t, http.StatusOK) // cached on B
	by := &app.Principal{UserID: staff.ID, Roles: []string{"user", "admin"}}
	if _, err := onairtestUsers(a).DeleteUser(context.Background(), u.ID, by); err != nil {
		t.Fatal(err)
	}
	a.Do("GET", "/v1/users/me", tok, nil).Expect(t, http.StatusUnauthorized)
	testload.Poll(t, "node B to refuse the deleted user's token", func() error {
		if r := b.Do("GET", "/v1/users/me", tok, nil); r.Status != http.StatusUnauthorized {
			return fmt.Errorf("status %d", r.Status)
		}
		return nil
	})
	// A later deletion, once B heard it, shows the stream was read past
	// the first: B heard each once.
	v, _ := a.CreateUser("Deleted Later")
	if _, err := onairtestUsers(a).DeleteUser(context.Background(), v.ID, by); err != nil {
		t.Fatal(err)
	}
	want := []string{
		fmt.Sprintf("user %d by %d remote=true", u.ID, staff.ID),
		fmt.Sprintf("user %d by %d remote=true", v.ID, staff.ID),
	}
	testload.Poll(t, "node B to hear both deletions", func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(heard) < 2 {
			return fmt.Errorf("heard %v", heard)
		}
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(heard) != fmt.Sprint(want) {
		t.Fatalf("B heard %v, want %v", heard, want)
	}
}
