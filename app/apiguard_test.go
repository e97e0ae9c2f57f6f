package app_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/redis/go-redis/v9"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
)

// from returns a copy of env whose client connects from the loopback
// address src (127.0.0.2...): another client address on the same machine.
func from(env *onairtest.Env, src string) *onairtest.Env {
	other := *env
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 10 * time.Second}
	other.Client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: dialer.DialContext}}
	return &other
}

const wrongToken = "onair_0000000000000000000000000000000000000000000000000000000000000000"

// authFailures sets ONAIR_AUTH_FAILURES (the test harness lifts it).
func authFailures(n int) func(*app.Config) {
	return func(c *app.Config) { c.AuthFailures = n }
}

// guessTokens sends n wrong tokens and returns the status of each answer.
func guessTokens(t *testing.T, env *onairtest.Env, n int) []*onairtest.Response {
	t.Helper()
	out := make([]*onairtest.Response, n)
	for i := range out {
		out[i] = env.Do("GET", "/v1/users/me", wrongToken, nil)
	}
	return out
}

// checkThrottled: the first `allowed` guesses are 401, every later one a
// 429 rate_limited with Retry-After.
func checkThrottled(t *testing.T, rs []*onairtest.Response, allowed int) {
	t.Helper()
	for i, r := range rs {
		if i < allowed {
			if r.Status != http.StatusUnauthorized {
				t.Fatalf("guess %d: %d, want 401: %s", i+1, r.Status, r.Body)
			}
			continue
		}
		if r.Status != http.StatusTooManyRequests || r.ErrorCode(t) != "rate_limited" {
			t.Fatalf("guess %d: %d %s, want 429 rate_limited", i+1, r.Status, r.Body)
		}
		if s, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || s < 1 || s > 60 {
			t.Fatalf("guess %d: Retry-After %q", i+1, r.Header.Get("Retry-After"))
		}
	}
}

// The "done when": 120 wrong tokens from one address end in 429,
// before any token lookup (a valid token from that address is refused
// too); another address is not affected.
func TestAuthFailuresThrottled(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{Configure: authFailures(20)})
	_, tok := env.CreateUser("Tara Throttle")
	checkThrottled(t, guessTokens(t, env, 120), 20)
	// Refused before the lookup: the valid token does not get through.
	env.Do("GET", "/v1/users/me", tok, nil).Expect(t, http.StatusTooManyRequests)
	// Another address still works, and its failures are its own.
	other := from(env, "127.0.0.2")
	other.Do("GET", "/v1/users/me", tok, nil).Expect(t, http.StatusOK)
	other.Do("GET", "/v1/users/me", wrongToken, nil).Expect(t, http.StatusUnauthorized)
	// Requests outside /v1 are not throttled.
	env.Do("GET", "/healthz", "", nil).Expect(t, http.StatusOK)
	text := string(env.Do("GET", "/metrics", "", nil).Expect(t, 200).Body)
	if v := metricValue(text, "onair_auth_throttled_total"); v != 101 {
		t.Fatalf("onair_auth_throttled_total %v, want 101", v)
	}
}

// Successful requests do not count as failures: a token used far more
// often than the allowance keeps working (its budget is the rate limit).
func TestAuthThrottleIgnoresSuccess(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{Configure: authFailures(3)})
	_, tok := env.CreateUser("Sam Success")
	for range 10 {
		env.Do("GET", "/v1/users/me", tok, nil).Expect(t, http.StatusOK)
		env.Do("GET", "/v1/users/999999", tok, nil).Expect(t, http.StatusNotFound)
	}
	checkThrottled(t, guessTokens(t, env, 5), 3)
}

// With Redis, two nodes share the failures of an address: the allowance
// holds for the service, not per node.
func TestAuthThrottleSharedThroughRedis(t *testing.T) {
	onairtest.RequireRedis(t)
	prefix := fmt.Sprintf("onairtest:af%d:", time.Now().UnixNano())
	a := onairtest.New(t, onairtest.Options{Redis: true, RedisPrefix: prefix, Configure: authFailures(6)})
	b := onairtest.New(t, onairtest.Options{Redis: true, RedisPrefix: prefix, Configure: authFailures(6),
		DatabaseURL: a.Core.Config.DatabaseURL})
	_, tok := a.CreateUser("Rhea Redis")
	var rs []*onairtest.Response
	for i := range 10 {
		node := a
		if i%2 == 1 {
			node = b
		}
		rs = append(rs, node.Do("GET", "/v1/users/me", wrongToken, nil))
	}
	checkThrottled(t, rs, 6)
	b.Do("GET", "/v1/users/me", tok, nil).Expect(t, http.StatusTooManyRequests)
	from(a, "127.0.0.2").Do("GET", "/v1/users/me", tok, nil).Expect(t, http.StatusOK)

	rdb := redis.NewClient(mustParseRedis(t, onairtest.RedisURL(t)))
	defer rdb.Close()
	ttl, err := rdb.TTL(context.Background(), prefix+"authfail:127.0.0.1").Result()
	if err != nil || ttl <= 0 || ttl > time.Minute {
		t.Fatalf("failure window in Redis: ttl %v (%v)", ttl, err)
	}
	rdb.Del(context.Background(), prefix+"authfail:127.0.0.1", prefix+"authfail:127.0.0.2")
}

// c.IP() is the client behind a trusted proxy, and the peer otherwise:
// an X-Forwarded-For from anyone else is ignored.
func TestClientAddressBehindProxy(t *testing.T) {
	mount := func(a *fiber.App) {
		a.Get("/test/ip", func(c *fiber.Ctx) error { return c.SendString(c.IP()) })
	}
	trusted := onairtest.New(t, onairtest.Options{Mount: mount, Configure: func(c *app.Config) {
		_, loopback, _ := net.ParseCIDR("127.0.0.1/32")
		c.TrustedProxies = []*net.IPNet{loopback}
		c.AuthFailures = 2
	}})
	xff := func(v string) http.Header { return http.Header{"X-Forwarded-For": {v}} }
	tests := []struct {
		name   string
		env    *onairtest.Env
		header http.Header
		want   string
	}{
		{"the proxy's client", trusted, xff("203.0.113.7"), "203.0.113.7"},
		{"a spoofed hop left of the proxy's", trusted, xff("198.51.100.1, 203.0.113.7"), "203.0.113.7"},
		{"two headers read as one list", trusted, http.Header{"X-Forwarded-For": {"198.51.100.1", "203.0.113.8"}}, "203.0.113.8"},
		{"no header: the proxy itself", trusted, nil, "127.0.0.1"},
		{"a peer that is not a proxy", from(trusted, "127.0.0.2"), xff("203.0.113.7"), "127.0.0.2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.env.DoWith("GET", "/test/ip", "", nil, tt.header).Expect(t, 200)
			if string(r.Body) != tt.want {
				t.Fatalf("c.IP() = %s, want %s", r.Body, tt.want)
			}
		})
	}
	// The next request on a kept-alive connection starts from the peer
	// again, not from the previous request's client.
	if r := trusted.Do("GET", "/test/ip", "", nil); string(r.Body) != "127.0.0.1" {
		t.Fatalf("a later request on the same connection kept %s", r.Body)
	}
	// The access log and the auth throttle see the client, not the proxy:
	// one client throttled behind the proxy leaves the others alone, and
	// rotating a spoofed left part does not escape the throttle.
	if !strings.Contains(trusted.Logs(), "ip=203.0.113.7") {
		t.Fatal("the access log does not carry the forwarded client address")
	}
	for i := range 4 {
		r := trusted.DoWith("GET", "/v1/users/me", wrongToken, nil, xff(fmt.Sprintf("198.51.100.%d, 192.0.2.1", i)))
		if want := []int{401, 401, 429, 429}[i]; r.Status != want {
			t.Fatalf("guess %d through the proxy: %d, want %d", i+1, r.Status, want)
		}
	}
	trusted.DoWith("GET", "/v1/users/me", wrongToken, nil, xff("192.0.2.2")).Expect(t, http.StatusUnauthorized)
}

// CORS on /v1: a preflight needs no token; answers carry the allowed
// origin and expose the rate-limit, Retry-After and Link headers; the
// pages and the console send no CORS headers.
func TestCORS(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{})
	_, tok := env.CreateUser("Cora Cors")
	origin := http.Header{"Origin": {"https://app.example"}}
	preflight := http.Header{
		"Origin":                         {"https://app.example"},
		"Access-Control-Request-Method":  {"POST"},
		"Access-Control-Request-Headers": {"authorization, content-type"},
	}
	t.Run("preflight without a token", func(t *testing.T) {
		r := env.DoWith("OPTIONS", "/v1/shows", "", nil, preflight).Expect(t, http.StatusNoContent)
		if got := r.Header.Get("Access-Control-Allow-Origin"); got != "*" {
			t.Fatalf("Access-Control-Allow-Origin %q", got)
		}
		allow := strings.ToLower(r.Header.Get("Access-Control-Allow-Headers"))
		for _, h := range []string{"authorization", "content-type"} {
			if !strings.Contains(allow, h) {
				t.Errorf("Access-Control-Allow-Headers %q lacks %s", allow, h)
			}
		}
		for _, m := range []string{"GET", "POST", "PUT", "DELETE"} {
			if !strings.Contains(r.Header.Get("Access-Control-Allow-Methods"), m) {
				t.Errorf("Access-Control-Allow-Methods %q lacks %s", r.Header.Get("Access-Control-Allow-Methods"), m)
			}
		}
		if r.Header.Get("Access-Control-Allow-Credentials") != "" {
			t.Error("credentials allowed")
		}
	})
	t.Run("answers expose the headers", func(t *testing.T) {
		for _, tt := range []struct {
			token  string
			status int
		}{{tok, 200}, {"", 401}} {
			r := env.DoWith("GET", "/v1/users/me", tt.token, nil, origin).Expect(t, tt.status)
			if got := r.Header.Get("Access-Control-Allow-Origin"); got != "*" {
				t.Fatalf("%d: Access-Control-Allow-Origin %q", tt.status, got)
			}
			expose := r.Header.Get("Access-Control-Expose-Headers")
			for _, h := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "Retry-After", "Link"} {
				if !strings.Contains(expose, h) {
					t.Errorf("%d: Access-Control-Expose-Headers %q lacks %s", tt.status, expose, h)
				}
			}
		}
	})
	t.Run("pages and console stay same-origin", func(t *testing.T) {
		for _, path := range []string{"/", "/signin", "/admin/login", "/healthz"} {
			r := env.DoWith("GET", path, "", nil, origin)
			for k := range r.Header {
				if strings.HasPrefix(k, "Access-Control-") {
					t.Errorf("GET %s answers %s", path, k)
				}
			}
			r = env.DoWith("OPTIONS", path, "", nil, preflight)
			if r.Header.Get("Access-Control-Allow-Origin") != "" {
				t.Errorf("a preflight of %s is allowed (%d)", path, r.Status)
			}
		}
	})

	listed := onairtest.New(t, onairtest.Options{Configure: func(c *app.Config) {
		c.CORSOrigins = []string{"https://app.example", "https://*.partner.example"}
	}})
	_, tok2 := listed.CreateUser("Lis Listed")
	for _, tt := range []struct{ origin, want string }{
		{"https://app.example", "https://app.example"},
		{"https://tv.partner.example", "https://tv.partner.example"},
		{"https://evil.example", ""},
		{"http://app.example", ""},
	} {
		t.Run("listed origins/"+tt.origin, func(t *testing.T) {
			h := preflight.Clone()
			h.Set("Origin", tt.origin)
			r := listed.DoWith("OPTIONS", "/v1/users/me", "", nil, h).Expect(t, http.StatusNoContent)
			if got := r.Header.Get("Access-Control-Allow-Origin"); got != tt.want {
				t.Fatalf("preflight: Access-Control-Allow-Origin %q, want %q", got, tt.want)
			}
			r = listed.DoWith("GET", "/v1/users/me", tok2, nil, http.Header{"Origin": {tt.origin}}).Expect(t, http.StatusOK)
			if got := r.Header.Get("Access-Control-Allow-Origin"); got != tt.want {
				t.Fatalf("GET: Access-Control-Allow-Origin %q, want %q", got, tt.want)
			}
		})
	}
}

// The per-token limiter's 429 carries the X-RateLimit-* trio (Remaining
// 0) beside Retry-After, as every successful answer carries the trio.
func TestRateLimitHeadersOn429(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{Configure: rateLimited(2)})
	_, tok := env.CreateUser("Hedda Headers")
	for range 2 {
		r := env.Do("GET", "/v1/users/me", tok, nil).Expect(t, http.StatusOK)
		if r.Header.Get("X-RateLimit-Limit") != "2" || r.Header.Get("X-RateLimit-Remaining") == "" || r.Header.Get("X-RateLimit-Reset") == "" {
			t.Fatalf("success headers %v", r.Header)
		}
	}
	r := env.Do("GET", "/v1/users/me", tok, nil).Expect(t, http.StatusTooManyRequests)
	if r.ErrorCode(t) != "rate_limited" {
		t.Fatalf("body %s", r.Body)
	}
	retry, err := strconv.Atoi(r.Header.Get("Retry-After"))
	if err != nil || retry < 1 || retry > 60 {
		t.Fatalf("Retry-After %q", r.Header.Get("Retry-After"))
	}
	if got := r.Header.Get("X-RateLimit-Limit"); got != "2" {
		t.Errorf("X-RateLimit-Limit %q", got)
	}
	if got := r.Header.Get("X-RateLimit-Remaining"); got != "0" {
		t.Errorf("X-RateLimit-Remaining %q", got)
	}
	if reset, err := strconv.Atoi(r.Header.Get("X-RateLimit-Reset")); err != nil || reset != retry {
		t.Errorf("X-RateLimit-Reset %q, Retry-After %d", r.Header.Get("X-RateLimit-Reset"), retry)
	}
}

// Requests fasthttp refuses before any handler (headers or a request line
// over the read buffer) answer in the API's error shape with a code of
// their own; so do the other statuses Fiber raises by itself.
func TestServerErrorsHaveTheirCodes(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{Mount: func(a *fiber.App) {
		a.Get("/test/status/:code", func(c *fiber.Ctx) error {
			code, _ := strconv.Atoi(c.Params("code"))
			return fiber.NewError(code)
		})
	}})
	big := strings.Repeat("x", app.ReadBufferSize+1024)
	t.Run("431 headers too large", func(t *testing.T) {
		r := env.DoWith("GET", "/healthz", "", nil, http.Header{"X-Big": {big}}).Expect(t, http.StatusRequestHeaderFieldsTooLarge)
		if r.ErrorCode(t) != "headers_too_large" || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
			t.Fatalf("%s %v", r.Body, r.Header)
		}
	})
	t.Run("431 for a request line too long", func(t *testing.T) {
		r := env.Do("GET", "/v1/shows?filter="+big, "", nil).Expect(t, http.StatusRequestHeaderFieldsTooLarge)
		if r.ErrorCode(t) != "headers_too_large" {
			t.Fatalf("%s", r.Body)
		}
	})
	for status, code := range map[int]string{
		405: "method_not_allowed", 408: "request_timeout", 413: "body_too_large",
		414: "uri_too_long", 431: "headers_too_large", 503: "unavailable",
	} {
		t.Run(code, func(t *testing.T) {
			r := env.Do("GET", fmt.Sprintf("/test/status/%d", status), "", nil).Expect(t, status)
			if r.ErrorCode(t) != code {
				t.Fatalf("%s", r.Body)
			}
		})
	}
}
