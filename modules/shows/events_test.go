package shows_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
	"github.com/onair/onair/app/events"
	"github.com/onair/onair/app/outbox"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/shows"
)

// recorder keeps the events a subscriber got.
type recorder struct {
	mu  sync.Mutex
	evs []shows.Event
}

func (r *recorder) add(_ context.Context, ev shows.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, ev)
}

func (r *recorder) all() []shows.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]shows.Event(nil), r.evs...)
}

// ofShow returns the events of one show, in delivery order.
func (r *recorder) ofShow(id int64) []shows.Event {
	var out []shows.Event
	for _, ev := range r.all() {
		if ev.Show.ID == id {
			out = append(out, ev)
		}
	}
	return out
}

func countOutbox(t *testing.T, db bun.IDB, showID int64) int64 {
	t.Helper()
	n, err := db.NewSelect().Model((*outbox.Row)(nil)).Where("show_id = ?", showID).Count(context.Background())
	if err != nil {
		t.Fatalf("count outbox: %v", err)
	}
	return n
}

// TestSubscribeTx: a transaction hook sees each change inside its
// transaction, with the show as the change left it and the outbox row's
// id; the event subscribers get after the commit is the same. A hook that
// fails rolls the change back: the caller gets the error, the show is as
// it was, and no event or outbox row exists. Work a hook queues with
// AfterCommit runs once each change committed, after the subscribers got
// its event, and never for the change rolled back.
func TestSubscribeTx(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		f := newFixture(t, backend)
		owner, tok := f.user("Hooked DJ")
		by := &app.Principal{UserID: owner.ID, Roles: []string{"user"}}

		type seen struct {
			ev   shows.Event
			live bool // read back inside the hook's transaction
		}
		var mu sync.Mutex
		var hooked []seen
		var committed []string // by the hook's AfterCommit work
		var fail error
		rec := &recorder{}
		f.svc.SubscribeTx(func(ctx context.Context, tx bun.IDB, ev shows.Event) error {
			mu.Lock()
			defer mu.Unlock()
			if fail != nil && ev.Type == shows.EventStopped {
				return fail
			}
			var live bool
			if ev.Type != shows.EventDeleted {
				if err := tx.NewSelect().Model((*shows.Show)(nil)).Column("live").Where("id = ?", ev.Show.ID).Scan(ctx, &live); err != nil {
					return err
				}
			}
			hooked = append(hooked, seen{ev, live})
			etx, ok := tx.(*events.Tx)
			if !ok {
				return fmt.Errorf("the hook's transaction is a %T, not an *events.Tx", tx)
			}
			etx.AfterCommit(func(context.Context) {
				mu.Lock()
				defer mu.Unlock()
				if n := len(rec.ofShow(ev.Show.ID)); n == 0 || rec.ofShow(ev.Show.ID)[n-1].Type != ev.Type {
					t.Errorf("after the commit of %s, the subscribers had not got it", ev.Type)
				}
				committed = append(committed, ev.Type)
			})
			return nil
		})
		f.svc.Subscribe(rec.add)

		sh := onairtest.CreateShow(t, f.env, tok, map[string]any{"name": "Hooked", "description": "d"}).Object
		showID := id(sh)
		if _, err := f.svc.GoLive(f.ctx, showID, shows.Media{}); err != nil {
			t.Fatalf("go live: %v", err)
		}

		// A failing hook: the stop is refused and rolled back.
		mu.Lock()
		fail = app.Conflict("the hook says no")
		mu.Unlock()
		if _, err := f.svc.Stop(f.ctx, showID, by); !errors.Is(err, fail) {
			t.Fatalf("stop with a failing hook: %v, want the hook's error", err)
		}
		r := f.do(t, "POST", fmt.Sprintf("/v1/shows/%d/stop", showID), tok, nil)
		expectError(t, r, http.StatusConflict)
		if got, _ := f.svc.Get(f.ctx, showID); !got.Live {
			t.Fatal("the show stopped although its hook failed")
		}
		for _, ev := range rec.ofShow(showID) {
			if ev.Type == shows.EventStopped {
				t.Fatal("a rolled-back stop was emitted")
			}
		}
		if n := countOutbox(t, f.svc.DB(), showID); n != 2 {
			t.Fatalf("%d outbox rows after created+live and two failed stops, want 2", n)
		}

		mu.Lock()
		fail = nil
		mu.Unlock()
		if _, err := f.svc.Stop(f.ctx, showID, by); err != nil {
			t.Fatalf("stop: %v", err)
		}
		if _, err := f.svc.Delete(f.ctx, showID, by); err != nil {
			t.Fatalf("delete: %v", err)
		}

		mu.Lock()
		defer mu.Unlock()
		want := []string{shows.EventCreated, shows.EventLive, shows.EventStopped, shows.EventDeleted}
		got := rec.ofShow(showID)
		if !slices.Equal(committed, want) {
			t.Fatalf("after-commit work ran for %v, want %v", committed, want)
		}
		if len(hooked) != len(want) || len(got) != len(want) {
			t.Fatalf("hooks saw %d events, subscribers %d, want %d", len(hooked), len(got), len(want))
		}
		var last int64
		for i, typ := range want {
			h, ev := hooked[i], got[i]
			if h.ev.Type != typ || ev.Type != typ {
				t.Fatalf("event %d: hook %s, subscriber %s, want %s", i, h.ev.Type, ev.Type, typ)
			}
			if h.ev.ID <= last || h.ev.ID != ev.ID {
				t.Fatalf("event %d (%s): hook id %d, subscriber id %d, previous %d", i, typ, h.ev.ID, ev.ID, last)
			}
			last = h.ev.ID
			if ev.Remote || h.ev.Remote {
				t.Fatalf("event %d (%s) is marked remote on the node that made it", i, typ)
			}
			if typ != shows.EventDeleted && h.ev.Show.Live != h.live {
				t.Fatalf("event %d (%s): Show.Live %v, the transaction reads %v", i, typ, h.ev.Show.Live, h.live)
			}
		}
		if !hooked[1].ev.Show.Live || hooked[2].ev.Show.Live || !hooked[2].ev.Show.Complete {
			t.Fatal("the hooks' shows are not the state after each change")
		}
		if hooked[2].ev.By == nil || hooked[2].ev.By.UserID != owner.ID || hooked[1].ev.By != nil {
			t.Fatal("By is not the caller (stop) or the system (go live)")
		}
	})
}

// TestOutboxWithoutRedis: one node with no Redis delivers in-process as
// before (Remote false) and still writes each event's outbox row, with
// the show's snapshot (no stream key, no password hash) and the actor. The
// row is written relayed (there is no other node; a relay turned on later
// must not replay it) and no relay metric exists.
func TestOutboxWithoutRedis(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		f := newFixture(t, backend)
		owner, tok := f.user("Outbox DJ")
		rec := &recorder{}
		f.svc.Subscribe(rec.add)
		showID := onairtest.CreateShow(t, f.env, tok, map[string]any{"name": "Outboxed", "description": "d"}).ID
		evs := rec.ofShow(showID)
		if len(evs) != 1 || evs[0].Remote || evs[0].ID == 0 {
			t.Fatalf("events: %v", types(evs))
		}
		var rows []outbox.Row
		if err := f.svc.DB().NewSelect().Model(&rows).Where("show_id = ?", showID).Scan(f.ctx); err != nil {
			t.Fatal(err)
		}
		if len(rows) != 1 {
			t.Fatalf("%d outbox rows, want 1", len(rows))
		}
		row := rows[0]
		if row.ID != evs[0].ID || row.Topic != shows.TopicShow || row.Type != shows.EventCreated ||
			row.ActorID == nil || *row.ActorID != owner.ID || row.RelayedAt == nil || !row.RelayedAt.Equal(row.CreatedAt) {
			t.Fatalf("outbox row %+v", row)
		}
		var snap shows.Show
		if err := json.Unmarshal([]byte(row.Payload), &snap); err != nil {
			t.Fatal(err)
		}
		if snap.ID != showID || snap.Name != "Outboxed" || snap.StreamKey != "" || snap.User == nil ||
			snap.User.PasswordHash != "" || snap.User.Email != "" || snap.User.ID != owner.ID {
			t.Fatalf("snapshot %+v", snap)
		}
		mfs, err := f.env.Core.Metrics.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if strings.HasPrefix(mf.GetName(), "onair_events_") {
				t.Errorf("metric %s without Redis", mf.GetName())
			}
		}
	})
}
