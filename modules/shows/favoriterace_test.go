package shows_test

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
	"github.com/onair/onair/modules/shows"
	"github.com/onair/onair/modules/users"
)

// A favorite by a user deleted before it, or of a show deleted before it,
// is a 404 and leaves no row (show_favorites has no foreign keys to
// refuse it).
func TestFavoriteOfGone(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		env := onairtest.New(t, onairtest.Options{Backend: backend})
		um, _ := app.Lookup[*users.Module](env.Core)
		svc := shows.From(env.Core)
		staff := env.Staff()
		_, djTok := env.CreateUser("Dee Jay")
		show := onairtest.CreateShow(t, env, djTok, nil).ID
		fan, _ := env.CreateUser("Fan Gone")
		if _, err := um.Service.DeleteUser(ctx, fan.ID, staff); err != nil {
			t.Fatal(err)
		}
		_, err := svc.Favorite(ctx, show, userOf(fan.ID), true)
		onairtest.ExpectNotFound(t, "favorite by a user gone", err)
		stays, _ := env.CreateUser("Fan Stays")
		if _, err := svc.Delete(ctx, show, nil); err != nil {
			t.Fatal(err)
		}
		_, err = svc.Favorite(ctx, show, userOf(stays.ID), true)
		onairtest.ExpectNotFound(t, "favorite of a show gone", err)
		onairtest.ExpectNoOrphans(t, env.Core.DB, favoriteRefs...)
	})
}

// A favorite and the deletion of its user or of its show, at once on
// MariaDB, in either order: no favorite outlives either, and the show's
// favorites_count stays true. A transaction of the test holds the user's
// row, or deletes the show, so that the first of the two stops midway
// with its locks held (the deletion of the user before the user's row
// goes, the favorite before it holds the user's), and lets go once the
// second waits for it.
func TestFavoriteRacesDeletion(t *testing.T) {
	if os.Getenv(onairtest.MySQLEnv) == "" {
		testload.Skip(t, "needs %s (SQLite runs one writer at a time)", onairtest.MySQLEnv)
	}
	ctx := context.Background()
	env := onairtest.New(t, onairtest.Options{Backend: "mysql"})
	um, _ := app.Lookup[*users.Module](env.Core)
	svc, db := shows.From(env.Core), env.Core.DB
	staff := env.Staff()
	_, djTok := env.CreateUser("Dee Jay")
	setup := func(t *testing.T) (int64, *users.User, func() error) {
		show := onairtest.CreateShow(t, env, djTok, nil).ID
		fan, _ := env.CreateUser("Fan")
		return show, fan, func() error { _, err := svc.Favorite(ctx, show, userOf(fan.ID), true); return err }
	}
	deleteUser := func(id int64) func() error {
		return func() error { _, err := um.Service.DeleteUser(ctx, id, staff); return err }
	}
	// The favorite waits for the user's row, its row in.
	favoriteWaits := func(t *testing.T, favorite func() error, fan int64) *onairtest.Call {
		favoring := onairtest.Go("the favorite", favorite)
		onairtest.AwaitLockWait(t, db, []*onairtest.Call{favoring}, fmt.Sprintf("FROM users WHERE id = %d LOCK IN SHARE MODE", fan))
		return favoring
	}

	t.Run("deletion of the user first", func(t *testing.T) {
		show, fan, favorite := setup(t)
		// The deletion waits for the user's row, the favorites gone
		// already; the favorite waits for it.
		hold := onairtest.HoldRow(t, db, "users", fan.ID)
		deleting := onairtest.Go("the deletion", deleteUser(fan.ID))
		onairtest.AwaitLockWait(t, db, []*onairtest.Call{deleting}, "DELETE FROM `users`", fmt.Sprintf("(id = %d)", fan.ID))
		favoring := onairtest.Go("the favorite", favorite)
		onairtest.AwaitLockWait(t, db, []*onairtest.Call{deleting, favoring}, "INSERT IGNORE INTO `show_favorites`", fmt.Sprintf("VALUES (%d, %d,", fan.ID, show))
		hold.Rollback()
		if err := deleting.Wait(t); err != nil {
			t.Fatalf("deletion: %v", err)
		}
		onairtest.ExpectNotFound(t, "favorite", favoring.Wait(t))
		onairtest.ExpectNoOrphans(t, db, favoriteRefs...)
		expectFavorites(t, db, show, 0)
	})
	t.Run("favorite first, deletion of the user", func(t *testing.T) {
		show, fan, favorite := setup(t)
		hold := onairtest.HoldRow(t, db, "users", fan.ID)
		favoring := favoriteWaits(t, favorite, fan.ID)
		deleting := onairtest.Go("the deletion", deleteUser(fan.ID))
		onairtest.AwaitLockWait(t, db, []*onairtest.Call{favoring, deleting}, fmt.Sprintf("FROM show_favorites WHERE user_id = %d ORDER BY", fan.ID))
		hold.Rollback()
		if err := favoring.Wait(t); err != nil {
			t.Fatalf("favorite: %v", err)
		}
		if err := deleting.Wait(t); err != nil {
			t.Fatalf("deletion: %v", err)
		}
		onairtest.ExpectNoOrphans(t, db, favoriteRefs...)
		expectFavorites(t, db, show, 0)
	})
	t.Run("deletion of the show first", func(t *testing.T) {
		show, _, favorite := setup(t)
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if err := shows.DeleteInTx(ctx, svc, tx, show); err != nil {
			t.Fatal(err)
		}
		favoring := onairtest.Go("the favorite", favorite)
		onairtest.AwaitLockWait(t, db, []*onairtest.Call{favoring}, "FROM `shows` AS `s`", fmt.Sprintf("(s.id = %d)", show))
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		onairtest.ExpectNotFound(t, "favorite", favoring.Wait(t))
		onairtest.ExpectNoOrphans(t, db, favoriteRefs...)
	})
	t.Run("favorite first, deletion of the show", func(t *testing.T) {
		show, fan, favorite := setup(t)
		hold := onairtest.HoldRow(t, db, "users", fan.ID)
		favoring := favoriteWaits(t, favorite, fan.ID)
		deleting := onairtest.Go("the deletion", func() error { _, err := svc.Delete(ctx, show, nil); return err })
		onairtest.AwaitLockWait(t, db, []*onairtest.Call{favoring, deleting}, "FROM `shows` AS `s`", fmt.Sprintf("(s.id = %d)", show))
		hold.Rollback()
		// The favorite commits, then reads the show back: a 404 if the
		// deletion has committed by then.
		if err := favoring.Wait(t); err != nil {
			onairtest.ExpectNotFound(t, "favorite", err)
		}
		if err := deleting.Wait(t); err != nil {
			t.Fatalf("deletion: %v", err)
		}
		onairtest.ExpectNoOrphans(t, db, favoriteRefs...)
	})
}

func userOf(id int64) *app.Principal {
	return &app.Principal{UserID: id, Roles: []string{app.RoleUser}}
}

func expectFavorites(t *testing.T, db bun.IDB, show int64, want int) {
	t.Helper()
	var n int
	if err := db.NewRaw("SELECT favorites_count FROM shows WHERE id = ?", show).Scan(context.Background(), &n); err != nil {
		t.Fatal(err)
	}
	if n != want {
		t.Fatalf("show %d: favorites_count %d, want %d", show, n, want)
	}
}

// favoriteRefs are a favorite's references to its user and show.
var favoriteRefs = []migrations.Ref{
	{Table: "show_favorites", Column: "user_id", Parent: "users"},
	{Table: "show_favorites", Column: "show_id", Parent: "shows"},
}
