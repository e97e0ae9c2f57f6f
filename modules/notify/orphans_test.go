package notify_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/notify"
	"github.com/onair/onair/modules/users"
)

// jobs counts the go-live jobs of a show.
func jobs(t *testing.T, env *onairtest.Env, show int64) int {
	t.Helper()
	n, err := env.Core.DB.NewSelect().Model((*notify.Job)(nil)).Where("show_id = ?", show).Count(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return int(n)
}

// A deleted show's job goes in the delete's transaction: deleted by its
// owner, with its owner deleted by staff, or once the install mails no
// more. A follower deleted by staff leaves no follow behind: the next
// go-live mails the other followers (a follow left of a deleted user made
// the job's expansion fail on SQLite, for every follower, at each try).
func TestDeletedShowLeavesNoJob(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		env, smtp := withSMTP(t, backend, nil)
		um, _ := onairtest.Module[*users.Module](env)
		by := env.Staff()
		dj, djToken := env.CreateUser("Dee Jay")
		other, otherToken := env.CreateUser("Other Jay")
		gone, goneToken := env.CreateUser("Fan Gone")
		fan, fanToken := env.CreateUser("Fan Stays")
		for _, tok := range []string{goneToken, fanToken} {
			env.Do("POST", fmt.Sprintf("/v1/users/%d/follow", dj.ID), tok, nil).Expect(t, http.StatusOK)
		}
		if _, err := um.Service.DeleteUser(ctx, gone.ID, by); err != nil {
			t.Fatal(err)
		}

		show := goLive(t, env, djToken, "After a fan left")
		if msg := smtp.Next(); len(msg.To) != 1 || msg.To[0] != fan.Email {
			t.Fatalf("mail to %v, want %s", msg.To, fan.Email)
		}
		if states := settled(t, env, show); states[notify.StatusSent] != 1 || len(states) != 1 {
			t.Errorf("mails of the show: %v, want one sent", states)
		}
		env.Do("DELETE", fmt.Sprintf("/v1/shows/%d", show), djToken, nil).Expect(t, http.StatusOK)
		if n := jobs(t, env, show); n != 0 {
			t.Errorf("jobs of the deleted show: %d", n)
		}

		owned := goLive(t, env, otherToken, "Owner deleted")
		if n := jobs(t, env, owned); n != 1 {
			t.Fatalf("jobs of the live show: %d, want 1", n)
		}
		if _, err := um.Service.DeleteUser(ctx, other.ID, by); err != nil {
			t.Fatal(err)
		}
		if n := jobs(t, env, owned); n != 0 {
			t.Errorf("jobs of the show of the deleted user: %d", n)
		}

		// Without mail now, a job written when there was goes too.
		quiet := onairtest.New(t, onairtest.Options{Backend: backend, DatabaseURL: env.Core.Config.DatabaseURL})
		kept := onairtest.CreateShow(t, quiet, djToken, nil).ID
		if _, err := quiet.Core.DB.NewInsert().Model(&notify.Job{ShowID: kept, CreatedAt: time.Now().UTC()}).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		quiet.Do("DELETE", fmt.Sprintf("/v1/shows/%d", kept), djToken, nil).Expect(t, http.StatusOK)
		if n := jobs(t, quiet, kept); n != 0 {
			t.Errorf("jobs of a show deleted without mail: %d", n)
		}
	})
}

// Migration notify:0006 deletes the mutes and account switches an
// earlier release left of a user it deleted, and the jobs of shows gone,
// and keeps the others; run again, it changes nothing.
func TestOrphansMigration(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		env := onairtest.New(t, onairtest.Options{Backend: backend})
		db := env.Core.DB
		dj, djToken := env.CreateUser("Dee Jay")
		_, fanToken := env.CreateUser("Fan Stays")
		gone, goneToken := env.CreateUser("Gone Long Ago")
		for _, f := range []struct {
			tok string
			id  int64
		}{{fanToken, dj.ID}, {goneToken, dj.ID}, {fanToken, gone.ID}} {
			follow := fmt.Sprintf("/v1/users/%d/follow", f.id)
			env.Do("POST", follow, f.tok, nil).Expect(t, http.StatusOK)
			env.Do("PUT", follow, f.tok, map[string]any{"notify": false}).Expect(t, http.StatusOK)
		}
		for _, tok := range []string{fanToken, goneToken} {
			env.Do("PUT", "/v1/notifications", tok, map[string]any{"go_live_mail": false}).Expect(t, http.StatusOK)
		}
		show := onairtest.CreateShow(t, env, djToken, nil).ID
		now := time.Now().UTC()
		for _, j := range []notify.Job{{ShowID: show, CreatedAt: now}, {ShowID: show + 1000, CreatedAt: now}} {
			if _, err := db.NewInsert().Model(&j).Exec(ctx); err != nil {
				t.Fatal(err)
			}
		}
		// What the earlier release's delete did.
		if _, err := db.ExecContext(ctx, "DELETE FROM users WHERE id = ?", gone.ID); err != nil {
			t.Fatal(err)
		}
		rows := func() string {
			t.Helper()
			var mutes []notify.Mute
			var accounts []notify.AccountMute
			var js []notify.Job
			for _, q := range []*bun.SelectQuery{
				db.NewSelect().Model(&mutes).OrderExpr("follower_id, followed_id"),
				db.NewSelect().Model(&accounts).OrderExpr("user_id"),
				db.NewSelect().Model(&js).OrderExpr("show_id"),
			} {
				if err := q.Scan(ctx); err != nil {
					t.Fatal(err)
				}
			}
			out := ""
			for _, m := range mutes {
				out += fmt.Sprintf("mute %d>%d ", m.FollowerID-dj.ID, m.FollowedID-dj.ID)
			}
			for _, a := range accounts {
				out += fmt.Sprintf("account %d ", a.UserID-dj.ID)
			}
			for _, j := range js {
				out += fmt.Sprintf("job %d ", j.ShowID-show)
			}
			return out
		}
		// Ids relative to the DJ's (fan +1, gone +2) and to the show's.
		if got := rows(); got != "mute 1>0 mute 1>2 mute 2>0 account 1 account 2 job 0 job 1000 " {
			t.Fatalf("seeded: %q", got)
		}
		for range 2 {
			if _, err := db.ExecContext(ctx, "DELETE FROM onair_migrations WHERE id = 'notify:0006_delete_orphans'"); err != nil {
				t.Fatal(err)
			}
			if n, err := env.Core.Migrate(ctx); err != nil || n != 1 {
				t.Fatalf("migrate: %d applied, %v; want 1", n, err)
			}
			if got := rows(); got != "mute 1>0 account 1 job 0 " {
				t.Errorf("after the migration: %q", got)
			}
		}
	})
}

// A follow whose follower is gone (written as the user was deleted: the
// table has no foreign key) is left out of the go-live mails; the other
// followers get theirs. On the old code the mail to the gone user failed
// the batch on SQLite, at every try, and no follower was mailed.
func TestExpandSkipsFollowersGone(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		env, smtp := withSMTP(t, backend, nil)
		dj, djToken := env.CreateUser("Dee Jay")
		fan, fanToken := env.CreateUser("Fan Stays")
		env.Do("POST", fmt.Sprintf("/v1/users/%d/follow", dj.ID), fanToken, nil).Expect(t, http.StatusOK)
		// A follower id no user has.
		if _, err := env.Core.DB.NewInsert().Model(&users.Follow{FollowerID: fan.ID + 1000, FollowedID: dj.ID, CreatedAt: time.Now().UTC()}).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		show := goLive(t, env, djToken, "A ghost follows")
		if msg := smtp.Next(); len(msg.To) != 1 || msg.To[0] != fan.Email {
			t.Fatalf("mail to %v, want %s", msg.To, fan.Email)
		}
		if states := settled(t, env, show); states[notify.StatusSent] != 1 || len(states) != 1 {
			t.Errorf("mails of the show: %v, want one sent", states)
		}
	})
}
