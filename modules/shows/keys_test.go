package shows_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

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
		// Every connection of the pool busy, as in a storm: the reads wait
		// for one, and the checks arriving meanwhile join the next read.
		db := env.Core.DB
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
