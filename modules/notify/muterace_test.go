package notify_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"testing"

	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/migrations"
	"github.com/onair/onair/modules/notify"
	"github.com/onair/onair/modules/users"
)

// Turning mails off for a user deleted before (a follow's, either of its
// users; the account's) is a 404 and leaves no row, and so is the
// one-click link of a follower deleted since: the switches' tables have
// no foreign keys to refuse such a row.
func TestMuteOfUserGone(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		env := onairtest.New(t, onairtest.Options{Backend: backend})
		nm, _ := onairtest.Module[*notify.Module](env)
		um, _ := onairtest.Module[*users.Module](env)
		by := env.Staff()
		stays, _ := env.CreateUser("Stays Here")
		for _, gone := range []string{"followed", "follower"} {
			u, _ := env.CreateUser("Gone " + gone)
			follower, followed := stays.ID, u.ID
			if gone == "follower" {
				follower, followed = u.ID, stays.ID
			}
			if err := um.Service.Follow(ctx, follower, followed); err != nil {
				t.Fatal(err)
			}
			link := env.URL + notify.UnsubscribePath(nm, follower, followed)
			if _, err := um.Service.DeleteUser(ctx, u.ID, by); err != nil {
				t.Fatal(err)
			}
			onairtest.ExpectNotFound(t, "mails off with the "+gone+" gone", nm.SetFollowNotify(ctx, follower, followed, false))
			resp, err := http.Post(link, "application/x-www-form-urlencoded", nil)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("one-click link with the %s gone: %d, want 404", gone, resp.StatusCode)
			}
			if gone == "follower" {
				onairtest.ExpectNotFound(t, "account's mails off", nm.SetAccountNotify(ctx, u.ID, false))
			}
		}
		onairtest.ExpectNoOrphans(t, env.Core.DB, muteRefs...)
	})
}

// Turning mails off and the deletion of a user concerned, at once on
// MariaDB, in either order: no switch outlives its users. A transaction
// of the test holds the user's row so that the first of the two stops
// midway with its locks held (the deletion before the user's row goes,
// its switches gone; the switch, its row in, before it holds the user's
// row), and lets go once the second waits for it.
func TestMuteRacesDeletion(t *testing.T) {
	if os.Getenv(onairtest.MySQLEnv) == "" {
		testload.Skip(t, "needs %s (SQLite runs one writer at a time)", onairtest.MySQLEnv)
	}
	ctx := context.Background()
	env := onairtest.New(t, onairtest.Options{Backend: "mysql"})
	nm, _ := onairtest.Module[*notify.Module](env)
	um, _ := onairtest.Module[*users.Module](env)
	db := env.Core.DB
	by := env.Staff()
	for _, c := range []struct {
		name      string
		muteFirst bool
		gone      string // the user deleted: "followed", "follower" or, of an account switch, "account"
	}{
		{"deletion of the followed first", false, "followed"},
		{"deletion of the follower first", false, "follower"},
		{"deletion first, account switch", false, "account"},
		{"mails off first, deletion of the followed", true, "followed"},
		{"mails off first, deletion of the follower", true, "follower"},
		{"account switch first, deletion", true, "account"},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Ids in both orders: a follow's switch holds its users'
			// rows in id order.
			for _, followerFirst := range []bool{true, false} {
				a, _ := env.CreateUser("First User")
				b, _ := env.CreateUser("Second User")
				follower, followed := a, b
				if !followerFirst {
					follower, followed = b, a
				}
				if err := um.Service.Follow(ctx, follower.ID, followed.ID); err != nil {
					t.Fatal(err)
				}
				gone := followed
				table, values := "notify_mutes", fmt.Sprintf("VALUES (%d, %d,", follower.ID, followed.ID)
				mute := func() error { return nm.SetFollowNotify(ctx, follower.ID, followed.ID, false) }
				switch c.gone {
				case "follower":
					gone = follower
				case "account":
					gone = follower
					table, values = "notify_account_mutes", fmt.Sprintf("VALUES (%d,", follower.ID)
					mute = func() error { return nm.SetAccountNotify(ctx, follower.ID, false) }
				}
				del := func() error { _, err := um.Service.DeleteUser(ctx, gone.ID, by); return err }
				hold := onairtest.HoldRow(t, db, "users", gone.ID)
				if !c.muteFirst {
					// The deletion waits for the user's row, the
					// switches gone already; the switch waits for it.
					deleting := onairtest.Go("the deletion", del)
					onairtest.AwaitLockWait(t, db, []*onairtest.Call{deleting}, "DELETE FROM `users`", fmt.Sprintf("(id = %d)", gone.ID))
					muting := onairtest.Go("the switch", mute)
					onairtest.AwaitLockWait(t, db, []*onairtest.Call{deleting, muting}, "INSERT IGNORE INTO `"+table+"`", values)
					hold.Rollback()
					if err := deleting.Wait(t); err != nil {
						t.Fatalf("deletion: %v", err)
					}
					onairtest.ExpectNotFound(t, "mails off", muting.Wait(t))
				} else {
					// The switch, its row in, waits for the user's row;
					// the deletion waits for the switch's row.
					muting := onairtest.Go("the switch", mute)
					onairtest.AwaitLockWait(t, db, []*onairtest.Call{muting}, fmt.Sprintf("FROM users WHERE id = %d LOCK IN SHARE MODE", gone.ID))
					deleting := onairtest.Go("the deletion", del)
					onairtest.AwaitLockWait(t, db, []*onairtest.Call{muting, deleting}, "DELETE FROM `"+table+"`", fmt.Sprintf("= %d)", gone.ID))
					hold.Rollback()
					if err := muting.Wait(t); err != nil {
						t.Fatalf("mails off: %v", err)
					}
					if err := deleting.Wait(t); err != nil {
						t.Fatalf("deletion: %v", err)
					}
				}
				onairtest.ExpectNoOrphans(t, db, muteRefs...)
			}
		})
	}
}

// muteRefs are the mail switches' references to their users.
var muteRefs = []migrations.Ref{
	{Table: "notify_mutes", Column: "follower_id", Parent: "users"},
	{Table: "notify_mutes", Column: "followed_id", Parent: "users"},
	{Table: "notify_account_mutes", Column: "user_id", Parent: "users"},
}
