package users_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/migrations"
	"github.com/onair/onair/modules/users"
)

// A follow of, or by, a user deleted before it is a 404 and leaves no row
// (the follows table has no foreign keys to refuse it).
func TestFollowOfUserGone(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		env := onairtest.New(t, onairtest.Options{Backend: backend})
		um, _ := app.Lookup[*users.Module](env.Core)
		by := env.Staff()
		stays, _ := env.CreateUser("Stays Here")
		for _, gone := range []string{"followed", "follower"} {
			u, _ := env.CreateUser("Gone " + gone)
			if _, err := um.Service.DeleteUser(ctx, u.ID, by); err != nil {
				t.Fatal(err)
			}
			follower, followed := stays.ID, u.ID
			if gone == "follower" {
				follower, followed = u.ID, stays.ID
			}
			onairtest.ExpectNotFound(t, "follow of the "+gone+" gone", um.Service.Follow(ctx, follower, followed))
		}
		onairtest.ExpectNoOrphans(t, env.Core.DB, followRefs...)
		expectFollowers(t, env.Core.DB, stays.ID, 0)
	})
}

// A follow and the deletion of one of its users, at once on MariaDB, in
// either order: no follow outlives its users, and the counts stay true.
// A transaction of the test holds a user's row so that the first of the
// two stops midway with its locks held (the deletion before the user's
// row goes, the follow before it counts the follower), and lets go once
// the second waits for it.
func TestFollowRacesDeletion(t *testing.T) {
	if os.Getenv(onairtest.MySQLEnv) == "" {
		testload.Skip(t, "needs %s (SQLite runs one writer at a time)", onairtest.MySQLEnv)
	}
	ctx := context.Background()
	env := onairtest.New(t, onairtest.Options{Backend: "mysql"})
	um, _ := app.Lookup[*users.Module](env.Core)
	svc, db := um.Service, env.Core.DB
	by := env.Staff()
	for _, c := range []struct {
		name           string
		followFirst    bool
		deleteFollower bool
	}{
		{"deletion of the followed first", false, false},
		{"deletion of the follower first", false, true},
		{"follow first, deletion of the followed", true, false},
		{"follow first, deletion of the follower", true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Ids in both orders: the follow takes its users' rows in
			// id order.
			for _, followerFirst := range []bool{true, false} {
				a, _ := env.CreateUser("First User")
				b, _ := env.CreateUser("Second User")
				follower, followed := a, b
				if !followerFirst {
					follower, followed = b, a
				}
				gone, stays := followed, follower
				if c.deleteFollower {
					gone, stays = follower, followed
				}
				follow := func() error { return svc.Follow(ctx, follower.ID, followed.ID) }
				del := func() error { _, err := svc.DeleteUser(ctx, gone.ID, by); return err }
				if !c.followFirst {
					// The deletion waits for the user's row, the
					// follows gone already; the follow waits for it.
					hold := onairtest.HoldRow(t, db, "users", gone.ID)
					deleting := onairtest.Go("the deletion", del)
					onairtest.AwaitLockWait(t, db, []*onairtest.Call{deleting}, "DELETE FROM `users`", fmt.Sprintf("(id = %d)", gone.ID))
					following := onairtest.Go("the follow", follow)
					onairtest.AwaitLockWait(t, db, []*onairtest.Call{deleting, following}, "INSERT IGNORE INTO `follows`", fmt.Sprintf("VALUES (%d, %d,", follower.ID, followed.ID))
					hold.Rollback()
					if err := deleting.Wait(t); err != nil {
						t.Fatalf("deletion: %v", err)
					}
					onairtest.ExpectNotFound(t, "follow", following.Wait(t))
				} else {
					// The follow waits for the followed's row to count
					// them, its row in; the deletion waits for that row.
					hold := onairtest.HoldRow(t, db, "users", followed.ID)
					following := onairtest.Go("the follow", follow)
					onairtest.AwaitLockWait(t, db, []*onairtest.Call{following}, "UPDATE `users`", fmt.Sprintf("(id = %d)", followed.ID))
					deleting := onairtest.Go("the deletion", del)
					onairtest.AwaitLockWait(t, db, []*onairtest.Call{following, deleting}, "`follows`", fmt.Sprintf("= %d)", gone.ID))
					hold.Rollback()
					if err := following.Wait(t); err != nil {
						t.Fatalf("follow: %v", err)
					}
					if err := deleting.Wait(t); err != nil {
						t.Fatalf("deletion: %v", err)
					}
				}
				onairtest.ExpectNoOrphans(t, db, followRefs...)
				expectFollowers(t, db, stays.ID, 0)
			}
		})
	}
}

func expectFollowers(t *testing.T, db bun.IDB, id int64, want int) {
	t.Helper()
	if n := followers(t, context.Background(), db, id); n != want {
		t.Fatalf("user %d: followers_count %d, want %d", id, n, want)
	}
}

// followRefs are a follow's references to its two users.
var followRefs = []migrations.Ref{
	{Table: "follows", Column: "follower_id", Parent: "users"},
	{Table: "follows", Column: "followed_id", Parent: "users"},
}
