package users_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/users"
)

// userRows counts, per table, the rows that name the user in the tables
// whose user columns are part of their primary key (so bun made them no
// foreign key to cascade): follows both ways, favorites, mutes both ways
// and the account's mail switch.
func userRows(t *testing.T, ctx context.Context, db bun.IDB, id int64) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, q := range []struct{ table, where string }{
		{"follows", "follower_id = ? OR followed_id = ?"},
		{"show_favorites", "user_id = ? OR user_id = ?"},
		{"notify_mutes", "follower_id = ? OR followed_id = ?"},
		{"notify_account_mutes", "user_id = ? OR user_id = ?"},
	} {
		var n int
		if err := db.NewRaw("SELECT COUNT(*) FROM ? WHERE "+q.where, bun.Ident(q.table), id, id).Scan(ctx, &n); err != nil {
			t.Fatal(err)
		}
		out[q.table] = n
	}
	return out
}

func followers(t *testing.T, ctx context.Context, db bun.IDB, id int64) int {
	t.Helper()
	var n int
	if err := db.NewRaw("SELECT followers_count FROM users WHERE id = ?", id).Scan(ctx, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Deleting a user deletes their follows (both ways), favorites and mail
// switches (theirs and of them) in the deletion's transaction, and the
// counts they were part of go down; the rows of the others stay.
func TestDeleteUserLeavesNoRows(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		env := onairtest.New(t, onairtest.Options{Backend: backend})
		db := env.Core.DB
		um, _ := app.Lookup[*users.Module](env.Core)
		gone, goneTok := env.CreateUser("Gone Fan")
		dj, djTok := env.CreateUser("Dee Jay")
		pal, palTok := env.CreateUser("Pal Stays")
		by := env.Staff()
		follow := func(tok string, id int64) {
			env.Do("POST", fmt.Sprintf("/v1/users/%d/follow", id), tok, nil).Expect(t, http.StatusOK)
		}
		mute := func(tok string, id int64) {
			env.Do("PUT", fmt.Sprintf("/v1/users/%d/follow", id), tok, map[string]any{"notify": false}).Expect(t, http.StatusOK)
		}
		follow(goneTok, dj.ID)
		follow(goneTok, pal.ID)
		follow(palTok, dj.ID)
		follow(palTok, gone.ID)
		follow(djTok, gone.ID)
		mute(goneTok, dj.ID)
		mute(palTok, gone.ID)
		mute(palTok, dj.ID)
		for _, tok := range []string{goneTok, palTok} {
			env.Do("PUT", "/v1/notifications", tok, map[string]any{"go_live_mail": false}).Expect(t, http.StatusOK)
		}
		show := onairtest.CreateShow(t, env, djTok, nil).ID
		favorite := fmt.Sprintf("/v1/shows/%d/favorite", show)
		for _, tok := range []string{goneTok, palTok} {
			env.Do("POST", favorite, tok, nil).Expect(t, http.StatusOK)
		}
		favorites := func() float64 {
			return env.Do("GET", fmt.Sprintf("/v1/shows/%d", show), djTok, nil).Expect(t, http.StatusOK).JSON(t)["show"].(map[string]any)["favorites_count"].(float64)
		}
		if got := userRows(t, ctx, db, gone.ID); fmt.Sprint(got) != "map[follows:4 notify_account_mutes:1 notify_mutes:2 show_favorites:1]" {
			t.Fatalf("rows of the user before the delete: %v", got)
		}
		if d, p, f := followers(t, ctx, db, dj.ID), followers(t, ctx, db, pal.ID), favorites(); d != 2 || p != 1 || f != 2 {
			t.Fatalf("before the delete: followers %d and %d, favorites %v; want 2, 1, 2", d, p, f)
		}

		if _, err := um.Service.DeleteUser(ctx, gone.ID, by); err != nil {
			t.Fatal(err)
		}
		if got := userRows(t, ctx, db, gone.ID); fmt.Sprint(got) != "map[follows:0 notify_account_mutes:0 notify_mutes:0 show_favorites:0]" {
			t.Errorf("rows of the deleted user: %v, want none", got)
		}
		if d, p, f := followers(t, ctx, db, dj.ID), followers(t, ctx, db, pal.ID), favorites(); d != 1 || p != 0 || f != 1 {
			t.Errorf("after the delete: followers %d and %d, favorites %v; want 1, 0, 1", d, p, f)
		}
		// The others' rows stay: pal follows and mutes dj, keeps the
		// account switch and the favorite.
		if got := userRows(t, ctx, db, pal.ID); fmt.Sprint(got) != "map[follows:1 notify_account_mutes:1 notify_mutes:1 show_favorites:1]" {
			t.Errorf("rows of the user who stays: %v", got)
		}
		// Unfavoriting once more does not take the count below what
		// remains.
		env.Do("DELETE", favorite, palTok, nil).Expect(t, http.StatusOK)
		if f := favorites(); f != 0 {
			t.Errorf("favorites after the last unfavorite: %v", f)
		}
	})
}

// rerun runs a migration again on a live install: its row goes, and
// Migrate applies it (and nothing else).
func rerun(t *testing.T, env *onairtest.Env, id string) {
	t.Helper()
	ctx := context.Background()
	if _, err := env.Core.DB.ExecContext(ctx, "DELETE FROM onair_migrations WHERE id = ?", id); err != nil {
		t.Fatal(err)
	}
	n, err := env.Core.Migrate(ctx)
	if err != nil || n != 1 {
		t.Fatalf("migrate after removing %s: %d applied, %v; want 1", id, n, err)
	}
}

// Migration users:0011 deletes the follows an earlier release left of a
// user it deleted (it brought the counts down and deleted the row only),
// both ways, and keeps the others; run again, it changes nothing.
func TestOrphanFollowsMigration(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		env := onairtest.New(t, onairtest.Options{Backend: backend})
		db := env.Core.DB
		gone, goneTok := env.CreateUser("Gone Long Ago")
		dj, djTok := env.CreateUser("Dee Jay")
		_, palTok := env.CreateUser("Pal Stays")
		for _, f := range []struct {
			tok string
			id  int64
		}{{goneTok, dj.ID}, {palTok, dj.ID}, {djTok, gone.ID}} {
			env.Do("POST", fmt.Sprintf("/v1/users/%d/follow", f.id), f.tok, nil).Expect(t, http.StatusOK)
		}
		// What the earlier release's delete did.
		for _, q := range []string{
			fmt.Sprintf("UPDATE users SET followers_count = followers_count - 1 WHERE followers_count > 0 AND id IN (SELECT followed_id FROM follows WHERE follower_id = %d)", gone.ID),
			fmt.Sprintf("DELETE FROM users WHERE id = %d", gone.ID),
		} {
			if _, err := db.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		if got := userRows(t, ctx, db, gone.ID)["follows"]; got != 2 {
			t.Fatalf("orphan follows seeded: %d, want 2", got)
		}
		for range 2 {
			rerun(t, env, "users:0011_delete_orphan_follows")
			if got := userRows(t, ctx, db, gone.ID)["follows"]; got != 0 {
				t.Errorf("orphan follows after the migration: %d", got)
			}
			if got := userRows(t, ctx, db, dj.ID)["follows"]; got != 1 {
				t.Errorf("follows of the user who stays: %d, want 1", got)
			}
			if n := followers(t, ctx, db, dj.ID); n != 1 {
				t.Errorf("followers_count after the migration: %d, want 1", n)
			}
		}
	})
}
