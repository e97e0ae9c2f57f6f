package app_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
)

// partialRequest is the start of a request whose headers never end: the
// connection stays open on the server until its read timeout.
const partialRequest = "GET /healthz HTTP/1.1\r\nHost: onair\r\nX-Slow: "

// holdConns opens n connections to addr that each send a partial request,
// and closes them when the test ends (or when the returned func is called).
func holdConns(t *testing.T, addr string, n int) func() {
	t.Helper()
	var conns []net.Conn
	var once sync.Once
	closeAll := func() {
		once.Do(func() {
			for _, c := range conns {
				c.Close()
			}
		})
	}
	t.Cleanup(closeAll)
	for i := range n {
		c, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		conns = append(conns, c)
		c.Write([]byte(partialRequest))
	}
	return closeAll
}

// openConns is the server's count of open HTTP connections, read from its
// registry in process (asking /metrics would open one more).
func openConns(t *testing.T, env *onairtest.Env) float64 {
	t.Helper()
	mfs, err := env.Core.Metrics.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "onair_http_connections_open" && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatal("no onair_http_connections_open")
	return 0
}

// holdAdmitted holds n connections to env's server once the server has
// admitted every one of them; the function it returns closes them and
// waits until the server has seen every one close. The test client's
// keep-alive connection of the server's readiness check counts against
// the caps until the server sees it close, so it is closed, and gone,
// first: otherwise it could take one of the n places, and give it back at
// any moment.
func holdAdmitted(t *testing.T, env *onairtest.Env, n int) func() {
	t.Helper()
	count := func(want float64) func() error {
		return func() error {
			if v := openConns(t, env); v != want {
				return fmt.Errorf("%v open, want %v", v, want)
			}
			return nil
		}
	}
	env.Client.CloseIdleConnections()
	eventually(t, 30*time.Second, "the client's idle connection closed", count(0))
	closeAll := holdConns(t, hostOf(env), n)
	eventually(t, 30*time.Second, "the held connections admitted", count(float64(n)))
	// Released means gone from the server's count too: a request made
	// while it still counts some of them could be refused.
	return func() {
		closeAll()
		eventually(t, 30*time.Second, "the held connections closed", count(0))
	}
}

// rawGet sends one request on a fresh connection and reads the answer.
func rawGet(addr, path string) (*http.Response, []byte, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, nil, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: onair\r\n\r\n", path); err != nil {
		return nil, nil, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp, body, err
}

// errorCode is error.code of an API error body ("" if it is not one).
func errorCode(body []byte) string {
	var e struct {
		Error struct{ Code string } `json:"error"`
	}
	json.Unmarshal(body, &e)
	return e.Error.Code
}

// eventually polls check until it returns nil or the deadline passes.
func eventually(t *testing.T, within time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still %v after %v", what, err, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func hostOf(env *onairtest.Env) string { return strings.TrimPrefix(env.URL, "http://") }

// The "done when": `onair serve` under a 300-descriptor limit
// meets 500 client sockets and lives; once they close, /healthz answers.
// With the derived cap it sheds the excess with 503 and never runs out of
// descriptors; with a cap set above the limit it does run out, and its
// accept loop retries instead of ending the process.
func TestServeUnderDescriptorLimit(t *testing.T) {
	bin := onairtest.Binary(t)
	tests := []struct {
		name  string
		extra []string
		// while the sockets are held: what the server shows (alive fails
		// the test at once if the process has ended)
		busy func(t *testing.T, addr string, log *onairtest.LockedBuffer, alive func())
		// metrics that must be above zero afterwards
		metric string
	}{
		{
			name: "derived cap sheds the excess",
			busy: func(t *testing.T, addr string, _ *onairtest.LockedBuffer, alive func()) {
				eventually(t, 30*time.Second, "a request over the cap answered 503 server_busy", func() error {
					alive()
					resp, body, err := rawGet(addr, "/healthz")
					if err != nil {
						return err
					}
					if resp.StatusCode != http.StatusServiceUnavailable || errorCode(body) != "server_busy" || resp.Header.Get("Retry-After") == "" {
						return fmt.Errorf("%d %s", resp.StatusCode, body)
					}
					return nil
				})
			},
			metric: `onair_http_connections_refused_total{reason="max_conns"}`,
		},
		{
			name:  "a cap above the limit runs out of descriptors and retries",
			extra: []string{"ONAIR_MAX_CONNS=1000"},
			busy: func(t *testing.T, _ string, log *onairtest.LockedBuffer, alive func()) {
				eventually(t, 30*time.Second, "the accept error logged", func() error {
					alive()
					if !strings.Contains(log.String(), "accepting connections failed; retrying") {
						return fmt.Errorf("no accept error in the log")
					}
					return nil
				})
			},
			metric: `onair_http_accept_errors_total`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := testload.FreeAddr(t)
			cmd := exec.Command("sh", "-c", "ulimit -n 300 && exec \"$0\" serve", bin)
			cmd.Env = append(os.Environ(), "ONAIR_DATA_DIR="+t.TempDir(), "ONAIR_HTTP_ADDR="+addr,
				"ONAIR_PUBLIC_URL=http://"+addr, "ONAIR_RTMP_ADDR=127.0.0.1:0", "ONAIR_MAX_CONNS_PER_IP=10000")
			cmd.Env = append(cmd.Env, tt.extra...)
			var log onairtest.LockedBuffer
			cmd.Stdout, cmd.Stderr = &log, &log
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan struct{})
			var exitErr error
			go func() { exitErr = cmd.Wait(); close(exited) }()
			alive := func() {
				select {
				case <-exited:
					t.Fatalf("the server exited: %v", exitErr)
				default:
				}
			}
			t.Cleanup(func() {
				cmd.Process.Signal(os.Interrupt)
				select {
				case <-exited:
				case <-time.After(30 * time.Second):
					cmd.Process.Kill()
				}
				if t.Failed() {
					t.Logf("server log:\n%s", log.String())
				}
			})
			eventually(t, 60*time.Second, "server ready", func() error {
				resp, _, err := rawGet(addr, "/healthz")
				if err != nil {
					return err
				}
				if resp.StatusCode != 200 {
					return fmt.Errorf("status %d", resp.StatusCode)
				}
				return nil
			})
			if !regexp.MustCompile(`msg="descriptor limit" soft=300 hard=300`).MatchString(log.String()) {
				t.Fatalf("no descriptor limit line with both numbers:\n%s", log.String())
			}

			release := holdConns(t, addr, 500)
			tt.busy(t, addr, &log, alive)
			alive()
			release()
			eventually(t, 60*time.Second, "/healthz answers 200 once the sockets closed", func() error {
				alive()
				resp, _, err := rawGet(addr, "/healthz")
				if err != nil {
					return err
				}
				if resp.StatusCode != 200 {
					return fmt.Errorf("status %d", resp.StatusCode)
				}
				return nil
			})
			_, body, err := rawGet(addr, "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			if v := metricValue(string(body), tt.metric); v <= 0 {
				t.Fatalf("%s is %v after the crowd", tt.metric, v)
			}
		})
	}
}

// metricValue reads one sample of the Prometheus text (-1 when absent).
func metricValue(text, series string) float64 {
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			var v float64
			fmt.Sscan(rest, &v)
			return v
		}
	}
	return -1
}

// `onair serve` raises its soft descriptor limit to the hard one and logs
// both, with the connection cap derived from it.
func TestServeRaisesDescriptorLimit(t *testing.T) {
	addr := testload.FreeAddr(t)
	cmd := exec.Command("sh", "-c", "ulimit -S -n 300 && exec \"$0\" serve", onairtest.Binary(t))
	cmd.Env = append(os.Environ(), "ONAIR_DATA_DIR="+t.TempDir(), "ONAIR_HTTP_ADDR="+addr,
		"ONAIR_PUBLIC_URL=http://"+addr, "ONAIR_RTMP_ADDR=127.0.0.1:0")
	var log onairtest.LockedBuffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("onair serve on SIGINT: %v\n%s", err, log.String())
			}
		case <-time.After(testload.Patience):
			// Go prints every goroutine on SIGQUIT and exits.
			cmd.Process.Signal(syscall.SIGQUIT)
			<-exited
			t.Errorf("onair serve still running %s after SIGINT:\n%s", testload.Patience, log.String())
		}
	}()
	line := regexp.MustCompile(`msg="descriptor limit" soft=(\d+) hard=(\d+)`)
	serving := regexp.MustCompile(`msg="onair serving".* max_conns=(\d+) max_conns_per_ip=256`)
	var m, s []string
	eventually(t, 60*time.Second, "the start-up lines", func() error {
		m, s = line.FindStringSubmatch(log.String()), serving.FindStringSubmatch(log.String())
		if m == nil || s == nil {
			return fmt.Errorf("not logged yet")
		}
		return nil
	})
	if m[1] != m[2] || m[1] == "300" {
		t.Fatalf("soft limit not raised to the hard one: %s", m[0])
	}
	var soft, maxConns int
	fmt.Sscan(m[1], &soft)
	fmt.Sscan(s[1], &maxConns)
	if want := soft - max(128, soft/8); maxConns != want {
		t.Fatalf("max_conns %d, want %d (soft %d minus the reserve)", maxConns, want, soft)
	}
}

// ONAIR_MAX_CONNS_PER_IP: one address gets that many connections; the next
// is answered 429 too_many_connections and closed, and counted; once one
// closes, the address is served again.
func TestConnsPerIP(t *testing.T) {
	const limit = 4
	env := onairtest.New(t, onairtest.Options{Configure: func(c *app.Config) { c.MaxConnsPerIP = limit }})
	addr := hostOf(env)
	release := holdAdmitted(t, env, limit)
	for range 3 {
		resp, body, err := rawGet(addr, "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusTooManyRequests || errorCode(body) != "too_many_connections" {
			t.Fatalf("connection over the cap: %d %s", resp.StatusCode, body)
		}
		if resp.Header.Get("Retry-After") == "" || !resp.Close {
			t.Fatalf("headers %v", resp.Header)
		}
	}
	release()
	eventually(t, 30*time.Second, "served again after the connections closed", func() error {
		resp, _, err := rawGet(addr, "/healthz")
		if err != nil {
			return err
		}
		if resp.StatusCode != 200 {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	})
	body := env.Do("GET", "/metrics", "", nil).Expect(t, 200).Body
	// The three above, and any poll before the server saw the others close.
	if v := metricValue(string(body), `onair_http_connections_refused_total{reason="max_conns_per_ip"}`); v < 3 {
		t.Fatalf("refused per IP: %v, want at least 3", v)
	}
}

// ONAIR_MAX_CONNS: over the cap of the process a connection is answered
// 503 server_busy; the open connections show in /metrics.
func TestMaxConns(t *testing.T) {
	const limit = 5
	env := onairtest.New(t, onairtest.Options{Configure: func(c *app.Config) { c.MaxConns = limit }})
	addr := hostOf(env)
	release := holdAdmitted(t, env, limit)
	resp, body, err := rawGet(addr, "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusServiceUnavailable || errorCode(body) != "server_busy" {
		t.Fatalf("connection over the cap: %d %s", resp.StatusCode, body)
	}
	release()
	eventually(t, 30*time.Second, "served again", func() error {
		resp, _, err := rawGet(addr, "/healthz")
		if err != nil {
			return err
		}
		if resp.StatusCode != 200 {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	})
	text := string(env.Do("GET", "/metrics", "", nil).Expect(t, 200).Body)
	// The one above, and any of the polls that came before the server saw
	// the held connections close.
	if v := metricValue(text, `onair_http_connections_refused_total{reason="max_conns"}`); v < 1 {
		t.Fatalf("refused: %v, want at least 1", v)
	}
	if v := metricValue(text, "onair_http_connections_max"); v != limit {
		t.Fatalf("onair_http_connections_max %v", v)
	}
	if v := metricValue(text, "onair_http_connections_open"); v < 1 || v > limit {
		t.Fatalf("onair_http_connections_open %v", v)
	}
}

// ONAIR_REQUEST_TIMEOUT: a handler's context ends at the deadline, and a
// handler that gives up with the context's error answers 503 timeout.
func TestRequestTimeout(t *testing.T) {
	saw := make(chan error, 1)
	env := onairtest.New(t, onairtest.Options{
		Configure: func(c *app.Config) { c.RequestTimeout = 300 * time.Millisecond },
		Mount: func(a *fiber.App) {
			a.Get("/test/wait", func(c *fiber.Ctx) error {
				ctx := c.UserContext()
				select {
				case <-ctx.Done():
					saw <- ctx.Err()
					return ctx.Err()
				case <-time.After(30 * time.Second):
					saw <- nil
					return c.SendString("never cut")
				}
			})
		},
	})
	start := time.Now()
	r := env.Do("GET", "/test/wait", "", nil).Expect(t, http.StatusServiceUnavailable)
	if err := <-saw; err != context.DeadlineExceeded {
		t.Fatalf("the handler saw %v", err)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Fatalf("took %v", took)
	}
	if r.ErrorCode(t) != "timeout" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("%s %v", r.Body, r.Header)
	}
}
