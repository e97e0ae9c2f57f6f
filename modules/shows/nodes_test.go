package shows_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
	"github.com/onair/onair/app/outbox"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/shows"
)

// node is one OnAir of a two-node test, with a recorder subscribed.
type node struct {
	env *onairtest.Env
	svc *shows.Service
	rec *recorder
}

func twoNodes(t *testing.T) (a, b *node) {
	t.Helper()
	if os.Getenv(onairtest.MySQLEnv) == "" || os.Getenv(onairtest.RedisEnv) == "" {
		testload.Skip(t, "needs %s and %s (the README's test command sets both)", onairtest.MySQLEnv, onairtest.RedisEnv)
	}
	db := onairtest.FreshMySQL(t)
	prefix := fmt.Sprintf("onairtest:%d:", time.Now().UnixNano())
	boot := func() *node {
		env := onairtest.New(t, onairtest.Options{DatabaseURL: db, Redis: true, RedisPrefix: prefix, Configure: quickSweep})
		n := &node{env: env, svc: shows.From(env.Core), rec: &recorder{}}
		n.svc.Subscribe(n.rec.add)
		return n
	}
	a, b = boot(), boot()
	dropStream(t, a.env)
	return a, b
}

// quickSweep makes the outbox sweep for rows other nodes left each second
// (ONAIR_OUTBOX_SWEEP), so the tests of a crashed node's rows take seconds.
func quickSweep(c *app.Config) { c.Set(outbox.SettingSweep, time.Second) }

// dropStream deletes the test's events stream from Redis at the end.
func dropStream(t *testing.T, env *onairtest.Env) {
	rdb, key := env.Core.Redis, env.Core.Config.RedisPrefix+shows.EventsStream
	t.Cleanup(func() { rdb.Del(context.Background(), key) })
}

// await waits for n's subscribers to get an event of the show of type typ
// and returns it with how long it took from since.
func (n *node) await(t *testing.T, showID int64, typ string, since time.Time) (shows.Event, time.Duration) {
	t.Helper()
	var got shows.Event
	testload.Poll(t, fmt.Sprintf("a %q event of show %d", typ, showID), func() error {
		for _, ev := range n.rec.ofShow(showID) {
			if ev.Type == typ {
				got = ev
				return nil
			}
		}
		return fmt.Errorf("events so far: %v", types(n.rec.ofShow(showID)))
	})
	return got, time.Since(since)
}

func types(evs []shows.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = fmt.Sprintf("%s#%d remote=%v", ev.Type, ev.ID, ev.Remote)
	}
	return out
}

// onceEach checks that a subscriber got every event id at most once.
func onceEach(t *testing.T, who string, evs []shows.Event) {
	t.Helper()
	seen := map[int64]bool{}
	for _, ev := range evs {
		if seen[ev.ID] {
			t.Errorf("%s got event %d (%s of show %d) twice", who, ev.ID, ev.Type, ev.Show.ID)
		}
		seen[ev.ID] = true
	}
}

func metricValue(t *testing.T, reg *prometheus.Registry, name string, label ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	total := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			match := true
			for i := 0; i+1 < len(label); i += 2 {
				found := false
				for _, lp := range m.GetLabel() {
					if lp.GetName() == label[i] && lp.GetValue() == label[i+1] {
						found = true
					}
				}
				match = match && found
			}
			if !match {
				continue
			}
			switch {
			case m.Counter != nil:
				total += m.Counter.GetValue()
			case m.Gauge != nil:
				total += m.Gauge.GetValue()
			}
		}
	}
	return total
}

// TestEventsAcrossNodes: two nodes on one MariaDB database and one Redis.
// A change made through node B reaches node A's subscribers as a remote
// event within 2 s, exactly once, and B's own subscribers in-process
// (never again from the stream): create, go live, stop, take off,
// delete. A change whose transaction hook fails reaches nobody.
func TestEventsAcrossNodes(t *testing.T) {
	a, b := twoNodes(t)
	owner, tok := a.env.CreateUser("Node DJ")
	by := &app.Principal{UserID: owner.ID, Roles: []string{"user"}}
	staff, _ := a.env.CreateUser("Node Staff", onairtest.Role("moderator"))
	staffBy := &app.Principal{UserID: staff.ID, Roles: []string{"user", "moderator"}}
	ctx := context.Background()

	create := func(name string) int64 {
		t.Helper()
		r := b.env.Do("POST", "/v1/shows", tok, map[string]any{"name": name, "description": "d"}).Expect(t, http.StatusCreated)
		return onairtest.ID(r.JSON(t)["show"].(map[string]any))
	}
	within := func(what string, took time.Duration) {
		t.Helper()
		if took > 2*time.Second {
			t.Errorf("%s reached node A after %s, want within 2 s", what, took)
		}
	}

	t.Run("stop through B", func(t *testing.T) {
		id := create("Stopped on B")
		ev, _ := a.await(t, id, shows.EventCreated, time.Now())
		if !ev.Remote || ev.ID == 0 || ev.Show.Name != "Stopped on B" || ev.By == nil || ev.By.UserID != owner.ID {
			t.Fatalf("created on A: %+v", ev)
		}
		if ev.Show.StreamKey != "" || ev.Show.User == nil || ev.Show.User.PasswordHash != "" || ev.Show.User.Name != "Node DJ" {
			t.Fatalf("remote snapshot: stream key %q, user %+v", ev.Show.StreamKey, ev.Show.User)
		}
		if _, err := b.svc.GoLive(ctx, id, shows.Media{}); err != nil {
			t.Fatal(err)
		}
		if ev, _ := a.await(t, id, shows.EventLive, time.Now()); !ev.Show.Live || ev.By != nil {
			t.Fatalf("live on A: %+v", ev)
		}
		sent := time.Now()
		b.env.Do("POST", fmt.Sprintf("/v1/shows/%d/stop", id), tok, nil).Expect(t, http.StatusOK)
		ev, took := a.await(t, id, shows.EventStopped, sent)
		within("stop", took)
		if !ev.Remote || !ev.Show.Complete || ev.Show.Live {
			t.Fatalf("stopped on A: %+v", ev)
		}
	})

	t.Run("take off through B", func(t *testing.T) {
		id := create("Taken off on B")
		if _, err := b.svc.GoLive(ctx, id, shows.Media{}); err != nil {
			t.Fatal(err)
		}
		a.await(t, id, shows.EventLive, time.Now())
		sent := time.Now()
		if _, err := b.svc.SetOff(ctx, id, true, staffBy); err != nil {
			t.Fatal(err)
		}
		_, took := a.await(t, id, shows.EventStopped, sent)
		within("take off (stopped)", took)
		ev, took := a.await(t, id, shows.EventOff, sent)
		within("take off", took)
		if !ev.Remote || !ev.Show.Off || ev.By.UserID != staff.ID {
			t.Fatalf("off on A: %+v", ev)
		}
	})

	t.Run("delete through B", func(t *testing.T) {
		id := create("Deleted on B")
		if _, err := b.svc.GoLive(ctx, id, shows.Media{}); err != nil {
			t.Fatal(err)
		}
		a.await(t, id, shows.EventLive, time.Now())
		sent := time.Now()
		b.env.Do("DELETE", fmt.Sprintf("/v1/shows/%d", id), tok, nil).Expect(t, http.StatusOK)
		_, took := a.await(t, id, shows.EventStopped, sent)
		within("delete (stopped)", took)
		ev, took := a.await(t, id, shows.EventDeleted, sent)
		within("delete", took)
		if !ev.Remote || ev.Show.ID != id {
			t.Fatalf("deleted on A: %+v", ev)
		}
	})

	t.Run("a failing hook emits nothing", func(t *testing.T) {
		id := create("Refused on B")
		if _, err := b.svc.GoLive(ctx, id, shows.Media{}); err != nil {
			t.Fatal(err)
		}
		a.await(t, id, shows.EventLive, time.Now())
		b.svc.SubscribeTx(func(_ context.Context, _ bun.IDB, ev shows.Event) error {
			if ev.Show.ID == id && ev.Type == shows.EventStopped {
				return app.Conflict("not now")
			}
			return nil
		})
		if _, err := b.svc.Stop(ctx, id, by); err == nil {
			t.Fatal("stop with a failing hook succeeded")
		}
		// A later change of the show reaches A; the refused stop never
		// does.
		if err := b.svc.SetThumbnails(ctx, id, ptr("/img.jpg"), nil); err != nil {
			t.Fatal(err)
		}
		a.await(t, id, shows.EventUpdated, time.Now())
		for _, n := range []*node{a, b} {
			for _, ev := range n.rec.ofShow(id) {
				if ev.Type == shows.EventStopped {
					t.Fatalf("a rolled-back stop was delivered: %v", types(n.rec.ofShow(id)))
				}
			}
		}
	})

	// Every event B made: once on B, in-process, and once on A, remote;
	// A got them in commit order.
	var last int64
	for _, ev := range a.rec.all() {
		if !ev.Remote {
			t.Errorf("A made no change but got a local event: %s#%d", ev.Type, ev.ID)
		}
		if ev.ID <= last {
			t.Errorf("A got event %d after %d", ev.ID, last)
		}
		last = ev.ID
	}
	for _, ev := range b.rec.all() {
		if ev.Remote {
			t.Errorf("B got its own event %s#%d back from the stream", ev.Type, ev.ID)
		}
	}
	onceEach(t, "A", a.rec.all())
	onceEach(t, "B", b.rec.all())
	if got, want := len(a.rec.all()), len(b.rec.all()); got != want {
		t.Errorf("A got %d events, B made %d:\nA %v\nB %v", got, want, types(a.rec.all()), types(b.rec.all()))
	}
	if n := metricValue(t, a.env.Core.Metrics, "onair_events_received_total"); int(n) != len(a.rec.all()) {
		t.Errorf("onair_events_received_total on A = %v, want %d", n, len(a.rec.all()))
	}
	if n := metricValue(t, b.env.Core.Metrics, "onair_events_relayed_total", "path", "commit"); n < 1 {
		t.Errorf("onair_events_relayed_total{path=commit} on B = %v", n)
	}
}

// TestOutboxSweep: a row left unrelayed (its node died between the commit
// and the stream) is relayed by the sweep of a running node and delivered
// once to every node, and marked relayed; the same event added to the
// stream again is dropped by every node.
func TestOutboxSweep(t *testing.T) {
	a, b := twoNodes(t)
	_, tok := a.env.CreateUser("Swept DJ")
	r := a.env.Do("POST", "/v1/shows", tok, map[string]any{"name": "Swept", "description": "d"}).Expect(t, http.StatusCreated)
	id := onairtest.ID(r.JSON(t)["show"].(map[string]any))
	b.await(t, id, shows.EventCreated, time.Now())
	ctx := context.Background()

	// What a node that crashed right after its commit leaves behind.
	sh, err := a.svc.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	sh.Name = "Swept, from a crashed node"
	payload, err := json.Marshal(sh)
	if err != nil {
		t.Fatal(err)
	}
	row := &outbox.Row{Topic: shows.TopicShow, Type: shows.EventUpdated, Subject: id, Payload: string(payload),
		CreatedAt: app.Now().Add(-10 * time.Second)}
	if _, err := a.svc.DB().NewInsert().Model(row).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	for name, n := range map[string]*node{"A": a, "B": b} {
		ev, _ := n.await(t, id, shows.EventUpdated, time.Now())
		if !ev.Remote || ev.ID != row.ID || ev.Show.Name != "Swept, from a crashed node" {
			t.Fatalf("%s got %+v, want the swept row %d", name, ev, row.ID)
		}
	}
	testload.Poll(t, "the swept row marked relayed", func() error {
		var got outbox.Row
		if err := a.svc.DB().NewSelect().Model(&got).Where("id = ?", row.ID).Scan(ctx); err != nil {
			return err
		}
		if got.RelayedAt == nil {
			return fmt.Errorf("relayed_at is NULL")
		}
		return nil
	})
	if n := metricValue(t, a.env.Core.Metrics, "onair_events_relayed_total", "path", "sweep") +
		metricValue(t, b.env.Core.Metrics, "onair_events_relayed_total", "path", "sweep"); n != 1 {
		t.Errorf("onair_events_relayed_total{path=sweep} on A and B = %v, want 1", n)
	}

	// The stream gets the event again (a relay that died before marking
	// its rows): nobody delivers it twice. A later change shows the
	// stream was read past it.
	rdb := a.env.Core.Redis
	stream := a.env.Core.Config.RedisPrefix + shows.EventsStream
	msgs, err := rdb.XRevRangeN(ctx, stream, "+", "-", 10).Result()
	if err != nil {
		t.Fatal(err)
	}
	again := 0
	for _, m := range msgs {
		if m.Values["id"] == fmt.Sprint(row.ID) {
			if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: stream, Values: m.Values}).Err(); err != nil {
				t.Fatal(err)
			}
			again++
		}
	}
	if again != 1 {
		t.Fatalf("the stream holds the swept event %d times, want 1", again)
	}
	b.env.Do("PUT", fmt.Sprintf("/v1/shows/%d", id), tok, map[string]any{"description": "later"}).Expect(t, http.StatusOK)
	for name, n := range map[string]*node{"A": a, "B": b} {
		testload.Poll(t, name+" got the later change", func() error {
			for _, ev := range n.rec.ofShow(id) {
				if ev.Type == shows.EventUpdated && ev.Show.Description == "later" {
					return nil
				}
			}
			return fmt.Errorf("not yet")
		})
		onceEach(t, name, n.rec.all())
	}
}

func ptr[T any](v T) *T { return &v }

// TestOutboxSweepSQLite: one node on SQLite with Redis. Its own events are
// delivered once, in-process, never again from the stream; a row left
// unrelayed is swept (no row locks on SQLite) and delivered as remote.
func TestOutboxSweepSQLite(t *testing.T) {
	onairtest.RequireRedis(t)
	env := onairtest.New(t, onairtest.Options{Redis: true, Configure: quickSweep})
	dropStream(t, env)
	n := &node{env: env, svc: shows.From(env.Core), rec: &recorder{}}
	n.svc.Subscribe(n.rec.add)
	_, tok := env.CreateUser("Lone DJ")
	r := env.Do("POST", "/v1/shows", tok, map[string]any{"name": "Lone", "description": "d"}).Expect(t, http.StatusCreated)
	id := onairtest.ID(r.JSON(t)["show"].(map[string]any))
	ctx := context.Background()
	sh, err := n.svc.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := json.Marshal(sh)
	if err != nil {
		t.Fatal(err)
	}
	row := &outbox.Row{Topic: shows.TopicShow, Type: shows.EventUpdated, Subject: id, Payload: string(payload),
		CreatedAt: app.Now().Add(-10 * time.Second)}
	if _, err := n.svc.DB().NewInsert().Model(row).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	ev, _ := n.await(t, id, shows.EventUpdated, time.Now())
	if !ev.Remote || ev.ID != row.ID {
		t.Fatalf("swept event %+v, want remote #%d", ev, row.ID)
	}
	// The stream is read past the node's own "created": it came once.
	evs := n.rec.ofShow(id)
	if len(evs) != 2 || evs[0].Type != shows.EventCreated || evs[0].Remote {
		t.Fatalf("events %v, want created (local) then the swept update", types(evs))
	}
	if got := metricValue(t, env.Core.Metrics, "onair_events_relayed_total", "path", "sweep"); got != 1 {
		t.Errorf("onair_events_relayed_total{path=sweep} = %v, want 1", got)
	}
}

// TestEventsStreamCapped: the stream keeps about ONAIR_EVENTS_STREAM_MAXLEN
// entries (XADD MAXLEN ~ trims whole blocks of up to 100 entries), however
// many events pass.
func TestEventsStreamCapped(t *testing.T) {
	onairtest.RequireRedis(t)
	const maxLen, events = 50, 400
	env := onairtest.New(t, onairtest.Options{Redis: true, Configure: func(c *app.Config) { c.Set(outbox.SettingStreamLen, maxLen) }})
	dropStream(t, env)
	svc := shows.From(env.Core)
	rec := &recorder{}
	svc.Subscribe(rec.add)
	_, tok := env.CreateUser("Busy DJ")
	r := env.Do("POST", "/v1/shows", tok, map[string]any{"name": "Busy", "description": "d"}).Expect(t, http.StatusCreated)
	id := onairtest.ID(r.JSON(t)["show"].(map[string]any))
	ctx := context.Background()
	for i := range events {
		if _, err := svc.SetFeatured(ctx, id, i%2 == 0, nil); err != nil {
			t.Fatal(err)
		}
	}
	rdb, key := env.Core.Redis, env.Core.Config.RedisPrefix+shows.EventsStream
	testload.Poll(t, "every event relayed", func() error {
		if n := metricValue(t, env.Core.Metrics, "onair_events_relayed_total"); n < events+1 {
			return fmt.Errorf("%v relayed", n)
		}
		return nil
	})
	n, err := rdb.XLen(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	if n < maxLen || n > maxLen+100 {
		t.Fatalf("the stream holds %d entries after %d events, want about %d (at most one block of 100 more)", n, events+1, maxLen)
	}
	onceEach(t, "the node", rec.all())
	if got := len(rec.ofShow(id)); got != events+1 {
		t.Fatalf("%d events delivered, want %d", got, events+1)
	}
}

// TestLegacyStreamEntry: an entry a node of the release before the shared
// outbox added to the stream (no topic; the show under "show") is still
// delivered as a remote show event, during a rolling upgrade.
func TestLegacyStreamEntry(t *testing.T) {
	onairtest.RequireRedis(t)
	env := onairtest.New(t, onairtest.Options{Redis: true, Configure: quickSweep})
	dropStream(t, env)
	n := &node{env: env, svc: shows.From(env.Core), rec: &recorder{}}
	n.svc.Subscribe(n.rec.add)
	_, tok := env.CreateUser("Legacy DJ")
	id := onairtest.CreateShow(t, env, tok, map[string]any{"name": "Legacy", "description": "d"}).ID
	ctx := context.Background()
	sh, err := n.svc.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	sh.Name = "Legacy, from an older node"
	payload, err := json.Marshal(sh)
	if err != nil {
		t.Fatal(err)
	}
	const eventID = int64(1) << 40
	err = env.Core.Redis.XAdd(ctx, &redis.XAddArgs{Stream: env.Core.Config.RedisPrefix + shows.EventsStream,
		Values: []any{"id", eventID, "type", shows.EventUpdated, "show", string(payload), "actor", "", "from", "older"}}).Err()
	if err != nil {
		t.Fatal(err)
	}
	ev, _ := n.await(t, id, shows.EventUpdated, time.Now())
	if !ev.Remote || ev.ID != eventID || ev.Show.Name != "Legacy, from an older node" || ev.By != nil {
		t.Fatalf("legacy entry delivered as %+v", ev)
	}
}

// A show event this release adds to the stream keeps its payload under
// "show", the key the release before reads, so a node of it still gets
// show changes during a rolling upgrade.
func TestStreamEntryReadableByOlderNodes(t *testing.T) {
	onairtest.RequireRedis(t)
	env := onairtest.New(t, onairtest.Options{Redis: true})
	dropStream(t, env)
	_, tok := env.CreateUser("Upgrade DJ")
	id := onairtest.CreateShow(t, env, tok, map[string]any{"name": "Rolling", "description": "d"}).ID
	ctx := context.Background()
	stream := env.Core.Config.RedisPrefix + shows.EventsStream
	var entry map[string]any
	testload.Poll(t, "the show's event on the stream", func() error {
		msgs, err := env.Core.Redis.XRange(ctx, stream, "-", "+").Result()
		if err != nil {
			return err
		}
		for _, m := range msgs {
			if m.Values["type"] == shows.EventCreated {
				entry = m.Values
				return nil
			}
		}
		return fmt.Errorf("%d entries, none created", len(msgs))
	})
	raw, _ := entry["show"].(string)
	var sh shows.Show
	if err := json.Unmarshal([]byte(raw), &sh); err != nil || sh.ID != id || sh.Name != "Rolling" {
		t.Fatalf("entry %v: show %+v (%v), want the created show under \"show\"", entry, sh, err)
	}
	if _, ok := entry["payload"]; ok {
		t.Errorf("entry %v carries the payload twice", entry)
	}
}
