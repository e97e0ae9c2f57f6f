package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
)

type cliResult struct {
	code           int
	stdout, stderr string
}

// cli runs one onair command line in-process with the given ONAIR_*
// settings, as the binary would.
func cli(env map[string]string, args ...string) cliResult {
	var out, errb bytes.Buffer
	code := app.Run(context.Background(), args, &out, &errb, func(k string) string { return env[k] })
	return cliResult{code, out.String(), errb.String()}
}

// cliSettings points the CLI at a fresh database of the backend.
func cliSettings(t *testing.T, backend string) (map[string]string, string) {
	dir := t.TempDir()
	env := map[string]string{"ONAIR_DATA_DIR": dir, "ONAIR_PUBLIC_URL": "https://onair.example"}
	dbURL := "sqlite://" + filepath.Join(dir, "onair.db")
	if backend == "mysql" {
		dbURL = onairtest.FreshMySQL(t)
		env["ONAIR_DATABASE_URL"] = dbURL
	}
	return env, dbURL
}

var tokenLine = regexp.MustCompile(`^onair_[0-9a-f]{64}\n$`)

func TestCLI(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		t.Parallel()
		settings, dbURL := cliSettings(t, backend)

		t.Run("version", func(t *testing.T) {
			r := cli(settings, "version")
			if r.code != 0 || r.stdout != "onair "+app.Version+"\n" {
				t.Fatalf("%+v", r)
			}
		})
		t.Run("migrate applies, then has nothing left", func(t *testing.T) {
			r := cli(settings, "migrate")
			if r.code != 0 || !regexp.MustCompile(`^[1-9][0-9]* migrations applied\n$`).MatchString(r.stdout) {
				t.Fatalf("%+v", r)
			}
			if r := cli(settings, "migrate"); r.code != 0 || r.stdout != "0 migrations applied\n" {
				t.Fatalf("second run: %+v", r)
			}
		})

		var created struct {
			User map[string]any `json:"user"`
		}
		t.Run("users create prints the user as JSON", func(t *testing.T) {
			r := cli(settings, "users", "create", "--name", "Ann Admin", "--email", "Ann@Example.com",
				"--password", "a long secret", "--dj", "--radio", "--role", "admin")
			if r.code != 0 {
				t.Fatalf("%+v", r)
			}
			dec := json.NewDecoder(strings.NewReader(r.stdout))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&created); err != nil || dec.More() {
				t.Fatalf("stdout is not one {\"user\": ...} object (%v): %s", err, r.stdout)
			}
			u := created.User
			want := map[string]any{"name": "Ann Admin", "email": "ann@example.com", "slug": "ann-admin",
				"dj": true, "producer": false, "radio": true, "url": "https://onair.example/ann-admin"}
			for k, v := range want {
				if u[k] != v {
					t.Errorf("user.%s = %v, want %v", k, u[k], v)
				}
			}
			if _, ok := u["id"].(float64); !ok {
				t.Errorf("no numeric id: %v", u)
			}
			if strings.Contains(r.stdout, "password") || strings.Contains(r.stdout, "secret") {
				t.Error("the password leaks to stdout")
			}
		})
		id := fmt.Sprint(created.User["id"])

		failures := []struct {
			name   string
			args   []string
			code   int
			stderr string
		}{
			{"bad email", []string{"users", "create", "--name", "Bob", "--email", "not-an-email"}, 1, "--email must be a valid email address"},
			{"duplicate email", []string{"users", "create", "--name", "Ann Again", "--email", "ann@example.com"}, 1, "--email is already registered"},
			{"missing name", []string{"users", "create", "--email", "x@example.com"}, 1, "--name is required"},
			{"unknown role", []string{"users", "create", "--name", "Cy", "--email", "cy@example.com", "--role", "owner"}, 1, "--role must be admin or moderator"},
			{"short password", []string{"users", "create", "--name", "Di", "--email", "di@example.com", "--password", "short"}, 1, "--password"},
			{"token for nobody", []string{"tokens", "create", "--user", "nobody@example.com"}, 1, `no user "nobody@example.com"`},
			{"token without --user", []string{"tokens", "create"}, 1, "--user is required"},
			{"unknown command", []string{"users", "explode"}, 2, "unknown command"},
			{"stray argument", []string{"migrate", "now"}, 2, `unexpected argument "now"`},
			{"unknown flag", []string{"users", "create", "--colour", "red"}, 2, "onair users create: flag provided but not defined: -colour"},
			{"unknown flag of tokens create", []string{"tokens", "create", "--user", "1", "--name", "x"}, 2, "onair tokens create: flag provided but not defined: -name"},
			{"flag without its value", []string{"users", "create", "--email"}, 2, "onair users create: flag needs an argument: -email"},
			{"a first word alone", []string{"users"}, 2, "users create"},
		}
		for _, f := range failures {
			t.Run(f.name, func(t *testing.T) {
				r := cli(settings, f.args...)
				if r.code != f.code || r.stdout != "" || !strings.Contains(r.stderr, f.stderr) {
					t.Fatalf("exit %d (want %d), stdout %q, stderr %q (want %q)", r.code, f.code, r.stdout, r.stderr, f.stderr)
				}
			})
		}

		var tokens []string
		for _, user := range []string{"ann@example.com", "ANN@example.com", id} {
			t.Run("tokens create --user "+user, func(t *testing.T) {
				r := cli(settings, "tokens", "create", "--user", user, "--label", "laptop")
				if r.code != 0 || !tokenLine.MatchString(r.stdout) {
					t.Fatalf("stdout must be only the token and a newline: %+v", r)
				}
				tokens = append(tokens, strings.TrimSpace(r.stdout))
			})
		}
		t.Run("the tokens work against /v1/users/me", func(t *testing.T) {
			env := onairtest.New(t, onairtest.Options{DatabaseURL: dbURL})
			for _, tok := range tokens {
				body := env.Do("GET", "/v1/users/me", tok, nil).Expect(t, http.StatusOK).JSON(t)
				if got := fmt.Sprint(body["user"].(map[string]any)["id"]); got != id {
					t.Fatalf("me is %s, want %s", got, id)
				}
			}
		})
	})
}

// Every command reads the same ONAIR_* settings (and flags) as serve, and a
// bad one stops it before it touches anything, naming the setting.
func TestCLISettings(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"env on users create", map[string]string{"ONAIR_RATE_LIMIT": "0"}, []string{"users", "create", "--name", "A", "--email", "a@example.com"}, "ONAIR_RATE_LIMIT"},
		{"env on tokens create", map[string]string{"ONAIR_DATABASE_URL": "postgres://x/y"}, []string{"tokens", "create", "--user", "1"}, "ONAIR_DATABASE_URL"},
		{"env on migrate", map[string]string{"ONAIR_PUBLIC_URL": "ftp://x"}, []string{"migrate"}, "ONAIR_PUBLIC_URL"},
		{"env on serve", map[string]string{"ONAIR_HTTP_ADDR": "nonsense"}, []string{"serve"}, "ONAIR_HTTP_ADDR"},
		{"flag on users create", nil, []string{"users", "create", "--database-url", "postgres://x/y", "--name", "A", "--email", "a@example.com"}, "-database-url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{"ONAIR_DATA_DIR": dir}
			for k, v := range tt.env {
				env[k] = v
			}
			r := cli(env, tt.args...)
			if r.code != 2 || !strings.Contains(r.stderr, tt.want) {
				t.Fatalf("exit %d, stderr %q; want 2 naming %s", r.code, r.stderr, tt.want)
			}
		})
	}
	t.Run("a database that does not answer", func(t *testing.T) {
		r := cli(map[string]string{"ONAIR_DATABASE_URL": "mysql://root@127.0.0.1:1/none"}, "migrate")
		if r.code != 1 || !strings.Contains(r.stderr, "does not answer") {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("help lists every setting", func(t *testing.T) {
		r := cli(nil, "help")
		for _, want := range []string{"ONAIR_HTTP_ADDR", "ONAIR_DATABASE_URL", "ONAIR_REDIS_URL", "users create", "tokens create", "migrate", "version"} {
			if r.code != 0 || !strings.Contains(r.stdout, want) {
				t.Errorf("help (exit %d) lacks %s", r.code, want)
			}
		}
	})
}

// A command's help is that command's own flags, on stdout, exit 0, however
// it is asked for; the settings every command takes are only mentioned.
func TestCLICommandHelp(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args      []string
		want, not []string
	}{
		{[]string{"users", "create", "--help"}, []string{"usage: onair users create", "-email string", "-role string", "-password string", "-dj\n"}, []string{"ONAIR_HTTP_ADDR", "-token", "-label"}},
		{[]string{"users", "create", "-h"}, []string{"usage: onair users create", "-name string"}, []string{"-http-addr string"}},
		{[]string{"help", "users", "create"}, []string{"usage: onair users create", "-name string"}, nil},
		{[]string{"tokens", "create", "--help"}, []string{"usage: onair tokens create", "-user string", "-label string", `(default "cli")`}, []string{"-email string"}},
		{[]string{"users", "create", "--name", "Ann", "-h"}, []string{"-name string"}, []string{`(default "Ann")`}},
		{[]string{"migrate", "-h"}, []string{"usage: onair migrate", "none of its own"}, []string{"-email"}},
		{[]string{"users", "--help"}, []string{"usage: onair users <command>", "users create"}, []string{"tokens create"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := cli(map[string]string{"ONAIR_DATA_DIR": t.TempDir()}, tt.args...)
			if r.code != 0 || r.stderr != "" {
				t.Fatalf("exit %d, stderr %q; want 0 and help on stdout", r.code, r.stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("help lacks %q:\n%s", w, r.stdout)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(r.stdout, n) {
					t.Errorf("help has %q:\n%s", n, r.stdout)
				}
			}
		})
	}
}

// serve, run as the binary runs it: it logs where it listens, prints the
// first-run hint on an empty database, and exits 0 on SIGTERM (a cancelled
// context).
func TestCLIServe(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"ONAIR_DATA_DIR": dir, "ONAIR_HTTP_ADDR": "127.0.0.1:0", "ONAIR_RTMP_ADDR": "127.0.0.1:0"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb onairtest.LockedBuffer
	done := make(chan int, 1)
	go func() { done <- app.Run(ctx, []string{"serve"}, &out, &errb, func(k string) string { return env[k] }) }()
	addr := regexp.MustCompile(`msg="onair serving".* http=(\S+)`)
	var m []string
	testload.Poll(t, "the 'onair serving' line", func() error {
		select {
		case code := <-done:
			t.Fatalf("serve exited with %d:\n%s", code, errb.String())
		default:
		}
		if m = addr.FindStringSubmatch(errb.String()); m == nil {
			return fmt.Errorf("log so far:\n%s", errb.String())
		}
		return nil
	})
	resp, err := http.Get("http://" + m[1] + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", resp, err)
	}
	resp.Body.Close()
	if !strings.Contains(errb.String(), "OnAir has no users yet") || !strings.Contains(errb.String(), "onair tokens create --user") {
		t.Fatalf("no first-run hint:\n%s", errb.String())
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d:\n%s", code, errb.String())
		}
	case <-time.After(testload.Patience):
		t.Fatalf("serve did not stop within %s", testload.Patience)
	}
	if out.String() != "" {
		t.Fatalf("serve wrote to stdout: %q", out.String())
	}
}

// cancelOnWrite cancels as soon as a line containing marker is written.
type cancelOnWrite struct {
	onairtest.LockedBuffer
	marker string
	cancel context.CancelFunc
}

func (w *cancelOnWrite) Write(p []byte) (int, error) {
	n, err := w.LockedBuffer.Write(p)
	if strings.Contains(string(p), w.marker) {
		w.cancel()
	}
	return n, err
}

// A signal that arrives the moment serve says it is serving (before the
// HTTP server's accept loop may have begun) still stops it: the shutdown
// cannot miss a listener that registers after it.
func TestCLIServeStopsRightAfterStart(t *testing.T) {
	for i := range 8 {
		env := map[string]string{"ONAIR_DATA_DIR": t.TempDir(), "ONAIR_HTTP_ADDR": "127.0.0.1:0", "ONAIR_RTMP_ADDR": "127.0.0.1:0"}
		ctx, cancel := context.WithCancel(context.Background())
		errb := &cancelOnWrite{marker: `msg="onair serving"`, cancel: cancel}
		var out onairtest.LockedBuffer
		done := make(chan int, 1)
		go func() { done <- app.Run(ctx, []string{"serve"}, &out, errb, func(k string) string { return env[k] }) }()
		select {
		case code := <-done:
			if code != 0 {
				t.Fatalf("run %d: exit %d:\n%s", i, code, errb.String())
			}
			if !strings.Contains(errb.String(), `msg="shutting down"`) {
				t.Fatalf("run %d: exited without serving:\n%s", i, errb.String())
			}
		case <-time.After(testload.Patience):
			t.Fatalf("run %d: serve did not stop within %s of the signal:\n%s", i, testload.Patience, errb.String())
		}
		cancel()
	}
}
