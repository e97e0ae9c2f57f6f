package app_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/redis/go-redis/v9"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/store"
	"github.com/onair/onair/internal/testload"
)

func TestHealthAndReadiness(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		t.Parallel()
		env := onairtest.New(t, onairtest.Options{Backend: backend})
		tests := []struct {
			name, path string
			status     int
			body       string
		}{
			{"healthz", "/healthz", 200, `{"status":"ok"}`},
			{"readyz", "/readyz", 200, `"status":"ok"`},
			{"readyz names its checks", "/readyz", 200, `"checks":{"database":"ok","store":"ok"}`},
			// Outside /v1 an unknown path is the public pages' 404 (HTML).
			{"unknown page is a 404", "/no-such-page/at/all", 404, ""},
			{"unknown API route is a JSON 401 before anything", "/v1/no-such-route", 401, `"code":"unauthorized"`},
			{"another method is a JSON 405", "POST /healthz", 405, `"code":"method_not_allowed"`},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				method, path, ok := strings.Cut(tt.path, " ")
				if !ok {
					method, path = "GET", tt.path
				}
				r := env.Do(method, path, "", nil).Expect(t, tt.status)
				if !strings.Contains(string(r.Body), tt.body) {
					t.Fatalf("body %s, want %s", r.Body, tt.body)
				}
			})
		}
		t.Run("readyz is 503 once the database is gone", func(t *testing.T) {
			env.Core.DB.Close()
			r := env.Do("GET", "/readyz", "", nil).Expect(t, http.StatusServiceUnavailable)
			checks := readyChecksOf(t, r)
			if checks["database"] == "ok" || checks["store"] != "ok" {
				t.Fatalf("checks %v: the database should be the one named", checks)
			}
			env.Do("GET", "/healthz", "", nil).Expect(t, http.StatusOK)
		})
	})
}

func TestRequestID(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{})
	r := env.Do("GET", "/healthz", "", nil)
	id := r.Header.Get("X-Request-Id")
	if id == "" {
		t.Fatal("no X-Request-Id")
	}
	if other := env.Do("GET", "/healthz", "", nil).Header.Get("X-Request-Id"); other == id {
		t.Fatal("two requests share an id")
	}
	r = env.DoWith("GET", "/v1/users", "", nil, http.Header{"X-Request-Id": {"from-the-proxy-42"}})
	if got := r.Header.Get("X-Request-Id"); got != "from-the-proxy-42" {
		t.Fatalf("incoming request id not kept: %q", got)
	}
	if !strings.Contains(env.Logs(), "request_id=from-the-proxy-42") {
		t.Fatal("the access log does not carry the request id")
	}
}

func TestPanicRecovery(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{Mount: func(a *fiber.App) {
		a.Get("/test/panic", func(c *fiber.Ctx) error { panic("boom") })
		a.Get("/test/fail", func(c *fiber.Ctx) error { return fmt.Errorf("database exploded: secret detail") })
	}})
	for _, path := range []string{"/test/panic", "/test/fail"} {
		t.Run(path, func(t *testing.T) {
			r := env.Do("GET", path, "", nil).Expect(t, http.StatusInternalServerError)
			if r.ErrorCode(t) != "internal_error" || strings.Contains(string(r.Body), "secret") || strings.Contains(string(r.Body), "boom") {
				t.Fatalf("body %s", r.Body)
			}
			if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Fatalf("content type %q", ct)
			}
		})
	}
	env.Do("GET", "/healthz", "", nil).Expect(t, http.StatusOK) // still serving
	if !strings.Contains(env.Logs(), "panic=boom") {
		t.Fatalf("panic not logged:\n%s", env.Logs())
	}
}

// readyChecksOf decodes a /readyz answer and checks its status word.
func readyChecksOf(t *testing.T, r *onairtest.Response) map[string]string {
	t.Helper()
	var body struct {
		Status string            `json:"status"`
		Checks map[string]string `json:"checks"`
	}
	r.Decode(t, &body)
	if want := map[bool]string{true: "ok", false: "unavailable"}[r.Status == 200]; body.Status != want {
		t.Fatalf("readyz %d says %q", r.Status, body.Status)
	}
	return body.Checks
}

func TestReadyzStore(t *testing.T) {
	t.Parallel()
	env := onairtest.New(t, onairtest.Options{})
	root := strings.TrimPrefix(env.Core.Config.StorageURL, "file://")
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	r := env.Do("GET", "/readyz", "", nil).Expect(t, http.StatusServiceUnavailable)
	if checks := readyChecksOf(t, r); checks["store"] == "ok" || checks["database"] != "ok" {
		t.Fatalf("checks %v: the store should be the one named", checks)
	}
}

func TestReadyzRedis(t *testing.T) {
	onairtest.RequireRedis(t)
	t.Parallel()
	env := onairtest.New(t, onairtest.Options{Redis: true})
	r := env.Do("GET", "/readyz", "", nil).Expect(t, http.StatusOK)
	if checks := readyChecksOf(t, r); checks["redis"] != "ok" {
		t.Fatalf("checks %v lack redis", checks)
	}
}

// A Put through the kernel's store shows in /metrics: its latency by
// operation and kind, and a refused one among the failures.
func TestStoreMetrics(t *testing.T) {
	t.Parallel()
	env := onairtest.New(t, onairtest.Options{})
	ctx := context.Background()
	if err := store.PutBytes(ctx, env.Core.Store, "metrics/probe.jpg", []byte("x"), "image/jpeg"); err != nil {
		t.Fatal(err)
	}
	if err := store.PutBytes(ctx, env.Core.Store, "../escape.jpg", []byte("x"), "image/jpeg"); err == nil {
		t.Fatal("an escaping key was stored")
	}
	if _, err := env.Core.Store.Stat(ctx, "metrics/absent.jpg"); !store.IsNotExist(err) {
		t.Fatalf("stat of a missing key: %v", err)
	}
	text := string(env.Do("GET", "/metrics", "", nil).Expect(t, 200).Body)
	for _, want := range []string{
		"# TYPE onair_store_operation_duration_seconds histogram",
		`onair_store_operation_duration_seconds_count{kind="local",op="put"} 2`,
		`onair_store_operation_failures_total{kind="local",op="put"} 1`,
		`onair_store_operation_duration_seconds_count{kind="local",op="stat"} 1`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if strings.Contains(text, `onair_store_operation_failures_total{kind="local",op="stat"}`) {
		t.Error("a missing key counts as a store failure")
	}
}

func TestMetrics(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{})
	u, tok := env.CreateUser("Mia Metrics")
	for range 3 {
		env.Do("GET", fmt.Sprintf("/v1/users/%d", u.ID), tok, nil).Expect(t, 200)
	}
	env.Do("GET", "/v1/users/999999", tok, nil).Expect(t, 404)
	env.Do("GET", "/v1/users/1", "", nil).Expect(t, 401)
	r := env.Do("GET", "/metrics", "", nil).Expect(t, 200)
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Fatalf("content type %q", ct)
	}
	text := string(r.Body)
	for _, want := range []string{
		"# TYPE onair_http_requests_total counter",
		`onair_http_requests_total{method="GET",route="/v1/users/:id",status="200"} 3`,
		`onair_http_requests_total{method="GET",route="/v1/users/:id",status="404"} 1`,
		`onair_http_requests_total{method="GET",route="/v1",status="401"} 1`,
		"# TYPE onair_http_request_duration_seconds histogram",
		`onair_http_request_duration_seconds_bucket{method="GET",route="/v1/users/:id",le="+Inf"} 4`,
		`onair_http_request_duration_seconds_count{method="GET",route="/v1/users/:id"} 4`,
		`onair_http_request_duration_seconds_sum{method="GET",route="/v1/users/:id"} `,
		// The Go runtime and process collectors.
		"# TYPE go_goroutines gauge",
		"# TYPE process_open_fds gauge",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	families := parseMetrics(t, text)
	if strings.Contains(text, "/v1/users/999999") {
		t.Error("raw paths leak into route labels")
	}
	// Every module's gauges are registered through the kernel.
	for _, name := range []string{"onair_live_publishers", "onair_rtmp_connections", "onair_hls_viewers", "onair_chat_connections"} {
		if _, ok := families[name]; !ok {
			t.Errorf("metrics lack the module gauge %s", name)
		}
	}
}

// Fiber lends handlers views of buffers it reuses for the next request; a
// label kept from one would change under the registry. After any mix of
// methods /metrics must keep answering 200 with the labels each request
// had, on every later scrape.
func TestMetricsSurviveEveryMethod(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{})
	_, tok := env.CreateUser("Mo Methods")
	want := map[string]bool{}
	for round := range 3 {
		for _, m := range []string{"HEAD", "POST", "OPTIONS", "PATCH", "DELETE", "PUT", "GET"} {
			env.Do(m, "/v1/users/me", tok, nil)
			env.Do(m, "/healthz", "", nil)
			env.Do(m, fmt.Sprintf("/v1/shows/%d", 1000+round), tok, nil)
			want[m] = true
		}
		r := env.Do("GET", "/metrics", "", nil).Expect(t, 200)
		families := parseMetrics(t, string(r.Body))
		seen := map[string]bool{}
		for _, metric := range families["onair_http_requests_total"].GetMetric() {
			for _, l := range metric.GetLabel() {
				switch l.GetName() {
				case "method":
					seen[l.GetValue()] = true
					if !want[l.GetValue()] && l.GetValue() != "GET" {
						t.Errorf("round %d: method label %q was never sent", round, l.GetValue())
					}
				case "route":
					if v := l.GetValue(); v != "unmatched" && !strings.HasPrefix(v, "/") {
						t.Errorf("round %d: route label %q", round, v)
					}
				}
			}
		}
		for m := range want {
			if !seen[m] {
				t.Errorf("round %d: no series for method %s", round, m)
			}
		}
	}
}

// ONAIR_METRICS_ADDR moves /metrics to a listener of its own.
func TestMetricsOnTheirOwnAddress(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{Configure: func(c *app.Config) { c.MetricsAddr = "127.0.0.1:0" }})
	env.Do("GET", "/healthz", "", nil).Expect(t, 200)
	// The public port no longer serves them (the public pages answer).
	if r := env.Do("GET", "/metrics", "", nil); r.Status == 200 && strings.Contains(string(r.Body), "go_goroutines") {
		t.Fatal("metrics still on the public port")
	}
	res, err := http.Get("http://" + env.Server.MetricsAddr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	// The harness's readiness probe and the request above.
	if res.StatusCode != 200 || !strings.Contains(string(body), `onair_http_requests_total{method="GET",route="/healthz",status="200"} 2`) {
		t.Fatalf("metrics address answered %d:\n%s", res.StatusCode, body)
	}
}

// parseMetrics reads the Prometheus text format with Prometheus's own
// parser: anything it refuses fails the test.
func parseMetrics(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("not Prometheus text: %v\n%s", err, text)
	}
	return families
}

// Cancelling Serve's context is what SIGINT/SIGTERM do (app.Main): the
// server stops accepting connections, the request in flight finishes, then
// Serve returns.
func TestGracefulShutdownFinishesInFlightRequests(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	env := onairtest.New(t, onairtest.Options{Mount: func(a *fiber.App) {
		a.Get("/test/slow", func(c *fiber.Ctx) error {
			close(started)
			<-release
			return c.SendString("finished")
		})
	}})
	type result struct {
		status int
		body   string
		err    error
	}
	got := make(chan result, 1)
	go func() {
		resp, err := http.Get(env.URL + "/test/slow")
		if err != nil {
			got <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		got <- result{resp.StatusCode, string(b), err}
	}()
	<-started
	served := make(chan error, 1)
	go func() { served <- env.Shutdown() }()
	// The shutdown has begun once new connections are refused; Serve must
	// still be waiting for the request it holds.
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	testload.Poll(t, "new connections refused", func() error {
		resp, err := fresh.Get(env.URL + "/healthz")
		if err == nil {
			resp.Body.Close()
			return errors.New("still accepting connections")
		}
		return nil
	})
	select {
	case err := <-served:
		t.Fatalf("serve returned (%v) while a request was in flight", err)
	default:
	}
	close(release)
	r := <-got
	if r.err != nil || r.status != 200 || r.body != "finished" {
		t.Fatalf("in-flight request: %d %q %v", r.status, r.body, r.err)
	}
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("serve returned %v", err)
		}
	case <-time.After(testload.Patience):
		t.Fatalf("serve did not return within %s of the last request", testload.Patience)
	}
}

func rateLimited(limit int) func(*app.Config) {
	return func(c *app.Config) { c.RateLimit = limit }
}

// checkBudget spends a budget of limit requests and checks the headers,
// then the 429.
func checkBudget(t *testing.T, limit int, do func(i int) *onairtest.Response) {
	t.Helper()
	for i := range limit {
		r := do(i).Expect(t, http.StatusOK)
		if got := r.Header.Get("X-RateLimit-Limit"); got != strconv.Itoa(limit) {
			t.Fatalf("request %d: X-RateLimit-Limit %q", i+1, got)
		}
		if got := r.Header.Get("X-RateLimit-Remaining"); got != strconv.Itoa(limit-i-1) {
			t.Fatalf("request %d: X-RateLimit-Remaining %q, want %d", i+1, got, limit-i-1)
		}
		if reset, err := strconv.Atoi(r.Header.Get("X-RateLimit-Reset")); err != nil || reset < 0 || reset > 60 {
			t.Fatalf("request %d: X-RateLimit-Reset %q", i+1, r.Header.Get("X-RateLimit-Reset"))
		}
	}
	r := do(limit).Expect(t, http.StatusTooManyRequests)
	if r.ErrorCode(t) != "rate_limited" {
		t.Fatalf("body %s", r.Body)
	}
	if retry, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || retry < 1 || retry > 60 {
		t.Fatalf("Retry-After %q", r.Header.Get("Retry-After"))
	}
}

func TestRateLimitPerToken(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{Configure: rateLimited(3)})
	_, tok := env.CreateUser("Rita Rate")
	_, other := env.CreateUser("Otto Other")
	checkBudget(t, 3, func(int) *onairtest.Response { return env.Do("GET", "/v1/users/me", tok, nil) })
	// Another token has its own budget.
	env.Do("GET", "/v1/users/me", other, nil).Expect(t, http.StatusOK)
	// Public routes are not limited.
	env.Do("GET", "/healthz", "", nil).Expect(t, http.StatusOK)
}

// Two servers on one Redis share one budget per token: the limit holds for
// the service, not per node.
func TestRateLimitSharedThroughRedis(t *testing.T) {
	onairtest.RequireRedis(t)
	prefix := fmt.Sprintf("onairtest:rl%d:", time.Now().UnixNano())
	a := onairtest.New(t, onairtest.Options{Redis: true, RedisPrefix: prefix, Configure: rateLimited(4)})
	b := onairtest.New(t, onairtest.Options{Redis: true, RedisPrefix: prefix, Configure: rateLimited(4),
		DatabaseURL: a.Core.Config.DatabaseURL})
	_, tok := a.CreateUser("Ray Redis")
	checkBudget(t, 4, func(i int) *onairtest.Response {
		if i%2 == 0 {
			return a.Do("GET", "/v1/users/me", tok, nil)
		}
		return b.Do("GET", "/v1/users/me", tok, nil)
	})
	b.Do("GET", "/v1/users/me", tok, nil).Expect(t, http.StatusTooManyRequests)

	rdb := redis.NewClient(mustParseRedis(t, onairtest.RedisURL(t)))
	defer rdb.Close()
	keys, err := rdb.Keys(context.Background(), prefix+"*").Result()
	if err != nil || len(keys) == 0 {
		t.Fatalf("no limiter keys under %s in Redis (%v)", prefix, err)
	}
	rdb.Del(context.Background(), keys...)
}

func mustParseRedis(t *testing.T, raw string) *redis.Options {
	o, err := redis.ParseURL(raw)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// Two servers on one Redis, hit by one token from many clients at once:
// between them they grant exactly the limit, the rest get 429. A count
// read and written back (Fiber's limiter on Redis storage) granted more.
func TestRateLimitSharedThroughRedisConcurrently(t *testing.T) {
	onairtest.RequireRedis(t)
	const limit, requests = 20, 60
	prefix := fmt.Sprintf("onairtest:rlc%d:", time.Now().UnixNano())
	a := onairtest.New(t, onairtest.Options{Redis: true, RedisPrefix: prefix, Configure: rateLimited(limit)})
	b := onairtest.New(t, onairtest.Options{Redis: true, RedisPrefix: prefix, Configure: rateLimited(limit),
		DatabaseURL: a.Core.Config.DatabaseURL})
	_, tok := a.CreateUser("Connie Current")
	// Both nodes know the token before the burst, so every request of it
	// is counted, none refused for another reason.
	a.Do("GET", "/v1/users/me", tok, nil).Expect(t, http.StatusOK)
	b.Do("GET", "/v1/users/me", tok, nil).Expect(t, http.StatusOK)
	statuses := make(chan int, requests)
	var wg sync.WaitGroup
	for i := range requests {
		env := a
		if i%2 == 1 {
			env = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses <- env.Do("GET", "/v1/users/me", tok, nil).Status
		}()
	}
	wg.Wait()
	close(statuses)
	counts := map[int]int{}
	for s := range statuses {
		counts[s]++
	}
	if counts[http.StatusOK] != limit-2 || counts[http.StatusTooManyRequests] != requests-limit+2 {
		t.Fatalf("statuses %v, want %d × 200 and %d × 429", counts, limit-2, requests-limit+2)
	}
	rdb := redis.NewClient(mustParseRedis(t, onairtest.RedisURL(t)))
	defer rdb.Close()
	if keys, err := rdb.Keys(context.Background(), prefix+"*").Result(); err == nil && len(keys) > 0 {
		rdb.Del(context.Background(), keys...)
	}
}

// A node whose Redis stops answering lets requests through without the
// limit's headers rather than failing them.
func TestRateLimitRedisDown(t *testing.T) {
	onairtest.RequireRedis(t)
	env := onairtest.New(t, onairtest.Options{Redis: true, RedisPrefix: fmt.Sprintf("onairtest:rld%d:", time.Now().UnixNano()), Configure: rateLimited(1)})
	_, tok := env.CreateUser("Dora Down")
	env.Do("GET", "/v1/users/me", tok, nil).Expect(t, http.StatusOK)
	env.Do("GET", "/v1/users/me", tok, nil).Expect(t, http.StatusTooManyRequests)
	env.Core.Redis.Close()
	for range 3 {
		r := env.Do("GET", "/v1/users/me", tok, nil).Expect(t, http.StatusOK)
		if h := r.Header.Get("X-RateLimit-Limit"); h != "" {
			t.Fatalf("X-RateLimit-Limit %q without Redis", h)
		}
	}
}
