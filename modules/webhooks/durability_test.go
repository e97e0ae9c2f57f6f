package webhooks_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	goredis "github.com/redis/go-redis/v9"
	"github.com/uptrace/bun"

	"github.com/onair/onair/app/events"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/chat"
	"github.com/onair/onair/modules/shows"
	"github.com/onair/onair/modules/webhooks"
)

func countDeliveries(t *testing.T, db bun.IDB) int {
	t.Helper()
	n, err := db.NewSelect().Model((*webhooks.Delivery)(nil)).Count(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return int(n)
}

// Deliveries are written in the transaction of the change: a hook that
// runs after the webhooks module's sees them on the transaction, and when
// the change then fails, neither the change nor its deliveries remain and
// nothing is sent.
func TestDeliveriesCommitWithTheChange(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env := newEnv(t, backend)
		rcv := newReceiver(t)
		_, tok := env.CreateUser("Tess Tx")
		_, fanTok := env.CreateUser("Fan Tx")
		_, fan2Tok := env.CreateUser("Fan Two")
		createWebhook(t, env, tok, rcv.URL, "show.created", "chat.message.created")
		db := env.Core.DB
		ok := onairtest.CreateShow(t, env, tok, nil).ID
		rcv.waitFor(1)
		before := countDeliveries(t, db)

		var inTx int
		boom := errors.New("boom after the deliveries were written")
		showsService(t, env).SubscribeTx(func(ctx context.Context, tx bun.IDB, ev shows.Event) error {
			if ev.Show.Name != "Doomed" {
				return nil
			}
			inTx = countDeliveries(t, tx)
			return boom
		})
		env.Do("POST", "/v1/shows", tok, map[string]any{"name": "Doomed", "description": "x"}).Expect(t, 500)
		if inTx != before+1 {
			t.Fatalf("deliveries seen in the change's transaction %d, want %d", inTx, before+1)
		}
		if n := countDeliveries(t, db); n != before {
			t.Fatalf("deliveries after the rollback %d, want %d", n, before)
		}
		if n, _ := db.NewSelect().Model((*shows.Show)(nil)).Where("name = ?", "Doomed").Count(context.Background()); n != 0 {
			t.Fatal("the failed show was kept")
		}

		// The same for a chat message. The webhooks write a message's
		// deliveries in the chat's transaction; this hook looks just
		// before its commit (events.Tx.BeforeCommit), after them, and
		// fails the transaction.
		cm, _ := onairtest.Module[*chat.Module](env)
		cm.Service.SubscribeTx(func(ctx context.Context, tx bun.IDB, ev chat.TxEvent) error {
			if ev.Message.Body != "doomed" {
				return nil
			}
			tx.(*events.Tx).BeforeCommit(func(ctx context.Context) error {
				inTx = countDeliveries(t, tx)
				return boom
			})
			return nil
		})
		env.Do("POST", fmt.Sprintf("/v1/shows/%d/chats", ok), fanTok, map[string]any{"message": "doomed"}).Expect(t, 500)
		if inTx != before+1 || countDeliveries(t, db) != before {
			t.Fatalf("chat: %d in the transaction, %d after, want %d then %d", inTx, countDeliveries(t, db), before+1, before)
		}
		env.Do("POST", fmt.Sprintf("/v1/shows/%d/chats", ok), fan2Tok, map[string]any{"message": "kept"}).Expect(t, 201)
		got := rcv.waitFor(2)
		if len(got) != 2 || got[1].Event.Type != "chat.message.created" || strings.Contains(string(got[1].Body), "doomed") {
			t.Fatalf("received %v", rcv.types())
		}
	})
}

// Deliveries of one show arrive in order: a later event waits while an
// earlier one is being retried. Another show's are not held up.
func TestOrderWithinAShow(t *testing.T) {
	env := newEnv(t, "sqlite")
	rcv := newReceiver(t, 500)
	_, tok := env.CreateUser("Otis Order")
	createWebhook(t, env, tok, rcv.URL, "show.created", "show.updated")
	a := onairtest.CreateShow(t, env, tok, map[string]any{"name": "First"}).ID
	rcv.waitFor(1) // show.created of a, answered 500
	env.Do("PUT", fmt.Sprintf("/v1/shows/%d", a), tok, map[string]any{"name": "First, renamed"}).Expect(t, 200)
	b := onairtest.CreateShow(t, env, tok, map[string]any{"name": "Second"}).ID
	got := rcv.waitFor(4)
	var order []string
	for _, g := range got {
		order = append(order, fmt.Sprintf("%s/%d", g.Event.Type, showIDOf(t, g)))
	}
	want := []string{
		fmt.Sprintf("show.created/%d", a), // 500
		fmt.Sprintf("show.created/%d", b), // not held up by a's retry
		fmt.Sprintf("show.created/%d", a), // the retry
		fmt.Sprintf("show.updated/%d", a), // only after it
	}
	if strings.Join(order, " ") != strings.Join(want, " ") {
		t.Fatalf("order %v, want %v", order, want)
	}
}

// kill -9 while a delivery is in flight, with another queued behind it:
// after the restart both are delivered, the interrupted one again with the
// same webhook-id.
func TestKillNineThenRestartDeliversEverything(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		settings := []string{"ONAIR_WEBHOOK_ALLOW_PRIVATE=true", "ONAIR_WEBHOOK_TIMEOUT=2s", "ONAIR_WEBHOOK_POLL=100ms"}
		if backend == "mysql" {
			settings = append(settings, "ONAIR_DATABASE_URL="+onairtest.FreshMySQL(t))
		}
		p := onairtest.NewProcess(t, settings...)
		p.Start()
		p.Run("users", "create", "--name", "Kay Nine", "--email", "kay@example.com")
		tok := strings.TrimSpace(p.Run("tokens", "create", "--user", "kay@example.com"))
		api := p.Client()

		// The receiver holds the first request until the process died.
		release := make(chan struct{})
		var mu sync.Mutex
		var got []received
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body := make([]byte, 1<<16)
			n, _ := r.Body.Read(body)
			mu.Lock()
			got = append(got, received{Header: r.Header.Clone(), Body: body[:n]})
			first := len(got) == 1
			mu.Unlock()
			if first {
				<-release
			}
			w.WriteHeader(http.StatusNoContent)
		})}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go func() { _ = srv.Serve(ln) }()
		t.Cleanup(func() { _ = srv.Close() })
		seen := func() []received {
			mu.Lock()
			defer mu.Unlock()
			return append([]received(nil), got...)
		}

		api.Do("POST", "/v1/webhooks", tok, map[string]any{"url": "http://" + ln.Addr().String() + "/h", "events": []string{"show.created", "show.updated"}}).Expect(t, 201)
		sh := api.Do("POST", "/v1/shows", tok, map[string]any{"name": "Crashy", "description": "x"}).Expect(t, 201).JSON(t)["show"].(map[string]any)
		testload.Poll(t, "first delivery in flight", func() error {
			if len(seen()) == 0 {
				return errors.New("nothing yet")
			}
			return nil
		})
		api.Do("PUT", fmt.Sprintf("/v1/shows/%v", sh["id"]), tok, map[string]any{"name": "Crashy 2"}).Expect(t, 200)
		p.Kill()
		close(release)

		p.Start()
		testload.Poll(t, "both events after the restart", func() error {
			if n := len(seen()); n < 3 {
				return fmt.Errorf("%d requests", n)
			}
			return nil
		})
		all := seen()
		if all[1].Header.Get("webhook-id") != all[0].Header.Get("webhook-id") || !strings.Contains(string(all[1].Body), `"show.created"`) {
			t.Fatalf("the interrupted show.created was not sent again with its id: %s", all[1].Body)
		}
		if !strings.Contains(string(all[2].Body), `"show.updated"`) || strings.Contains(string(all[2].Body), `"show.created"`) {
			t.Fatalf("third request %s", all[2].Body)
		}
	})
}

// Two nodes on one MariaDB send each delivery exactly once between them,
// never two deliveries of one webhook at once, and both take part; with
// Redis too, where each node also hears the other's show events (Remote),
// which must not enqueue anything twice.
func TestTwoNodesDeliverEachEventOnce(t *testing.T) {
	if os.Getenv("ONAIR_TEST_MYSQL_DSN") == "" {
		testload.Skip(t, "needs ONAIR_TEST_MYSQL_DSN")
	}
	t.Run("database only", func(t *testing.T) { twoNodes(t, false) })
	t.Run("with redis", func(t *testing.T) { twoNodes(t, true) })
}

func twoNodes(t *testing.T, redis bool) {
	dsn := onairtest.FreshMySQL(t)
	prefix := ""
	if redis {
		prefix = fmt.Sprintf("onairtest:webhooks:%d:", time.Now().UnixNano())
		opts, err := goredis.ParseURL(onairtest.RedisURL(t))
		if err != nil {
			t.Fatal(err)
		}
		rdb := goredis.NewClient(opts)
		// Registered before the nodes, so it runs once they have stopped.
		t.Cleanup(func() {
			ctx := context.Background()
			keys, _ := rdb.Keys(ctx, prefix+"*").Result()
			if len(keys) > 0 {
				rdb.Del(ctx, keys...)
			}
			rdb.Close()
		})
	}
	a := onairtest.New(t, onairtest.Options{DatabaseURL: dsn, Configure: configure(), Redis: redis, RedisPrefix: prefix})
	b := onairtest.New(t, onairtest.Options{DatabaseURL: dsn, Configure: configure(), Redis: redis, RedisPrefix: prefix})

	var mu sync.Mutex
	count := map[string]int{}
	inFlight := map[string]int{}
	overlap := 0
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.URL.Path + " " + r.Header.Get("webhook-id")
		mu.Lock()
		count[key]++
		inFlight[r.URL.Path]++
		if inFlight[r.URL.Path] > 1 {
			overlap++
		}
		mu.Unlock()
		time.Sleep(5 * time.Millisecond)
		mu.Lock()
		inFlight[r.URL.Path]--
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	_, tok := a.CreateUser("Nina Nodes")
	var ids []int64
	for i := 0; i < 4; i++ {
		id, _ := createWebhook(t, a, tok, fmt.Sprintf("http://%s/w%d", ln.Addr(), i), "ping", "show.created", "show.updated")
		ids = append(ids, id)
	}
	const rounds = 10
	for i := 0; i < rounds; i++ {
		env := a
		if i%2 == 1 {
			env = b
		}
		for _, id := range ids {
			env.Do("POST", fmt.Sprintf("/v1/webhooks/%d/ping", id), tok, nil).Expect(t, 202)
		}
		sh := onairtest.CreateShow(t, env, tok, map[string]any{"name": fmt.Sprintf("Show %d", i)}).ID
		env.Do("PUT", fmt.Sprintf("/v1/shows/%d", sh), tok, map[string]any{"name": fmt.Sprintf("Show %d again", i)}).Expect(t, 200)
	}
	want := len(ids) * rounds * 3
	testload.Poll(t, "every delivery", func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(count) < want {
			return fmt.Errorf("%d distinct deliveries of %d", len(count), want)
		}
		return nil
	})
	mu.Lock()
	for key, n := range count {
		if n != 1 {
			t.Errorf("%s delivered %d times", key, n)
		}
	}
	if overlap > 0 {
		t.Errorf("%d times two deliveries of one webhook were in flight at once", overlap)
	}
	mu.Unlock()
	// Each node counts an attempt once its answer is in: soon after the
	// receiver saw it.
	testload.Poll(t, "both nodes counted their attempts", func() error {
		if sa, sb := sent(t, a.Core.Metrics), sent(t, b.Core.Metrics); sa == 0 || sb == 0 || sa+sb != float64(want) {
			return fmt.Errorf("node a sent %v, node b %v, want both > 0 and %d in all", sa, sb, want)
		}
		return nil
	})
}

// sent reads onair_webhook_deliveries_total{result="success"} of a node.
func sent(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "onair_webhook_deliveries_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == "success" {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
