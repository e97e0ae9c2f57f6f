package shows_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/shows"
)

// Migration shows:0044 deletes the favorites an earlier release left of a
// user it deleted (the row went, the favorites and the counts that held
// them stayed) and of a show gone, counts the favorites of the shows
// those were of again, and keeps the others; run again, it changes
// nothing.
func TestOrphanFavoritesMigration(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		env := onairtest.New(t, onairtest.Options{Backend: backend})
		db := env.Core.DB
		_, djTok := env.CreateUser("Dee Jay")
		fan, fanTok := env.CreateUser("Fan Stays")
		gone, goneTok := env.CreateUser("Gone Long Ago")
		one := onairtest.CreateShow(t, env, djTok, nil).ID
		two := onairtest.CreateShow(t, env, djTok, nil).ID
		for _, f := range []struct {
			tok  string
			show int64
		}{{goneTok, one}, {goneTok, two}, {fanTok, one}} {
			env.Do("POST", fmt.Sprintf("/v1/shows/%d/favorite", f.show), f.tok, nil).Expect(t, http.StatusOK)
		}
		// What the earlier release's delete did, and a favorite of a show
		// no longer there.
		if _, err := db.ExecContext(ctx, "DELETE FROM users WHERE id = ?", gone.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := db.NewInsert().Model(&shows.Favorite{UserID: fan.ID, ShowID: two + 1000, CreatedAt: time.Now().UTC()}).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		count := func(where string, args ...any) int {
			t.Helper()
			n, err := db.NewSelect().Model((*shows.Favorite)(nil)).Where(where, args...).Count(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return int(n)
		}
		favorites := func(id int64) float64 {
			return env.Do("GET", fmt.Sprintf("/v1/shows/%d", id), djTok, nil).Expect(t, http.StatusOK).JSON(t)["show"].(map[string]any)["favorites_count"].(float64)
		}
		if n, a, b := count("user_id = ?", gone.ID), favorites(one), favorites(two); n != 2 || a != 2 || b != 1 {
			t.Fatalf("seeded: %d orphan favorites, counts %v and %v; want 2, 2, 1", n, a, b)
		}
		for range 2 {
			if _, err := db.ExecContext(ctx, "DELETE FROM onair_migrations WHERE id = 'shows:0044_delete_orphan_favorites'"); err != nil {
				t.Fatal(err)
			}
			if n, err := env.Core.Migrate(ctx); err != nil || n != 1 {
				t.Fatalf("migrate: %d applied, %v; want 1", n, err)
			}
			if n, m := count("user_id = ?", gone.ID), count("show_id = ?", two+1000); n != 0 || m != 0 {
				t.Errorf("after the migration: %d favorites of the user gone, %d of the show gone", n, m)
			}
			if n := count("user_id = ?", fan.ID); n != 1 {
				t.Errorf("favorites of the user who stays: %d, want 1", n)
			}
			if a, b := favorites(one), favorites(two); a != 1 || b != 0 {
				t.Errorf("favorites_count after the migration: %v and %v, want 1 and 0", a, b)
			}
		}
	})
}
