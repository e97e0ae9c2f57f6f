package users_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
	"github.com/onair/onair/app/events"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/shows"
	"github.com/onair/onair/modules/users"
)

// Deleting a user is one transaction: the users.Deleted event's handlers
// (shows, chat) delete the user's shows and messages in it. A handler that
// fails leaves everything in place and delivers no show event; then the
// delete goes through, and the shows' events are delivered after the
// commit.
func TestDeleteUserInOneTransaction(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		env := onairtest.New(t, onairtest.Options{Backend: backend})
		um, _ := app.Lookup[*users.Module](env.Core)
		_, hostTok := env.CreateUser("Host Stays")
		gone, goneTok := env.CreateUser("Gone Soon")
		by := env.Staff()
		newShow := func(tok, name string) int64 {
			r := env.Do("POST", "/v1/shows", tok, map[string]any{"name": name, "description": "d"}).Expect(t, 201)
			return int64(r.JSON(t)["show"].(map[string]any)["id"].(float64))
		}
		hostShow := newShow(hostTok, "Host's show")
		goneShows := []int64{newShow(goneTok, "First"), newShow(goneTok, "Second")}
		env.Do("POST", fmt.Sprintf("/v1/shows/%d/chats", hostShow), goneTok, map[string]any{"message": "bye"}).Expect(t, 201)

		// What the other modules see: show events after the commit, and,
		// inside the transaction, the rows as the handlers before left them.
		var mu sync.Mutex
		var delivered []int64
		shows.From(env.Core).Subscribe(func(_ context.Context, ev shows.Event) {
			if ev.Type == shows.EventDeleted {
				mu.Lock()
				delivered = append(delivered, ev.Show.ID)
				mu.Unlock()
			}
		})
		fail := errors.New("a handler refuses")
		failing := true
		var seenInTx []int
		events.SubscribeTx(env.Core.Events, users.Deleted, func(ctx context.Context, tx *events.Tx, d *users.Deletion) error {
			left := counts(t, ctx, tx, d.UserID)
			seenInTx = append(seenInTx, left...)
			if failing {
				return fail
			}
			return nil
		})

		if _, err := um.Service.DeleteUser(ctx, gone.ID, by); !errors.Is(err, fail) {
			t.Fatalf("DeleteUser with a failing handler: %v, want %v", err, fail)
		}
		// Inside the transaction the shows and messages were gone already...
		if !slices.Equal(seenInTx, []int{0, 0}) {
			t.Fatalf("shows and messages of the user inside the transaction: %v, want [0 0]", seenInTx)
		}
		// ...and the rollback put everything back, with no event out.
		if got := counts(t, ctx, env.Core.DB, gone.ID); !slices.Equal(got, []int{2, 1}) {
			t.Fatalf("after the failed delete: shows and messages %v, want [2 1]", got)
		}
		env.Do("GET", "/v1/users/me", goneTok, nil).Expect(t, 200)
		if n := comments(t, env, hostTok, hostShow); n != 1 {
			t.Fatalf("comments_count after the failed delete: %v", n)
		}
		mu.Lock()
		if len(delivered) != 0 {
			t.Fatalf("events delivered for a rolled-back delete: %v", delivered)
		}
		mu.Unlock()

		failing = false
		deleted, err := um.Service.DeleteUser(ctx, gone.ID, by)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(deleted, goneShows) {
			t.Fatalf("deleted shows %v, want %v", deleted, goneShows)
		}
		if got := counts(t, ctx, env.Core.DB, gone.ID); !slices.Equal(got, []int{0, 0}) {
			t.Fatalf("after the delete: shows and messages %v, want none", got)
		}
		env.Do("GET", "/v1/users/me", goneTok, nil).Expect(t, 401)
		env.Do("GET", fmt.Sprintf("/v1/shows/%d", goneShows[0]), hostTok, nil).Expect(t, 404)
		if n := comments(t, env, hostTok, hostShow); n != 0 {
			t.Fatalf("comments_count after the delete: %v", n)
		}
		mu.Lock()
		defer mu.Unlock()
		if !slices.Equal(delivered, goneShows) {
			t.Fatalf("deleted events delivered %v, want %v", delivered, goneShows)
		}
	})
}

// counts is how many shows and chat messages of the user db holds.
func counts(t *testing.T, ctx context.Context, db bun.IDB, userID int64) []int {
	t.Helper()
	var out []int
	for _, table := range []string{"shows", "chat_messages"} {
		var n int
		if err := db.NewRaw("SELECT COUNT(*) FROM ? WHERE user_id = ?", bun.Ident(table), userID).Scan(ctx, &n); err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

func comments(t *testing.T, env *onairtest.Env, tok string, show int64) float64 {
	t.Helper()
	return env.Do("GET", fmt.Sprintf("/v1/shows/%d", show), tok, nil).Expect(t, 200).JSON(t)["show"].(map[string]any)["comments_count"].(float64)
}

// Tags that fold to one key merge, and TagsMerged reaches its transaction
// subscribers inside the step with the merge; a subscriber's error rolls
// the merge back.
func TestTagsMergedEvent(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		env := onairtest.New(t, onairtest.Options{Backend: backend})
		db := env.Core.DB
		for _, q := range []string{
			"INSERT INTO tags (id, name, folded, slug) VALUES (200, 'Straße', 'old-200', 'old-200'), (201, 'STRASSE', 'old-201', 'old-201')",
		} {
			if _, err := db.ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		bus := events.NewBus(nil)
		var got []users.TagMerge
		fail := errors.New("refused")
		failing := true
		events.SubscribeTx(bus, users.TagsMerged, func(ctx context.Context, tx *events.Tx, m users.TagMerge) error {
			var left int
			if err := tx.NewRaw("SELECT COUNT(*) FROM tags WHERE id IN (200, 201)").Scan(ctx, &left); err != nil {
				return err
			}
			if left != 1 {
				t.Errorf("tags left inside the step: %d, want 1", left)
			}
			got = append(got, m)
			if failing {
				return fail
			}
			return nil
		})
		rekey := func() error {
			return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error { return users.RekeyTags(ctx, tx, bus) })
		}
		tagCount := func() int {
			var n int
			if err := db.NewRaw("SELECT COUNT(*) FROM tags WHERE id IN (200, 201)").Scan(ctx, &n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		if err := rekey(); !errors.Is(err, fail) {
			t.Fatalf("rekey with a failing subscriber: %v", err)
		}
		if n := tagCount(); n != 2 {
			t.Fatalf("tags after the rolled-back merge: %d, want 2", n)
		}
		failing = false
		if err := rekey(); err != nil {
			t.Fatal(err)
		}
		if n := tagCount(); n != 1 {
			t.Fatalf("tags after the merge: %d, want 1", n)
		}
		if len(got) != 2 || fmt.Sprint(got[1].Into) != "map[201:200]" {
			t.Fatalf("events %v, want two merges of 201 into 200", got)
		}
		// Nothing left to merge: no event.
		if err := rekey(); err != nil || len(got) != 2 {
			t.Fatalf("a rekey with nothing to merge: %v, %d events", err, len(got))
		}
	})
}
