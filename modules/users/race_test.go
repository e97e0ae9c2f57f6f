package users_test

import (
	"context"
	"errors"
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
