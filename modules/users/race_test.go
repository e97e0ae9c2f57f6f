package users_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/users"
)

// TestConcurrentSignUps: racing sign-ups for one email make one account
// and 422s; racing ones for one name all get distinct slugs. Never a 500.
func TestConcurrentSignUps(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env := onairtest.New(t, onairtest.Options{Backend: backend})
		svc := users.NewService(env.Core.DB, env.URL)
		const n = 8
		run := func(mk func(i int) users.NewUser) (created []*users.User, errs []error) {
			var mu sync.Mutex
			var wg sync.WaitGroup
			for i := 0; i < n; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					u, err := svc.Create(context.Background(), mk(i))
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						errs = append(errs, err)
					} else {
						created = append(created, u)
					}
				}(i)
			}
			wg.Wait()
			return
		}
		created, errs := run(func(i int) users.NewUser {
			return users.NewUser{Name: "Same Email", Email: "same@example.com"}
		})
		if len(created) != 1 {
			t.Fatalf("%d accounts for one email", len(created))
		}
		for _, err := range errs {
			var apiErr *app.Error
			if !errors.As(err, &apiErr) || apiErr.Status != 422 {
				t.Errorf("racing sign-up: %v, want a 422", err)
			}
		}
		created, errs = run(func(i int) users.NewUser {
			return users.NewUser{Name: "Same Name", Email: "same-name-" + string(rune('a'+i)) + "@example.com"}
		})
		if len(errs) > 0 {
			t.Fatalf("racing sign-ups with one name: %v", errs)
		}
		slugs := map[string]bool{}
		for _, u := range created {
			slugs[u.Slug] = true
		}
		if len(slugs) != n {
			t.Errorf("%d distinct slugs for %d users", len(slugs), n)
		}
	})
}

// TestConcurrentEnsureTags: many requests creating the same new tags at
// once, in different orders, each get every tag, one row per tag, and no
// error. (CI once saw InnoDB roll back createTag's locking read in a
// deadlock with shows' transactions, a 500 on POST /v1/shows; the read
// outside a transaction no longer locks, and a deadlock runs it again.)
func TestConcurrentEnsureTags(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env := onairtest.New(t, onairtest.Options{Backend: backend})
		db := env.Core.DB
		names := []string{"Race A", "race b", "RACE C", "Race D", "race e", "Race F"}
		for round := 0; round < 5; round++ {
			var wg sync.WaitGroup
			errs := make(chan error, 16)
			for i := 0; i < 16; i++ {
				order := make([]string, len(names))
				for j := range names {
					// Rotated and, for every other one, reversed.
					k := (j + i) % len(names)
					if i%2 == 1 {
						k = len(names) - 1 - k
					}
					order[j] = fmt.Sprintf("%s %d", names[k], round)
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					tags, err := users.EnsureTags(context.Background(), db, order)
					if err == nil && len(tags) != len(order) {
						err = fmt.Errorf("%d tags for %d names", len(tags), len(order))
					}
					if err != nil {
						errs <- err
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Errorf("round %d: %v", round, err)
			}
		}
		var rows int
		if err := db.NewRaw("SELECT COUNT(*) FROM tags").Scan(context.Background(), &rows); err != nil {
			t.Fatal(err)
		}
		if want := 5 * len(names); rows != want {
			t.Errorf("%d tag rows, want %d", rows, want)
		}
	})
}
