package app_test

import (
	"context"
	"database/sql"
	"net/http"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/onair/onair/internal/faulttest"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
)

// expectUnavailable checks that a request answers 503 unavailable with
// Retry-After (docs/api.md) within limit, not a 500 and not a hang.
func expectUnavailable(t *testing.T, env *onairtest.Env, method, path, token string, body any, limit time.Duration) {
	t.Helper()
	began := time.Now()
	r := env.Do(method, path, token, body)
	took := time.Since(began)
	if r.Status != http.StatusServiceUnavailable || r.ErrorCode(t) != "unavailable" || r.Header.Get("Retry-After") != "5" {
		t.Errorf("%s %s: %d %s (Retry-After %q), want 503 unavailable with Retry-After: 5",
			method, path, r.Status, r.Body, r.Header.Get("Retry-After"))
	}
	if took > limit {
		t.Errorf("%s %s took %s, want at most %s", method, path, took, limit)
	}
}

// TestMariaDBAwayAnswers503 shuts the API's MariaDB down cleanly and
// starts it again: meanwhile reads and writes answer 503 unavailable with
// Retry-After at once and /readyz names the database; afterwards the same
// requests succeed without a restart of OnAir.
func TestMariaDBAwayAnswers503(t *testing.T) {
	db := faulttest.StartMariaDB(t)
	env := onairtest.New(t, onairtest.Options{DatabaseURL: db.URL()})
	_, token := env.CreateUser("Away Again")
	show := map[string]any{"name": "Before", "description": "the database is here"}
	env.Do("POST", "/v1/shows", token, show).Expect(t, http.StatusCreated)

	db.Stop()
	t.Cleanup(func() {
		if !db.Running() {
			db.Start()
		}
	})
	expectUnavailable(t, env, "GET", "/v1/users/me", token, nil, 5*time.Second)
	expectUnavailable(t, env, "GET", "/v1/shows", token, nil, 5*time.Second)
	expectUnavailable(t, env, "POST", "/v1/shows", token, show, 5*time.Second)
	r := env.Do("GET", "/readyz", "", nil)
	if r.Status != http.StatusServiceUnavailable || r.JSON(t)["checks"].(map[string]any)["database"] != "unavailable" {
		t.Errorf("/readyz: %d %s, want 503 naming the database", r.Status, r.Body)
	}
	if logs := env.Logs(); strings.Contains(logs, "status=500") {
		t.Errorf("a request answered 500 while the database was away:\n%s", logs)
	}

	db.Start()
	testload.Poll(t, "the API after the database returned", func() error {
		if r := env.Do("GET", "/v1/users/me", token, nil); r.Status != http.StatusOK {
			return &statusError{r.Status, string(r.Body)}
		}
		return nil
	})
	env.Do("POST", "/v1/shows", token, map[string]any{"name": "After", "description": "it is back"}).Expect(t, http.StatusCreated)
	env.Do("GET", "/readyz", "", nil).Expect(t, http.StatusOK)
}

type statusError struct {
	status int
	body   string
}

func (e *statusError) Error() string { return http.StatusText(e.status) + ": " + e.body }

// TestSQLiteLockedAnswers503 holds SQLite's write lock from another
// process's connection (a backup, a sqlite3 shell) past the busy timeout:
// a write answers 503 unavailable with Retry-After once the timeout
// passes, reads go on, and writes succeed again once the lock is let go.
func TestSQLiteLockedAnswers503(t *testing.T) {
	t.Parallel()
	env := onairtest.New(t, onairtest.Options{})
	_, token := env.CreateUser("Locked Out")
	path := strings.TrimPrefix(env.Core.Config.DatabaseURL, "sqlite://")
	other, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	ctx := context.Background()
	conn, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	// The busy timeout is 10 s (app.ParseDatabaseURL); the request
	// deadline, 30 s, is not what ends the wait.
	expectUnavailable(t, env, "POST", "/v1/shows", token, map[string]any{"name": "Locked", "description": "busy"}, 25*time.Second)
	env.Do("GET", "/v1/users/me", token, nil).Expect(t, http.StatusOK)

	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	env.Do("POST", "/v1/shows", token, map[string]any{"name": "Unlocked", "description": "free"}).Expect(t, http.StatusCreated)
}
