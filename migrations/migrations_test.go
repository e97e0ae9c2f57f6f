package migrations_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/migrations"
)

// freshURL names a new, empty database of the backend.
func freshURL(t *testing.T, backend string) string {
	t.Helper()
	if backend == "mysql" {
		return onairtest.FreshMySQL(t)
	}
	return "sqlite://" + filepath.Join(t.TempDir(), "m.db")
}

func openDB(t *testing.T, backend string) *bun.DB { return open(t, freshURL(t, backend)) }

// open opens the database with its own pool, as one node would.
func open(t *testing.T, url string) *bun.DB {
	t.Helper()
	db, err := app.OpenDB(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

type widget struct {
	bun.BaseModel `bun:"table:widgets"`
	ID            int64  `bun:"id,pk,autoincrement"`
	Name          string `bun:"name,notnull,type:varchar(50)"`
}

// journal records the order steps ran in.
type journal struct{ ran []string }

func (j *journal) step(name string) func(context.Context, bun.IDB) error {
	return func(context.Context, bun.IDB) error { j.ran = append(j.ran, name); return nil }
}

func appliedIDs(t *testing.T, db *bun.DB) []string {
	var ids []string
	if err := db.NewSelect().Table("onair_migrations").Column("id").Order("id").Scan(context.Background(), &ids); err != nil {
		t.Fatal(err)
	}
	return ids
}

func TestRun(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		t.Parallel()
		ctx := context.Background()

		t.Run("same id in two modules does not collide; order; applied once", func(t *testing.T) {
			db := openDB(t, backend)
			j := &journal{}
			sets := []migrations.Set{
				{Module: "shows", Migrations: []migrations.Migration{{ID: "0002_b", Up: j.step("shows 2")}, {ID: "0001_a", Up: j.step("shows 1")}}},
				{Module: "chat", Migrations: []migrations.Migration{{ID: "0001_a", Up: j.step("chat 1")}}},
			}
			n, err := migrations.Run(ctx, db, sets, nil)
			if err != nil || n != 3 {
				t.Fatalf("applied %d, %v", n, err)
			}
			if want := []string{"shows 1", "shows 2", "chat 1"}; !slices.Equal(j.ran, want) {
				t.Fatalf("ran %v, want %v", j.ran, want)
			}
			if want := []string{"chat:0001_a", "shows:0001_a", "shows:0002_b"}; !slices.Equal(appliedIDs(t, db), want) {
				t.Fatalf("recorded %v", appliedIDs(t, db))
			}
			n, err = migrations.Run(ctx, db, sets, nil)
			if err != nil || n != 0 || len(j.ran) != 3 {
				t.Fatalf("re-run applied %d (%v), steps ran %v", n, err, j.ran)
			}
			// A new step of one module is the only one applied next time.
			sets[1].Migrations = append(sets[1].Migrations, migrations.Migration{ID: "0002_c", Up: j.step("chat 2")})
			if n, err := migrations.Run(ctx, db, sets, nil); err != nil || n != 1 || j.ran[3] != "chat 2" {
				t.Fatalf("applied %d (%v), ran %v", n, err, j.ran)
			}
		})

		t.Run("empty or duplicate id in a module fails", func(t *testing.T) {
			db := openDB(t, backend)
			for _, steps := range [][]migrations.Migration{
				{{ID: "0001_a", Up: (&journal{}).step("")}, {ID: "0001_a", Up: (&journal{}).step("")}},
				{{ID: "", Up: (&journal{}).step("")}},
			} {
				_, err := migrations.Run(ctx, db, []migrations.Set{{Module: "m", Migrations: steps}}, nil)
				if err == nil || !strings.Contains(err.Error(), "module m") {
					t.Fatalf("got %v", err)
				}
			}
		})

		t.Run("a failed step is not recorded and runs again next time", func(t *testing.T) {
			db := openDB(t, backend)
			fail := true
			sets := []migrations.Set{{Module: "m", Migrations: []migrations.Migration{
				{ID: "0001_ok", Up: (&journal{}).step("")},
				{ID: "0002_flaky", Up: func(context.Context, bun.IDB) error {
					if fail {
						return errors.New("disk on fire")
					}
					return nil
				}},
			}}}
			n, err := migrations.Run(ctx, db, sets, nil)
			if err == nil || n != 1 || !strings.Contains(err.Error(), "m:0002_flaky") || !strings.Contains(err.Error(), "disk on fire") {
				t.Fatalf("applied %d, err %v", n, err)
			}
			fail = false
			if n, err := migrations.Run(ctx, db, sets, nil); err != nil || n != 1 {
				t.Fatalf("retry applied %d, %v", n, err)
			}
		})

		t.Run("CreateTables and CreateIndex build a usable schema", func(t *testing.T) {
			db := openDB(t, backend)
			sets := []migrations.Set{{Module: "widgets", Migrations: []migrations.Migration{
				{ID: "0001_tables", Up: migrations.CreateTables((*widget)(nil))},
				{ID: "0002_index", Up: migrations.CreateIndex((*widget)(nil), "widgets_name_idx", "name")},
			}}}
			if _, err := migrations.Run(ctx, db, sets, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := db.NewInsert().Model(&widget{Name: "knob"}).Exec(ctx); err != nil {
				t.Fatal(err)
			}
			var got widget
			if err := db.NewSelect().Model(&got).Where("name = ?", "knob").Scan(ctx); err != nil || got.ID == 0 {
				t.Fatalf("%+v %v", got, err)
			}
		})
	})
}

// counter counts how often each step ran, across goroutines.
type counter struct {
	mu  sync.Mutex
	ran map[string]int
}

func (c *counter) step(name string, then func(context.Context, bun.IDB) error) func(context.Context, bun.IDB) error {
	return func(ctx context.Context, db bun.IDB) error {
		c.mu.Lock()
		c.ran[name]++
		c.mu.Unlock()
		if then == nil {
			return nil
		}
		return then(ctx, db)
	}
}

// Two nodes starting at once on one database (each with its own pool, as
// two processes have): every step runs exactly once, both succeed, and the
// applied counts add up. A step that cannot run twice (ADD COLUMN) would
// fail the second node if the lock did not hold.
func TestConcurrentNodes(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		t.Parallel()
		ctx := context.Background()
		url := freshURL(t, backend)
		c := &counter{ran: map[string]int{}}
		sets := []migrations.Set{{Module: "widgets", Migrations: []migrations.Migration{
			{ID: "0001_tables", Up: c.step("tables", migrations.CreateTables((*widget)(nil)))},
			{ID: "0002_index", Up: c.step("index", migrations.CreateIndex((*widget)(nil), "widgets_name_idx", "name"))},
			{ID: "0003_column", Up: c.step("column", func(ctx context.Context, db bun.IDB) error {
				_, err := db.NewAddColumn().Model((*widget)(nil)).ColumnExpr("colour varchar(20)").Exec(ctx)
				return err
			})},
		}}, {Module: "gadgets", Migrations: []migrations.Migration{
			{ID: "0001_seed", Up: c.step("seed", func(ctx context.Context, db bun.IDB) error {
				_, err := db.NewInsert().Model(&widget{Name: "seeded"}).Exec(ctx)
				return err
			})},
		}}}
		const nodes = 4
		var dbs []*bun.DB
		for range nodes {
			dbs = append(dbs, open(t, url))
		}
		counts := make([]int, nodes)
		errs := make([]error, nodes)
		var wg sync.WaitGroup
		for i, db := range dbs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				counts[i], errs[i] = migrations.Run(ctx, db, sets, nil)
			}()
		}
		wg.Wait()
		total := 0
		for i := range dbs {
			if errs[i] != nil {
				t.Errorf("node %d: %v", i, errs[i])
			}
			total += counts[i]
		}
		if total != 4 {
			t.Errorf("nodes applied %v steps, want 4 in all", counts)
		}
		for _, name := range []string{"tables", "index", "column", "seed"} {
			if c.ran[name] != 1 {
				t.Errorf("step %s ran %d times", name, c.ran[name])
			}
		}
		if n, err := dbs[0].NewSelect().Model((*widget)(nil)).Where("name = ?", "seeded").Count(ctx); err != nil || n != 1 {
			t.Errorf("%d seeded rows (%v)", n, err)
		}
	})
}

// The binary's own migrations, run by two `onair migrate` at once on a
// fresh database: both succeed and apply every step once between them.
func TestConcurrentMigrateCommands(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		t.Parallel()
		dir := t.TempDir()
		settings := map[string]string{"ONAIR_DATA_DIR": dir, "ONAIR_DATABASE_URL": "sqlite://" + filepath.Join(dir, "onair.db")}
		if backend == "mysql" {
			settings["ONAIR_DATABASE_URL"] = onairtest.FreshMySQL(t)
		}
		type result struct {
			code         int
			stdout, logs string
		}
		results := make([]result, 2)
		var wg sync.WaitGroup
		for i := range results {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var out, errb bytes.Buffer
				code := app.Run(context.Background(), []string{"migrate"}, &out, &errb, func(k string) string { return settings[k] })
				results[i] = result{code, out.String(), errb.String()}
			}()
		}
		wg.Wait()
		total := 0
		for i, r := range results {
			var n int
			if _, err := fmt.Sscanf(r.stdout, "%d migrations applied", &n); r.code != 0 || err != nil {
				t.Fatalf("node %d: exit %d, stdout %q, stderr:\n%s", i, r.code, r.stdout, r.logs)
			}
			total += n
		}
		db, err := app.OpenDB(context.Background(), settings["ONAIR_DATABASE_URL"])
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if ids := appliedIDs(t, db); total != len(ids) || len(ids) < 10 {
			t.Fatalf("the two commands applied %d steps; %d are recorded", total, len(ids))
		}
	})
}

// A failed step leaves neither its schema nor its bookkeeping row on
// SQLite, where DDL is transactional. On both databases a failed step of
// data changes leaves no rows behind.
func TestFailedStepLeavesNothing(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		t.Parallel()
		ctx := context.Background()
		db := openDB(t, backend)
		base := []migrations.Migration{{ID: "0001_tables", Up: migrations.CreateTables((*widget)(nil))}}
		if _, err := migrations.Run(ctx, db, []migrations.Set{{Module: "w", Migrations: base}}, nil); err != nil {
			t.Fatal(err)
		}
		failing := append(base, migrations.Migration{ID: "0002_half", Up: func(ctx context.Context, db bun.IDB) error {
			if _, err := db.NewInsert().Model(&widget{Name: "half"}).Exec(ctx); err != nil {
				return err
			}
			if backend == "sqlite" {
				if _, err := db.NewCreateTable().Model((*gadget)(nil)).Exec(ctx); err != nil {
					return err
				}
			}
			return errors.New("power cut")
		}})
		n, err := migrations.Run(ctx, db, []migrations.Set{{Module: "w", Migrations: failing}}, nil)
		if n != 0 || err == nil || !strings.Contains(err.Error(), "w:0002_half: power cut") {
			t.Fatalf("applied %d, err %v", n, err)
		}
		if ids := appliedIDs(t, db); !slices.Equal(ids, []string{"w:0001_tables"}) {
			t.Errorf("recorded %v", ids)
		}
		if n, err := db.NewSelect().Model((*widget)(nil)).Count(ctx); err != nil || n != 0 {
			t.Errorf("%d rows of the failed step stayed (%v)", n, err)
		}
		if backend == "sqlite" {
			var tables int
			if err := db.NewSelect().TableExpr("sqlite_master").ColumnExpr("count(*)").Where("name = ?", "gadgets").Scan(ctx, &tables); err != nil || tables != 0 {
				t.Errorf("the failed step's table stayed (%d, %v)", tables, err)
			}
		}
	})
}

type gadget struct {
	bun.BaseModel `bun:"table:gadgets"`
	ID            int64 `bun:"id,pk,autoincrement"`
}

// A database migrated by an earlier release keeps its bookkeeping table as
// it was created then: applied steps are skipped, new ones applied.
func TestEarlierBookkeepingTable(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		t.Parallel()
		ctx := context.Background()
		db := openDB(t, backend)
		ddl := `CREATE TABLE "onair_migrations" ("id" varchar(191) NOT NULL, "applied_at" TIMESTAMP NOT NULL, PRIMARY KEY ("id"))`
		if backend == "mysql" {
			ddl = "CREATE TABLE `onair_migrations` (`id` varchar(191) NOT NULL, `applied_at` DATETIME NOT NULL, PRIMARY KEY (`id`))"
		}
		if _, err := db.ExecContext(ctx, ddl); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, "INSERT INTO onair_migrations (id, applied_at) VALUES ('shows:0001_a', '2024-05-01 10:00:00'), ('gone:0001_x', '2024-05-01 10:00:00')"); err != nil {
			t.Fatal(err)
		}
		j := &journal{}
		sets := []migrations.Set{{Module: "shows", Migrations: []migrations.Migration{
			{ID: "0001_a", Up: j.step("a")}, {ID: "0002_b", Up: j.step("b")},
		}}}
		n, err := migrations.Run(ctx, db, sets, nil)
		if err != nil || n != 1 || !slices.Equal(j.ran, []string{"b"}) {
			t.Fatalf("applied %d (%v), ran %v", n, err, j.ran)
		}
		if ids := appliedIDs(t, db); !slices.Equal(ids, []string{"gone:0001_x", "shows:0001_a", "shows:0002_b"}) {
			t.Fatalf("recorded %v", ids)
		}
	})
}

// On MySQL a node that finds the migration lock taken waits (and says so)
// until it is released, then applies what is left; one whose context ends
// first gives up with an error naming the lock and applies nothing.
func TestWaitsForTheLock(t *testing.T) {
	if !slices.Contains(onairtest.Backends(), "mysql") {
		t.Skipf("%s not set", onairtest.MySQLEnv)
	}
	t.Parallel()
	ctx := context.Background()
	db := openDB(t, "mysql")
	holder, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	var database string
	if err := holder.QueryRowContext(ctx, "SELECT DATABASE()").Scan(&database); err != nil {
		t.Fatal(err)
	}
	lock := "onair_migrate:" + database
	var got int
	if err := holder.QueryRowContext(ctx, "SELECT GET_LOCK(?, 0)", lock).Scan(&got); err != nil || got != 1 {
		t.Fatalf("take the lock: %d %v", got, err)
	}
	c := &counter{ran: map[string]int{}}
	sets := []migrations.Set{{Module: "m", Migrations: []migrations.Migration{{ID: "0001_a", Up: c.step("a", nil)}}}}
	ran := func() int { c.mu.Lock(); defer c.mu.Unlock(); return c.ran["a"] }

	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if n, err := migrations.Run(short, db, sets, nil); err == nil || n != 0 || !strings.Contains(err.Error(), lock) {
		t.Fatalf("with the lock held elsewhere: applied %d, err %v", n, err)
	}

	logs := &onairtest.LockedBuffer{}
	done := make(chan error, 1)
	go func() {
		_, err := migrations.Run(ctx, db, sets, slog.New(slog.NewTextHandler(logs, nil)))
		done <- err
	}()
	for deadline := time.Now().Add(time.Minute); !strings.Contains(logs.String(), "waiting"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the second node never said it waits; log:\n%s", logs)
		}
	}
	if ran() != 0 {
		t.Fatal("a step ran while the lock was held")
	}
	if _, err := holder.ExecContext(ctx, "SELECT RELEASE_LOCK(?)", lock); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil || ran() != 1 {
			t.Fatalf("after the release: %v, the step ran %d times", err, ran())
		}
	case <-time.After(time.Minute):
		t.Fatal("the waiting node did not go on after the release")
	}
}
