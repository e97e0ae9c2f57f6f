package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
	"github.com/onair/onair/app/events"
	"github.com/onair/onair/app/outbox"
	"github.com/onair/onair/internal/onairtest"
)

// Ping is the event of the tests' durable topic.
type Ping struct {
	N    int
	Note string
}

var pinged = events.NewTopic[Ping]("test.pinged")

// received is what a subscriber of pinged got.
type received struct {
	ev     Ping
	id     int64
	remote bool
}

// recorder keeps what a subscriber got.
type recorder struct {
	mu  sync.Mutex
	got []received
}

func (r *recorder) add(ctx context.Context, ev Ping) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, received{ev: ev, id: outbox.EventID(ctx), remote: outbox.Remote(ctx)})
}

func (r *recorder) all() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

// of returns what the subscriber got of ping n.
func (r *recorder) of(n int) []received {
	var out []received
	for _, g := range r.all() {
		if g.ev.N == n {
			out = append(out, g)
		}
	}
	return out
}

// openDB opens an empty database of the backend with the outbox table,
// made by the module's migrations.
func openDB(t *testing.T, backend string) *bun.DB {
	t.Helper()
	url := "sqlite://" + filepath.Join(t.TempDir(), "outbox.db")
	if backend == "mysql" {
		url = onairtest.FreshMySQL(t)
	}
	ctx := context.Background()
	db, err := app.OpenDB(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, m := range (&outbox.Module{}).Migrations() {
		for range 2 { // the steps are idempotent (the shows module ran them first on older databases)
			if err := m.Up(ctx, db); err != nil {
				t.Fatalf("%s: %v", m.ID, err)
			}
		}
	}
	return db
}

// publish publishes ev in a transaction of its own.
func publish(ctx context.Context, o *outbox.Outbox, bus *events.Bus, db *bun.DB, t outbox.Topic[Ping], ev Ping) error {
	return bus.RunInTx(ctx, db, 1, nil, func(ctx context.Context, tx *events.Tx) error {
		return outbox.Publish(ctx, o, tx, t, ev)
	})
}

// TestPublish: without a relay (one node, no Redis) a published event's
// row is written in the publisher's transaction, born relayed, and this
// node's subscribers get the event once after the commit, as local, with
// the row's id. The transaction subscribers run before the row is written
// (it holds the event as they left it); an error from one rolls the
// transaction back: no row, no delivery.
func TestPublish(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		db := openDB(t, backend)
		ctx := context.Background()
		bus := events.NewBus(nil)
		o := outbox.New(db, bus, nil, nil)
		topic := outbox.JSON("test.pinged", pinged)
		outbox.Declare(o, topic)
		rec := &recorder{}
		events.Subscribe(bus, pinged, rec.add)
		refuse := errors.New("not this one")
		events.SubscribeTx(bus, pinged, func(_ context.Context, _ *events.Tx, ev Ping) error {
			if ev.N == 2 {
				return refuse
			}
			return nil
		})

		if err := publish(ctx, o, bus, db, topic, Ping{N: 1, Note: "first"}); err != nil {
			t.Fatal(err)
		}
		var rows []outbox.Row
		if err := db.NewSelect().Model(&rows).OrderExpr("id ASC").Scan(ctx); err != nil {
			t.Fatal(err)
		}
		if len(rows) != 1 {
			t.Fatalf("%d rows, want 1", len(rows))
		}
		row := rows[0]
		if row.Topic != "test.pinged" || row.Payload != `{"N":1,"Note":"first"}` || row.RelayedAt == nil || !row.RelayedAt.Equal(row.CreatedAt) {
			t.Fatalf("row %+v", row)
		}
		if got := rec.all(); len(got) != 1 || got[0].ev.Note != "first" || got[0].remote || got[0].id != row.ID {
			t.Fatalf("delivered %+v, want ping 1 once, local, id %d", got, row.ID)
		}

		if err := publish(ctx, o, bus, db, topic, Ping{N: 2}); !errors.Is(err, refuse) {
			t.Fatalf("publish with a refusing hook: %v", err)
		}
		if n, err := db.NewSelect().Model((*outbox.Row)(nil)).Count(ctx); err != nil || n != 1 {
			t.Fatalf("%d rows after a rolled-back publish (%v), want 1", n, err)
		}
		if got := rec.of(2); len(got) != 0 {
			t.Fatalf("a rolled-back event was delivered: %+v", got)
		}
	})
}

// TestPublishWithoutOutbox: a service made outside a boot has no outbox;
// Publish then publishes as events.Publish does (no row).
func TestPublishWithoutOutbox(t *testing.T) {
	db := openDB(t, "sqlite")
	bus := events.NewBus(nil)
	rec := &recorder{}
	events.Subscribe(bus, pinged, rec.add)
	if err := publish(context.Background(), nil, bus, db, outbox.JSON("test.pinged", pinged), Ping{N: 7}); err != nil {
		t.Fatal(err)
	}
	if got := rec.all(); len(got) != 1 || got[0].ev.N != 7 || got[0].id != 0 {
		t.Fatalf("delivered %+v", got)
	}
	if n, _ := db.NewSelect().Model((*outbox.Row)(nil)).Count(context.Background()); n != 0 {
		t.Fatalf("%d rows, want none", n)
	}
}

// TestTopicRules: a topic's name fits the column (32 bytes), and one name
// is declared once per outbox.
func TestTopicRules(t *testing.T) {
	mustPanic := func(what string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s did not panic", what)
			}
		}()
		f()
	}
	mustPanic("a 33-byte name", func() { outbox.JSON("t."+strings.Repeat("x", 31), pinged) })
	mustPanic("an empty name", func() { outbox.JSON("", pinged) })
	outbox.JSON("t."+strings.Repeat("x", 30), pinged) // 32 bytes
	o := outbox.New(nil, events.NewBus(nil), nil, nil)
	outbox.Declare(o, outbox.JSON("test.pinged", pinged))
	mustPanic("a second declaration", func() { outbox.Declare(o, outbox.JSON("test.pinged", pinged)) })
}

// TestTrim: the cleanup deletes rows older than the cutoff; with
// onlyRelayed (Redis) it keeps the rows not yet relayed; it never deletes
// a row a Keep hook still holds; it deletes more rows than one statement
// takes.
func TestTrim(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		db := openDB(t, backend)
		ctx := context.Background()
		o := outbox.New(db, events.NewBus(nil), nil, nil)
		now := app.Now()
		old, recent := now.Add(-48*time.Hour), now.Add(-time.Hour)
		insert := func(created time.Time, relayed bool) int64 {
			row := &outbox.Row{Topic: "show", Type: "updated", Subject: 1, Payload: "{}", CreatedAt: created}
			if relayed {
				row.RelayedAt = &created
			}
			if _, err := db.NewInsert().Model(row).Exec(ctx); err != nil {
				t.Fatal(err)
			}
			return row.ID
		}
		left := func() []int64 {
			var ids []int64
			if err := db.NewSelect().Model((*outbox.Row)(nil)).Column("id").OrderExpr("id ASC").Scan(ctx, &ids); err != nil {
				t.Fatal(err)
			}
			return ids
		}
		oldRelayed, oldUnrelayed := insert(old, true), insert(old, false)
		held1, held2 := insert(old, true), insert(old, false)
		fresh := insert(recent, true)
		var hold int64
		o.Keep(func(context.Context) (int64, error) { return hold, nil })
		cutoff := now.Add(-24 * time.Hour)

		hold = held1
		if n, err := o.Trim(ctx, cutoff, true); err != nil || n != 1 {
			t.Fatalf("trim relayed: %d, %v; want 1", n, err)
		}
		if got := left(); fmt.Sprint(got) != fmt.Sprint([]int64{oldUnrelayed, held1, held2, fresh}) {
			t.Fatalf("after trimming relayed rows below %d: %v", hold, got)
		}
		if n, err := o.Trim(ctx, cutoff, false); err != nil || n != 1 {
			t.Fatalf("trim all: %d, %v; want 1", n, err)
		}
		hold = 0
		if n, err := o.Trim(ctx, cutoff, false); err != nil || n != 2 {
			t.Fatalf("trim without a hold: %d, %v; want 2", n, err)
		}
		if got := left(); fmt.Sprint(got) != fmt.Sprint([]int64{fresh}) {
			t.Fatalf("left %v, want only the recent row %d (old relayed was %d)", got, fresh, oldRelayed)
		}

		// More rows than one delete statement takes (1000).
		rows := make([]outbox.Row, 2500)
		for i := range rows {
			rows[i] = outbox.Row{Topic: "show", Type: "updated", Subject: 1, Payload: "{}", CreatedAt: old, RelayedAt: &old}
		}
		if _, err := db.NewInsert().Model(&rows).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		if n, err := o.Trim(ctx, cutoff, true); err != nil || n != len(rows) {
			t.Fatalf("trim %d old rows: %d, %v", len(rows), n, err)
		}
		if got := left(); len(got) != 1 {
			t.Fatalf("%d rows left, want 1", len(got))
		}
	})
}
