package app_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
)

func openProbe(t *testing.T, backend string) *bun.DB {
	t.Helper()
	raw := "sqlite://" + filepath.Join(t.TempDir(), "probe.db")
	if backend == "mysql" {
		raw = onairtest.FreshMySQL(t)
	}
	db, err := app.OpenDB(context.Background(), raw)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec("CREATE TABLE probe (id INTEGER PRIMARY KEY, code VARCHAR(20) NOT NULL UNIQUE, note VARCHAR(20) NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("INSERT INTO probe (id, code, note) VALUES (1, 'a', 'x'), (2, 'b', 'y')"); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestIsDuplicate: the drivers' error codes, not their messages, tell a
// unique-key violation (MySQL 1062; SQLite SQLITE_CONSTRAINT_UNIQUE and
// _PRIMARYKEY) from every other failure, on real databases.
func TestIsDuplicate(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		db := openProbe(t, backend)
		exec := func(q string) error {
			_, err := db.Exec(q)
			if err == nil {
				t.Fatalf("%s: no error", q)
			}
			return err
		}
		for _, tc := range []struct {
			name string
			err  error
			want bool
		}{
			{"unique column", exec("INSERT INTO probe (id, code, note) VALUES (3, 'a', 'z')"), true},
			{"primary key", exec("INSERT INTO probe (id, code, note) VALUES (1, 'c', 'z')"), true},
			{"unique column on update", exec("UPDATE probe SET code = 'a' WHERE id = 2"), true},
			{"wrapped", fmt.Errorf("saving: %w", exec("INSERT INTO probe (id, code, note) VALUES (4, 'b', 'z')")), true},
			{"not null", exec("INSERT INTO probe (id, code, note) VALUES (5, 'e', NULL)"), false},
			{"syntax", exec("INSERT INTO probe VALUES ("), false},
			{"no such table", exec("SELECT * FROM missing"), false},
			{"the message alone", errors.New("Error 1062 (23000): Duplicate entry 'a' for key 'code'; UNIQUE constraint failed: probe.code"), false},
			{"nil", nil, false},
		} {
			if got := app.IsDuplicate(tc.err); got != tc.want {
				t.Errorf("%s: IsDuplicate(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
			}
			if app.IsDeadlock(tc.err) {
				t.Errorf("%s: IsDeadlock(%v) = true", tc.name, tc.err)
			}
		}
	})
}

// TestRunInTxRetry: a transaction that loses a unique key runs again with
// its attempt number and then commits; any other error ends it at once.
func TestRunInTxRetry(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		db := openProbe(t, backend)
		ctx := context.Background()
		var tries []int
		err := app.RunInTxRetry(ctx, db, 5, func(ctx context.Context, tx bun.Tx, attempt int) error {
			tries = append(tries, attempt)
			codes := []string{"a", "b", "fresh"}
			_, err := tx.ExecContext(ctx, "INSERT INTO probe (id, code, note) VALUES (?, ?, 'n')", 10+attempt, codes[attempt])
			return err
		})
		if err != nil || fmt.Sprint(tries) != "[0 1 2]" {
			t.Fatalf("err %v after attempts %v, want success on the third", err, tries)
		}
		var n int
		if err := db.NewRaw("SELECT COUNT(*) FROM probe WHERE code = 'fresh'").Scan(ctx, &n); err != nil || n != 1 {
			t.Fatalf("fresh rows %d (%v), want 1", n, err)
		}

		tries = nil
		err = app.RunInTxRetry(ctx, db, 5, func(ctx context.Context, tx bun.Tx, attempt int) error {
			tries = append(tries, attempt)
			_, err := tx.ExecContext(ctx, "INSERT INTO probe (id, code, note) VALUES (20, 'g', NULL)")
			return err
		})
		if err == nil || len(tries) != 1 {
			t.Fatalf("not-null violation: err %v after %d attempts, want one failed attempt", err, len(tries))
		}

		tries = nil
		err = app.RunInTxRetry(ctx, db, 3, func(ctx context.Context, tx bun.Tx, attempt int) error {
			tries = append(tries, attempt)
			_, err := tx.ExecContext(ctx, "INSERT INTO probe (id, code, note) VALUES (30, 'a', 'n')")
			return err
		})
		if !app.IsDuplicate(err) || len(tries) != 3 {
			t.Fatalf("always taken: err %v after %d attempts, want the duplicate after 3", err, len(tries))
		}
	})
}

// TestIsDeadlock provokes a real InnoDB deadlock (two transactions locking
// two rows in opposite orders) and checks that its victim is recognised.
func TestIsDeadlock(t *testing.T) {
	if !slices.Contains(onairtest.Backends(), "mysql") {
		t.Skipf("%s not set: SQLite on one connection cannot deadlock", onairtest.MySQLEnv)
	}
	db := openProbe(t, "mysql")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tx1, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx1.Rollback()
	tx2, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx2.Rollback()
	if _, err := tx1.ExecContext(ctx, "UPDATE probe SET note = 'tx1' WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	if _, err := tx2.ExecContext(ctx, "UPDATE probe SET note = 'tx2' WHERE id = 2"); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var err1, err2 error
	// InnoDB rolls the victim back at once, which frees the survivor.
	wg.Add(2)
	go func() { defer wg.Done(); _, err1 = tx1.ExecContext(ctx, "UPDATE probe SET note = 'tx1' WHERE id = 2") }()
	go func() { defer wg.Done(); _, err2 = tx2.ExecContext(ctx, "UPDATE probe SET note = 'tx2' WHERE id = 1") }()
	wg.Wait()
	if app.IsDeadlock(err1) == app.IsDeadlock(err2) {
		t.Fatalf("want exactly one deadlock victim: %v / %v", err1, err2)
	}
	if app.IsDuplicate(err1) || app.IsDuplicate(err2) {
		t.Fatalf("a deadlock is not a duplicate: %v / %v", err1, err2)
	}
}

// TestOpenDBFreshSQLiteConcurrently: several processes (here goroutines,
// each with its own pool) open one fresh SQLite file at once, as two
// `onair migrate` or two nodes starting together do. Turning a new file
// to WAL takes an exclusive lock, and SQLite answers a connection that
// would deadlock on it with SQLITE_BUSY at once, past busy_timeout; every
// open must still succeed.
func TestOpenDBFreshSQLiteConcurrently(t *testing.T) {
	for round := range 30 {
		url := "sqlite://" + filepath.Join(t.TempDir(), fmt.Sprintf("fresh%d.db", round))
		const opens = 6
		errs := make([]error, opens)
		var wg sync.WaitGroup
		for i := range opens {
			wg.Add(1)
			go func() {
				defer wg.Done()
				db, err := app.OpenDB(context.Background(), url)
				if err == nil {
					var mode string
					err = db.QueryRow("PRAGMA journal_mode").Scan(&mode)
					if err == nil && mode != "wal" {
						err = fmt.Errorf("journal_mode %q, want wal", mode)
					}
					db.Close()
				}
				errs[i] = err
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d, open %d: %v", round, i, err)
			}
		}
	}
}
