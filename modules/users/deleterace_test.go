package users_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sync"
	"testing"

	"github.com/onair/onair/admin/admintest"
	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/users"
)

// Staff deleting, all at once on MariaDB, users who all follow each
// other: each deletion locks the user's follows (with their gaps), then
// the rows of those they followed, then their own, so the deletions
// deadlock with each other, over and over. Each deadlock runs the
// deletion again after a pause; every one answers the console's 303,
// and no follow, count or user is left over.
func TestConcurrentDeletionsOfMutualFollowers(t *testing.T) {
	if os.Getenv(onairtest.MySQLEnv) == "" {
		testload.Skip(t, "needs %s (SQLite runs one writer at a time)", onairtest.MySQLEnv)
	}
	ctx := context.Background()
	env := onairtest.New(t, onairtest.Options{Backend: "mysql"})
	um, _ := app.Lookup[*users.Module](env.Core)
	db := env.Core.DB
	_, adm := admintest.Staff(t, env, "Ad Min", "admin")
	const n, rounds = 16, 3
	for round := range rounds {
		fans := make([]*users.User, n)
		for i := range fans {
			fans[i], _ = env.CreateUser(fmt.Sprintf("Mutual Fan %d %d", round, i))
		}
		for _, a := range fans {
			for _, b := range fans {
				if a != b {
					if err := um.Service.Follow(ctx, a.ID, b.ID); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		// One staff session posts every deletion at once.
		answers := make([]*admintest.Response, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i, u := range fans {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				answers[i] = adm.Post(fmt.Sprintf("/admin/users/%d/delete", u.ID), nil)
			}()
		}
		close(start)
		wg.Wait()
		for i, r := range answers {
			if r == nil {
				t.Fatalf("round %d: the deletion of user %d got no answer", round, fans[i].ID)
			}
			if r.Status != http.StatusSeeOther {
				body := r.Body
				if len(body) > 300 {
					body = body[:300] + "…"
				}
				t.Errorf("round %d: deleting user %d: %d, want 303: %s", round, fans[i].ID, r.Status, body)
			}
		}
		if t.Failed() {
			t.Fatalf("round %d: not every deletion went through", round)
		}
		var follows, left int
		if err := db.NewRaw("SELECT COUNT(*) FROM follows").Scan(ctx, &follows); err != nil {
			t.Fatal(err)
		}
		if err := db.NewRaw("SELECT COUNT(*) FROM users WHERE name LIKE ?", fmt.Sprintf("Mutual Fan %d %%", round)).Scan(ctx, &left); err != nil {
			t.Fatal(err)
		}
		if follows != 0 || left != 0 {
			t.Fatalf("round %d: %d follows and %d users left, want none", round, follows, left)
		}
		onairtest.ExpectNoOrphans(t, db, followRefs...)
	}
}
