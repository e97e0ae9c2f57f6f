// Package onairtest boots a whole OnAir (every module of the binary) for
// integration tests: a fresh database (SQLite always; MySQL when
// ONAIR_TEST_MYSQL_DSN is set), optional Redis (ONAIR_TEST_REDIS_URL), and
// a real HTTP listener on 127.0.0.1:0.
//
// When one of those variables is set and its server does not answer, tests
// fail; they never skip silently.
package onairtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/gofiber/fiber/v2"
	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/testload"
	_ "github.com/onair/onair/modules"
	"github.com/onair/onair/modules/users"
)

// Environment variables that switch on the suites backed by real servers.
const (
	MySQLEnv = "ONAIR_TEST_MYSQL_DSN" // e.g. mysql://root@127.0.0.1:3306/test
	RedisEnv = "ONAIR_TEST_REDIS_URL" // e.g. redis://127.0.0.1:6379/0
)

// Backends lists the databases the conformance suites run on.
func Backends() []string {
	if os.Getenv(MySQLEnv) != "" {
		return []string{"sqlite", "mysql"}
	}
	return []string{"sqlite"}
}

// EachBackend runs f as a subtest per backend.
func EachBackend(t *testing.T, f func(t *testing.T, backend string)) {
	for _, b := range Backends() {
		t.Run(b, func(t *testing.T) { f(t, b) })
	}
}

// Options tune an Env.
type Options struct {
	Backend string // "sqlite" (default) or "mysql"
	// DatabaseURL reuses an existing database (two nodes of one service).
	DatabaseURL string
	Redis       bool // use ONAIR_TEST_REDIS_URL; fails the test when unset
	// RedisPrefix shares Redis keys between Envs (two nodes); default unique.
	RedisPrefix string
	Configure   func(*app.Config)
	// Mount adds routes to the server before it starts (a panicking
	// handler, a slow one...). Routes under /v1 would sit behind the /v1
	// catch-all; mount test routes elsewhere.
	Mount func(app *fiber.App)
	// SkipOpenAPI turns off the check that every /v1 response of Do
	// validates against /v1/openapi.json. Leave it on: it is what keeps the
	// document true.
	SkipOpenAPI bool
	// QueryHooks see every statement the server makes (app.BootOptions).
	QueryHooks []bun.QueryHook
	// JSONLogs logs as ONAIR_LOG_FORMAT=json does (default: text).
	JSONLogs bool
}

// Env is one running OnAir.
type Env struct {
	T      testing.TB
	Core   *app.Core
	Server *app.Server
	URL    string // http://127.0.0.1:port
	Client *http.Client
	// CheckShow, when set, checks each show CreateShow makes (the write
	// form of POST /v1/shows): the shows suite checks every field.
	CheckShow func(t testing.TB, show Object)
	logs      *LockedBuffer
	// openapi checks /v1 responses against the document (nil: off).
	openapi *openAPIValidator
	stop    func() error
}

// Logs returns what the server has logged so far.
func (e *Env) Logs() string { return e.logs.String() }

// New boots OnAir and stops it when the test ends.
func New(t testing.TB, opts Options) *Env {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	base := "http://" + ln.Addr().String()
	dataDir := t.TempDir()
	cfg, err := app.LoadConfig(flag.NewFlagSet("test", flag.ContinueOnError), nil, func(k string) string {
		switch k {
		case "ONAIR_PUBLIC_URL":
			return base
		case "ONAIR_DATA_DIR":
			return dataDir
		case "ONAIR_HTTP_ADDR":
			return ln.Addr().String()
		case "ONAIR_RTMP_ADDR":
			return "127.0.0.1:0"
		case "ONAIR_RATE_LIMIT", "ONAIR_AUTH_FAILURES", "ONAIR_MAX_CONNS_PER_IP", "ONAIR_MAX_SOCKETS_PER_IP":
			// Every test client is 127.0.0.1: the per-address limits
			// are raised here, and the tests of each limit set it low.
			return "100000"
		}
		return ""
	})
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	switch {
	case opts.DatabaseURL != "":
		cfg.DatabaseURL = opts.DatabaseURL
	case opts.Backend == "mysql":
		cfg.DatabaseURL = FreshMySQL(t)
	default:
		cfg.DatabaseURL = "sqlite://" + filepath.Join(dataDir, "onair.db")
	}
	if opts.Redis {
		cfg.RedisURL = RedisURL(t)
		cfg.RedisPrefix = opts.RedisPrefix
		if cfg.RedisPrefix == "" {
			cfg.RedisPrefix = "onairtest:" + randomHex(6) + ":"
		}
	}
	if opts.Configure != nil {
		opts.Configure(cfg)
	}
	logs := &LockedBuffer{}
	var handler slog.Handler = slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})
	if opts.JSONLogs {
		handler = slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})
	}
	log := slog.New(handler)
	ctx, cancel := context.WithCancel(context.Background())
	core, err := app.Boot(ctx, cfg, app.BootOptions{Log: log, Stderr: logs, QueryHooks: opts.QueryHooks})
	if err != nil {
		cancel()
		ln.Close()
		t.Fatalf("boot: %v", err)
	}
	srv, err := app.NewServer(core)
	if err != nil {
		cancel()
		core.Close()
		t.Fatalf("server: %v", err)
	}
	if opts.Mount != nil {
		opts.Mount(srv.App)
	}
	env := &Env{T: t, Core: core, Server: srv, URL: base, Client: &http.Client{Timeout: testload.Patience}, logs: logs}
	if !opts.SkipOpenAPI {
		if env.openapi, err = newOpenAPIValidator(core); err != nil {
			cancel()
			core.Close()
			t.Fatalf("%v", err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	var once sync.Once
	var stopErr error
	env.stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case stopErr = <-done:
			case <-time.After(testload.Patience):
				stopErr = fmt.Errorf("server did not stop within %s", testload.Patience)
			}
		})
		return stopErr
	}
	// Serve starts the modules' services before it accepts; a test that
	// ends before that would cancel their start. Requests queue in the
	// listener's backlog meanwhile, so the first answer means serving.
	ready := make(chan error, 1)
	go func() {
		resp, err := env.Client.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		ready <- err
	}()
	select {
	case err := <-ready:
		if err != nil {
			cancel()
			core.Close()
			t.Fatalf("server does not answer: %v\n%s", err, logs.String())
		}
	case err := <-done:
		cancel()
		core.Close()
		t.Fatalf("serve: %v\n%s", err, logs.String())
	}
	t.Cleanup(func() {
		// A connection the client dialed but never sent a request on is
		// not idle to the server, and would hold its graceful shutdown
		// for the whole grace period.
		env.Client.CloseIdleConnections()
		if err := env.stop(); err != nil {
			t.Errorf("serve: %v", err)
		}
		core.Close()
		if t.Failed() {
			DumpLog(t, "server", logs.String())
		}
	})
	return env
}

// Shutdown stops the server as SIGTERM does (in-flight requests finish)
// and returns what Serve returned. The test's cleanup closes the database.
func (e *Env) Shutdown() error { return e.stop() }

// FreshMySQL creates an empty database on the server of ONAIR_TEST_MYSQL_DSN,
// drops it when the test ends, and returns its URL.
func FreshMySQL(t testing.TB) string {
	t.Helper()
	raw := os.Getenv(MySQLEnv)
	if raw == "" {
		t.Fatalf("%s is not set; the MySQL suite cannot run", MySQLEnv)
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("%s: %v", MySQLEnv, err)
	}
	_, dsn, err := app.ParseDatabaseURL(raw)
	if err != nil {
		t.Fatalf("%s: %v", MySQLEnv, err)
	}
	admin, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatalf("%s: %v", MySQLEnv, err)
	}
	defer admin.Close()
	name := "onair_t_" + randomHex(6)
	ctx, cancel := context.WithTimeout(context.Background(), testload.Patience)
	defer cancel()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name+" CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"); err != nil {
		t.Fatalf("MySQL at %s does not answer (%s is set, so this fails rather than skips): %v", u.Host, MySQLEnv, err)
	}
	t.Cleanup(func() {
		db, err := sql.Open("mysql", dsn)
		if err != nil {
			return
		}
		defer db.Close()
		db.Exec("DROP DATABASE IF EXISTS " + name)
	})
	u.Path = "/" + name
	return u.String()
}

// RedisURL returns ONAIR_TEST_REDIS_URL or fails the test.
func RedisURL(t testing.TB) string {
	t.Helper()
	v := os.Getenv(RedisEnv)
	if v == "" {
		t.Fatalf("%s is not set; this Redis-backed test cannot run", RedisEnv)
	}
	return v
}

// RequireRedis skips a Redis-only test when ONAIR_TEST_REDIS_URL is unset
// (the README's test command sets it; under CI an unset variable fails the
// test instead).
func RequireRedis(t testing.TB) {
	t.Helper()
	if os.Getenv(RedisEnv) == "" {
		testload.Skip(t, "%s not set", RedisEnv)
	}
}

// UserOption changes a user before it is created.
type UserOption func(*users.NewUser)

// Radio approves the user for radio shows.
func Radio(n *users.NewUser) { n.Radio = true }

// Role makes the user staff.
func Role(role string) UserOption { return func(n *users.NewUser) { n.Role = role } }

// Password sets the user's password.
func Password(p string) UserOption { return func(n *users.NewUser) { n.Password = p } }

// CreateUser makes a user and an API token for it.
func (e *Env) CreateUser(name string, opts ...UserOption) (*users.User, string) {
	e.T.Helper()
	n := users.NewUser{Name: name, Email: strings.ToLower(app.Slugify(name, 60)+"-"+randomHex(3)) + "@example.com"}
	for _, o := range opts {
		o(&n)
	}
	svc := users.NewService(e.Core.DB, e.Core.Config.PublicURL)
	svc.ReserveFrom(e.Core)
	u, err := svc.Create(context.Background(), n)
	if err != nil {
		e.T.Fatalf("create user %q: %v", name, err)
	}
	token, _, err := svc.IssueToken(context.Background(), u.ID, "test")
	if err != nil {
		e.T.Fatalf("token for %q: %v", name, err)
	}
	return u, token
}

// Response is an answered request.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into a generic map (failing the test if it is not
// a JSON object).
func (r *Response) JSON(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("response is not a JSON object (%v): %s", err, r.Body)
	}
	return m
}

// Decode decodes the body into v.
func (r *Response) Decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode response: %v: %s", err, r.Body)
	}
}

// Do sends a request to the server. body may be nil, a string (sent as is
// with contentType), url.Values (form) or anything else (JSON).
func (e *Env) Do(method, path, token string, body any) *Response {
	e.T.Helper()
	return e.DoWith(method, path, token, body, nil)
}

// DoWith is Do with extra request headers.
func (e *Env) DoWith(method, path, token string, body any, header http.Header) *Response {
	e.T.Helper()
	var rd io.Reader
	contentType := ""
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	case url.Values:
		rd = strings.NewReader(b.Encode())
		contentType = "application/x-www-form-urlencoded"
	default:
		enc, err := json.Marshal(b)
		if err != nil {
			e.T.Fatalf("encode body: %v", err)
		}
		rd = bytes.NewReader(enc)
		contentType = "application/json"
	}
	target := path
	if !strings.HasPrefix(path, "http") {
		target = e.URL + path
	}
	req, err := http.NewRequest(method, target, rd)
	if err != nil {
		e.T.Fatalf("request: %v", err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := e.Client.Do(req)
	if err != nil {
		e.T.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		e.T.Fatalf("%s %s: read body: %v", method, path, err)
	}
	if Recorder != nil {
		Recorder(req, resp, data)
	}
	if e.openapi != nil {
		if err := e.openapi.check(req, resp, data); err != nil {
			e.T.Errorf("%v", err)
		}
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: data}
}

// Recorder, when set, sees every request and response of Do (the OpenAPI
// test validates them all against the document).
var Recorder func(req *http.Request, resp *http.Response, body []byte)

// ErrorCode returns error.code of an error body.
func (r *Response) ErrorCode(t testing.TB) string {
	t.Helper()
	var body struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil || body.Error.Code == "" {
		t.Fatalf("not an error body: %s", r.Body)
	}
	return body.Error.Code
}

// Expect fails the test unless the status is want.
func (r *Response) Expect(t testing.TB, want int) *Response {
	t.Helper()
	if r.Status != want {
		t.Fatalf("status %d, want %d: %s", r.Status, want, r.Body)
	}
	return r
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// Module returns the running instance of a module type in env.
func Module[T app.Module](env *Env) (T, bool) { return app.Lookup[T](env.Core) }
