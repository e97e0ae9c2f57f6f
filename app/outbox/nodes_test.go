package outbox_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/onair/onair/app"
	"github.com/onair/onair/app/events"
	"github.com/onair/onair/app/outbox"
	"github.com/onair/onair/internal/faulttest"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
)

// node is one OnAir of a two-node test, with the test topic declared and
// a recorder subscribed to it.
type node struct {
	env   *onairtest.Env
	ob    *outbox.Outbox
	topic outbox.Topic[Ping]
	rec   *recorder
}

// bootNode boots a node on the shared database and declares the test
// topic on it, as a module does in Provision.
func bootNode(t *testing.T, opts onairtest.Options) *node {
	env := onairtest.New(t, opts)
	n := &node{env: env, ob: outbox.From(env.Core), topic: outbox.JSON("test.pinged", pinged), rec: &recorder{}}
	outbox.Declare(n.ob, n.topic)
	events.Subscribe(env.Core.Events, pinged, n.rec.add)
	return n
}

func (n *node) publish(t *testing.T, ev Ping) {
	t.Helper()
	if err := publish(context.Background(), n.ob, n.env.Core.Events, n.env.Core.DB, n.topic, ev); err != nil {
		t.Fatal(err)
	}
}

// await waits for n's subscriber to get ping i.
func (n *node) await(t *testing.T, name string, i int) received {
	t.Helper()
	var got received
	testload.Poll(t, fmt.Sprintf("node %s to get ping %d", name, i), func() error {
		evs := n.rec.of(i)
		if len(evs) == 0 {
			return fmt.Errorf("got %d events", len(n.rec.all()))
		}
		got = evs[0]
		return nil
	})
	return got
}

// onceEach checks that every event reached the node once.
func onceEach(t *testing.T, name string, n *node) {
	t.Helper()
	seen := map[int64]bool{}
	for _, g := range n.rec.all() {
		if seen[g.id] {
			t.Errorf("node %s got event %d (ping %d) twice", name, g.id, g.ev.N)
		}
		seen[g.id] = true
	}
}

func needNodes(t *testing.T) {
	if os.Getenv(onairtest.MySQLEnv) == "" || os.Getenv(onairtest.RedisEnv) == "" {
		testload.Skip(t, "needs %s and %s (the README's test command sets both)", onairtest.MySQLEnv, onairtest.RedisEnv)
	}
}

// TestDurableEventAcrossNodes: two nodes on one MariaDB database and one
// Redis. An event a module publishes on node A reaches node B's
// subscribers once, as remote, with A's row id, and A's own once, as
// local; the row is marked relayed.
func TestDurableEventAcrossNodes(t *testing.T) {
	needNodes(t)
	db := onairtest.FreshMySQL(t)
	prefix := fmt.Sprintf("onairtest:ob%d:", time.Now().UnixNano())
	opts := onairtest.Options{DatabaseURL: db, Redis: true, RedisPrefix: prefix}
	a, b := bootNode(t, opts), bootNode(t, opts)
	rdb := a.env.Core.Redis
	t.Cleanup(func() { rdb.Del(context.Background(), prefix+outbox.Stream) })

	for i := 1; i <= 3; i++ {
		a.publish(t, Ping{N: i, Note: "from A"})
	}
	b.publish(t, Ping{N: 4, Note: "from B"})
	for i := 1; i <= 4; i++ {
		gotA, gotB := a.await(t, "A", i), b.await(t, "B", i)
		if gotA.id == 0 || gotA.id != gotB.id {
			t.Fatalf("ping %d: A saw event %d, B saw %d", i, gotA.id, gotB.id)
		}
		fromA := i <= 3
		if gotA.remote == fromA || gotB.remote != fromA {
			t.Fatalf("ping %d: remote on A %v, on B %v", i, gotA.remote, gotB.remote)
		}
	}
	// A last ping from A, once B has it, shows the stream was read past
	// the others: nothing came twice.
	a.publish(t, Ping{N: 5})
	b.await(t, "B", 5)
	onceEach(t, "A", a)
	onceEach(t, "B", b)
	if len(a.rec.all()) != 5 || len(b.rec.all()) != 5 {
		t.Fatalf("A got %d events, B %d; want 5 each", len(a.rec.all()), len(b.rec.all()))
	}
	testload.Poll(t, "every row marked relayed", func() error {
		n, err := a.env.Core.DB.NewSelect().Model((*outbox.Row)(nil)).Where("topic = ?", "test.pinged").Where("relayed_at IS NULL").Count(context.Background())
		if err != nil || n != 0 {
			return fmt.Errorf("%d unrelayed (%v)", n, err)
		}
		return nil
	})
}

// TestDurableEventRedisAway: node A's event committed while Redis is away
// is relayed by the outbox sweep once Redis is back (A sweeps each second
// once its own relay failed), and reaches node B once; A's subscribers got
// it at the commit, and not again.
func TestDurableEventRedisAway(t *testing.T) {
	if os.Getenv(onairtest.MySQLEnv) == "" {
		testload.Skip(t, "needs %s (two nodes share a database)", onairtest.MySQLEnv)
	}
	rds := faulttest.StartRedis(t)
	db := onairtest.FreshMySQL(t)
	// The sweep for other nodes' rows is an hour away: A's own row is
	// relayed because A's failed relay hurried its sweep.
	opts := onairtest.Options{DatabaseURL: db, Configure: func(c *app.Config) {
		c.RedisURL, c.RedisPrefix = rds.URL(), "away:"
		c.Set(outbox.SettingSweep, time.Hour)
	}}
	a, b := bootNode(t, opts), bootNode(t, opts)
	a.publish(t, Ping{N: 1})
	b.await(t, "B", 1)

	rds.Kill()
	t.Cleanup(func() {
		if !rds.Running() {
			rds.Start()
		}
	})
	a.publish(t, Ping{N: 2, Note: "while Redis was away"})
	if got := a.rec.of(2); len(got) != 1 || got[0].remote {
		t.Fatalf("A got its own event %+v, want once, local, at the commit", got)
	}
	ctx := context.Background()
	unrelayed := func() (int64, error) {
		return a.env.Core.DB.NewSelect().Model((*outbox.Row)(nil)).Where("relayed_at IS NULL").Count(ctx)
	}
	if n, err := unrelayed(); err != nil || n != 1 {
		t.Fatalf("%d rows unrelayed with Redis away (%v), want 1", n, err)
	}
	rds.Start()
	got := b.await(t, "B", 2)
	if !got.remote || got.ev.Note != "while Redis was away" {
		t.Fatalf("B got %+v", got)
	}
	testload.Poll(t, "the row marked relayed", func() error {
		if n, err := unrelayed(); err != nil || n != 0 {
			return fmt.Errorf("%d unrelayed (%v)", n, err)
		}
		return nil
	})
	a.publish(t, Ping{N: 3})
	b.await(t, "B", 3)
	onceEach(t, "A", a)
	onceEach(t, "B", b)
	if len(a.rec.of(2)) != 1 || len(b.rec.of(2)) != 1 {
		t.Fatalf("ping 2 reached A %d times, B %d times; want once each", len(a.rec.of(2)), len(b.rec.of(2)))
	}
}
