package webhooks_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/webhooks"
)

// received is one request the receiver got.
type received struct {
	Header http.Header
	Body   []byte
	Event  webhooks.Body
	At     time.Time
}

// receiver is a real HTTP server on 127.0.0.1:0 that records every request
// and answers with the statuses of plan, in order (then 200).
type receiver struct {
	t    *testing.T
	URL  string
	mu   sync.Mutex
	got  []received
	plan []int
	// delay, when set, holds each answer that long.
	delay time.Duration
}

func newReceiver(t *testing.T, plan ...int) *receiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &receiver{t: t, URL: "http://" + ln.Addr().String() + "/hook", plan: plan}
	srv := &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return r
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	rec := received{Header: req.Header.Clone(), Body: body, At: time.Now()}
	_ = json.Unmarshal(body, &rec.Event)
	r.mu.Lock()
	r.got = append(r.got, rec)
	status := http.StatusOK
	if len(r.plan) > 0 {
		status, r.plan = r.plan[0], r.plan[1:]
	}
	delay := r.delay
	r.mu.Unlock()
	if delay > 0 {
		time.Sleep(delay)
	}
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"status":%d}`, status)
}

func (r *receiver) all() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

// types lists the event types received, in order.
func (r *receiver) types() []string {
	var out []string
	for _, g := range r.all() {
		out = append(out, g.Event.Type)
	}
	return out
}

// waitFor waits until n requests arrived and returns them.
func (r *receiver) waitFor(n int) []received {
	r.t.Helper()
	testload.Poll(r.t, fmt.Sprintf("%d webhook requests", n), func() error {
		if got := len(r.all()); got < n {
			return fmt.Errorf("%d received: %v", got, r.types())
		}
		return nil
	})
	return r.all()
}

// verify checks a request's signature with the Standard Webhooks library.
func verify(t *testing.T, secret string, g received) {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(g.Body, g.Header); err != nil {
		t.Fatalf("signature of %s does not verify: %v (headers %v)", g.Event.Type, err, g.Header)
	}
}

// newEnv boots OnAir with deliveries to loopback allowed and a fast poll.
func newEnv(t *testing.T, backend string, more ...func(*app.Config)) *onairtest.Env {
	t.Helper()
	return onairtest.New(t, onairtest.Options{Backend: backend, Configure: configure(more...)})
}

func configure(more ...func(*app.Config)) func(*app.Config) {
	return func(c *app.Config) {
		c.Set(webhooks.SettingAllowPrivate, true)
		c.Set(webhooks.SettingPoll, 50*time.Millisecond)
		for _, f := range more {
			f(c)
		}
	}
}

// createWebhook registers url for events and returns its id and secret.
func createWebhook(t *testing.T, env *onairtest.Env, tok, url string, events ...string) (int64, string) {
	t.Helper()
	body := env.Do("POST", "/v1/webhooks", tok, map[string]any{"url": url, "events": events}).Expect(t, 201).JSON(t)
	w := body["webhook"].(map[string]any)
	return onairtest.ID(w), w["secret"].(string)
}

func module(t *testing.T, env *onairtest.Env) *webhooks.Module {
	m, ok := onairtest.Module[*webhooks.Module](env)
	if !ok {
		t.Fatal("webhooks module missing")
	}
	return m
}

// showIDOf is data.show.id of a received event (0 when none).
func showIDOf(t *testing.T, g received) int64 {
	t.Helper()
	var b struct {
		Data struct {
			Show struct {
				ID int64 `json:"id"`
			} `json:"show"`
		} `json:"data"`
	}
	if err := json.Unmarshal(g.Body, &b); err != nil {
		t.Fatal(err)
	}
	return b.Data.Show.ID
}
