package shows_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/shows"
)

// Many publishers at once (a node restart: every encoder reconnects) cost
// a few reads of their shows, not one each, and each still gets the right
// answer: its show for its key, ErrRefused for a wrong key, a stopped
// show's or an unknown show's.
func TestAuthorizeBatches(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		reads := &queryCounter{match: func(q string) bool { return strings.Contains(q, "WHERE (s.id IN (") }}
		env := onairtest.New(t, onairtest.Options{Backend: backend, QueryHooks: []bun.QueryHook{reads}})
		f := fixtureOn(t, env)
		_, tok := f.user("Many Encoders")
		const n = 60
		ids := make([]int64, n)
		keys := make([]string, n)
		for i := range n {
			sh := onairtest.CreateShow(t, f.env, tok, map[string]any{"name": fmt.Sprintf("Encoder %d", i), "description": "d"}).Object
			ids[i], keys[i] = id(sh), sh["stream_key"].(string)
		}
		stopped := n - 1
		if _, err := f.svc.GoLive(f.ctx, ids[stopped], shows.Media{}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.Stop(f.ctx, ids[stopped], nil); err != nil {
			t.Fatal(err)
		}

		type call struct {
			key  string
			want int64 // 0: refused
		}
		var calls []call
		for i := range n - 1 {
			calls = append(calls, call{keys[i], ids[i]}, call{keys[i], ids[i]}, call{keys[i] + "x", 0})
		}
		unknown := strings.Replace(keys[0], fmt.Sprint(ids[0]), fmt.Sprint(ids[n-1]+1000), 1)
		calls = append(calls, call{keys[stopped], 0}, call{unknown, 0})
		// Every connection of the key checks' pool busy, as in a storm:
		// the reads wait for one, and the checks arriving meanwhile join
		// the next read.
		db := env.Core.ReadDB()
		var held []bun.Conn
		for range db.Stats().MaxOpenConnections {
			c, err := db.Conn(f.ctx)
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, c)
		}
		waits := db.Stats().WaitCount
		before := reads.n.Load()
		var wg sync.WaitGroup
		errs := make(chan error, len(calls))
		ready, start := sync.WaitGroup{}, make(chan struct{})
		ready.Add(len(calls))
		for _, c := range calls {
			wg.Go(func() {
				ready.Done()
				<-start // all at once
				sh, err := f.svc.Keys.Authorize(f.ctx, c.key)
				switch {
				case c.want == 0 && !errors.Is(err, shows.ErrRefused):
					errs <- fmt.Errorf("key %q: %v, want ErrRefused", c.key, err)
				case c.want != 0 && (err != nil || sh.ID != c.want):
					errs <- fmt.Errorf("key %q: %v, want show %d", c.key, err, c.want)
				}
			})
		}
		ready.Wait()
		close(start)
		testload.Poll(t, "both reads waiting for a connection", func() error {
			if n := db.Stats().WaitCount - waits; n < 2 {
				return fmt.Errorf("%d waiting", n)
			}
			return nil
		})
		for _, c := range held {
			c.Close()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		got := reads.n.Load() - before
		t.Logf("%d key checks at once: %d reads", len(calls), got)
		if got < 1 || got > int64(len(calls))/4 {
			t.Errorf("%d key checks at once made %d reads of the shows, want between 1 and %d", len(calls), got, len(calls)/4)
		}
	})
}

// On SQLite, writes go through one connection. A publisher's key check
// and the show lists read on a pool of their own (app.Core.Reader), so a
// write transaction that holds the writer (hundreds of shows going live at
// once) does not hold them up; and a read that begins after a write
// returned sees it: a regenerated key, a show gone live.
func TestSQLiteReadsBesideAWrite(t *testing.T) {
	t.Parallel()
	env := onairtest.New(t, onairtest.Options{})
	f := fixtureOn(t, env)
	_, tok := f.user("Beside The Writer")
	sh := onairtest.CreateShow(t, env, tok, map[string]any{"name": "Beside", "description": "before"}).Object
	showID, key := id(sh), sh["stream_key"].(string)
	if env.Core.Reader == nil {
		t.Fatal("no read pool on a SQLite file")
	}

	// The token's principal is cached from here on (users' token cache):
	// the list below reads only the shows. A second token is used first
	// while the writer is held.
	env.Do("GET", "/v1/shows", tok, nil).Expect(t, http.StatusOK)
	_, uncached := f.user("Uncached Token")
	tx, err := env.Core.DB.BeginTx(f.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.NewUpdate().Model((*shows.Show)(nil)).Set("description = ?", "held").Where("id = ?", showID).Exec(f.ctx); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(f.ctx, 5*time.Second)
	got, err := f.svc.Keys.Authorize(ctx, key)
	cancel()
	if err != nil || got.ID != showID {
		t.Errorf("key check while the writer is held: %v, want show %d", err, showID)
	}
	r := env.Do("GET", "/v1/shows", tok, nil)
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"description":"before"`) {
		t.Errorf("list while the writer is held: %d %s, want 200 with the committed description", r.Status, r.Body)
	}
	// A token's first request reads the token on the pool too, and its
	// last_used_at write gives up after a second: it answers, where it
	// waited for the writer once and answered 503 after 10 s.
	begin := time.Now()
	if r := env.Do("GET", "/v1/shows", uncached, nil); r.Status != http.StatusOK {
		t.Errorf("a token's first request while the writer is held: %d %s, want 200", r.Status, r.Body)
	}
	t.Logf("a token's first request while the writer is held answered in %s", time.Since(begin).Round(time.Millisecond))
	if _, err := env.Core.Reader.NewUpdate().Model((*shows.Show)(nil)).Set("description = ?", "x").Where("id = ?", showID).Exec(f.ctx); err == nil {
		t.Error("a write on the read pool succeeded; want it refused (query_only)")
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}

	// Read after write, on the pool: each read begins after the write
	// returned and must see it.
	for i := range 20 {
		r := f.do(t, "POST", fmt.Sprintf("/v1/shows/%d/stream_key", showID), tok, nil).Expect(t, http.StatusOK)
		fresh := showOf(t, r)["stream_key"].(string)
		if _, err := f.svc.Keys.Authorize(f.ctx, key); !errors.Is(err, shows.ErrRefused) {
			t.Fatalf("round %d: the replaced key: %v, want ErrRefused", i, err)
		}
		if got, err := f.svc.Keys.Authorize(f.ctx, fresh); err != nil || got.ID != showID {
			t.Fatalf("round %d: the new key: %v, want show %d", i, err, showID)
		}
		key = fresh
	}
	for i := range 10 {
		next := onairtest.CreateShow(t, env, tok, map[string]any{"name": fmt.Sprintf("Live %d", i), "description": "d"}).Object
		if _, err := f.svc.GoLive(f.ctx, id(next), shows.Media{}); err != nil {
			t.Fatal(err)
		}
		r := env.Do("GET", "/v1/shows?live=true", tok, nil).Expect(t, http.StatusOK)
		found := false
		for _, item := range r.JSON(t)["shows"].([]any) {
			found = found || id(item.(map[string]any)) == id(next)
		}
		if !found {
			t.Fatalf("show %d went live, and the live list read next misses it: %s", id(next), r.Body)
		}
	}
}
