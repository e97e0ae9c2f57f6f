// Package migrations runs the schema steps every module contributes.
//
// A migration id is "<module>:<id>" in the bookkeeping table
// onair_migrations, so two modules can never collide on an id; inside one
// module ids must be unique and are applied in lexical order (use a
// sortable prefix such as 0001_, or a timestamp). Modules are migrated in
// the order they are given (registration order), so a module's tables may
// refer to those of the modules it imports. Migrations must be written so
// that they run unchanged on MySQL (MariaDB) and SQLite: use Bun's query
// builders, or branch on the dialect.
//
// Each step runs in one transaction with its bookkeeping row, and only one
// process migrates a database at a time:
//
//   - SQLite: a step's transaction writes its bookkeeping row first, which
//     takes the database's write lock (waiting for another process's step
//     to commit). When the row is already there, another process applied
//     the step meanwhile and it is skipped. A failed step leaves neither its
//     schema nor its row.
//   - MySQL: the whole run holds GET_LOCK on one pinned connection, so a
//     second node starting at the same moment waits, then finds every step
//     applied. MySQL commits DDL implicitly, so a step that fails half-way
//     (or a process killed between a step and its row) may leave schema
//     behind without its row, and the step runs again at the next start:
//     steps must be idempotent there (CreateTables and CreateIndex are).
package migrations

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sort"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// Migration is one schema step of a module.
type Migration struct {
	ID string
	Up func(ctx context.Context, db bun.IDB) error
}

// Set is the migrations of one module.
type Set struct {
	Module     string
	Migrations []Migration
}

// record is the bookkeeping row of one applied migration. Its table and
// columns are those of every earlier release, so an existing database
// migrates forward without a manual step.
type record struct {
	bun.BaseModel `bun:"table:onair_migrations"`

	ID        string    `bun:"id,pk,type:varchar(191)"`
	AppliedAt time.Time `bun:"applied_at,notnull"`
}

// step is one migration with its namespaced id.
type step struct {
	id string
	up func(ctx context.Context, db bun.IDB) error
}

// Run applies every migration not yet applied, module by module in the given
// order, and reports how many it applied. It stops at the first step that
// fails; the steps before it stay applied.
func Run(ctx context.Context, db *bun.DB, sets []Set, log *slog.Logger) (int, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	steps, err := plan(sets)
	if err != nil {
		return 0, err
	}
	if db.Dialect().Name() == dialect.MySQL {
		return runLocked(ctx, db, steps, log)
	}
	return runSQLite(ctx, db, steps, log)
}

// plan orders the steps and refuses an empty or duplicate id in a module.
func plan(sets []Set) ([]step, error) {
	var out []step
	for _, set := range sets {
		ms := append([]Migration(nil), set.Migrations...)
		sort.SliceStable(ms, func(i, j int) bool { return ms[i].ID < ms[j].ID })
		seen := map[string]bool{}
		for _, m := range ms {
			if m.ID == "" || seen[m.ID] {
				return nil, fmt.Errorf("migrations: module %s: empty or duplicate id %q", set.Module, m.ID)
			}
			seen[m.ID] = true
			out = append(out, step{id: set.Module + ":" + m.ID, up: m.Up})
		}
	}
	return out, nil
}

// applied reads the ids of the applied steps, creating the bookkeeping
// table on a fresh database.
func applied(ctx context.Context, db bun.IDB) (map[string]bool, error) {
	if _, err := db.NewCreateTable().Model((*record)(nil)).IfNotExists().Exec(ctx); err != nil {
		return nil, fmt.Errorf("migrations: create bookkeeping table: %w", err)
	}
	var ids []string
	if err := db.NewSelect().Model((*record)(nil)).Column("id").Scan(ctx, &ids); err != nil {
		return nil, fmt.Errorf("migrations: read applied: %w", err)
	}
	done := make(map[string]bool, len(ids))
	for _, id := range ids {
		done[id] = true
	}
	return done, nil
}

// errAppliedElsewhere rolls back the transaction of a step that another
// process applied after this one read the bookkeeping table.
var errAppliedElsewhere = errors.New("applied by another process")

// runSQLite applies each pending step in a transaction that first claims
// the step's bookkeeping row: the claim takes SQLite's write lock, so a
// second process on the same file waits for the step to commit and then
// finds the row taken.
func runSQLite(ctx context.Context, db *bun.DB, steps []step, log *slog.Logger) (int, error) {
	done, err := applied(ctx, db)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, s := range steps {
		if done[s.id] {
			continue
		}
		start := time.Now()
		err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			res, err := tx.NewInsert().Model(&record{ID: s.id, AppliedAt: time.Now().UTC()}).Ignore().Exec(ctx)
			if err != nil {
				return fmt.Errorf("record: %w", err)
			}
			if rows, err := res.RowsAffected(); err != nil || rows == 0 {
				return errAppliedElsewhere
			}
			return s.up(ctx, tx)
		})
		if errors.Is(err, errAppliedElsewhere) {
			continue
		}
		if err != nil {
			return n, fmt.Errorf("migrations: %s: %w", s.id, err)
		}
		n++
		log.Info("migration applied", "id", s.id, "took", time.Since(start).Round(time.Millisecond).String())
	}
	return n, nil
}

// lockPoll is how long one GET_LOCK call waits on MySQL before the runner
// checks its context and logs that it is still waiting.
const lockPoll = 5 * time.Second

// runLocked applies the pending steps on one pinned MySQL connection that
// holds the database's migration lock for the whole run. Each step and its
// row share a transaction: a step of data changes is atomic with its row,
// while DDL commits implicitly (see the package comment).
func runLocked(ctx context.Context, db *bun.DB, steps []step, log *slog.Logger) (n int, err error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return 0, fmt.Errorf("migrations: connection: %w", err)
	}
	defer conn.Close()
	name, err := lockName(ctx, conn)
	if err != nil {
		return 0, err
	}
	if err := acquire(ctx, conn, name, log); err != nil {
		return 0, err
	}
	defer func() {
		// Closing the connection would release the lock too; release it
		// explicitly so the pool may reuse the connection.
		var released *int
		rerr := conn.QueryRowContext(context.WithoutCancel(ctx), "SELECT RELEASE_LOCK(?)", name).Scan(&released)
		if rerr != nil && err == nil {
			err = fmt.Errorf("migrations: release lock: %w", rerr)
		}
	}()
	done, err := applied(ctx, conn)
	if err != nil {
		return 0, err
	}
	for _, s := range steps {
		if done[s.id] {
			continue
		}
		start := time.Now()
		err := conn.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			if err := s.up(ctx, tx); err != nil {
				return err
			}
			if _, err := tx.NewInsert().Model(&record{ID: s.id, AppliedAt: time.Now().UTC()}).Exec(ctx); err != nil {
				return fmt.Errorf("record: %w", err)
			}
			return nil
		})
		if err != nil {
			return n, fmt.Errorf("migrations: %s: %w", s.id, err)
		}
		n++
		log.Info("migration applied", "id", s.id, "took", time.Since(start).Round(time.Millisecond).String())
	}
	return n, nil
}

// lockName is the name of the migration lock of the connection's
// database. GET_LOCK names are server-wide, so the database name is part
// of it: two databases on one server (two installs, parallel tests) never
// wait for each other. Names longer than MySQL's 64 characters are hashed.
func lockName(ctx context.Context, conn bun.Conn) (string, error) {
	var database string
	if err := conn.QueryRowContext(ctx, "SELECT DATABASE()").Scan(&database); err != nil {
		return "", fmt.Errorf("migrations: current database: %w", err)
	}
	name := "onair_migrate:" + database
	if len(name) > 64 {
		sum := sha256.Sum256([]byte(database))
		name = "onair_migrate:" + hex.EncodeToString(sum[:20])
	}
	return name, nil
}

// acquire takes the migration lock, waiting until ctx ends while another
// process holds it (and logging once that it waits).
func acquire(ctx context.Context, conn bun.Conn, name string, log *slog.Logger) error {
	since := time.Now()
	for attempt := 0; ; attempt++ {
		wait := lockPoll
		if attempt == 0 {
			wait = 0 // a free lock is taken at once; a held one is logged first
		}
		var got *int
		if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, ?)", name, wait.Seconds()).Scan(&got); err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("migrations: waiting for the lock %s held by another process: %w", name, ctx.Err())
			}
			return fmt.Errorf("migrations: lock %s: %w", name, err)
		}
		switch {
		case got == nil:
			return fmt.Errorf("migrations: lock %s: GET_LOCK failed", name)
		case *got == 1:
			if attempt > 0 {
				log.Info("migration lock acquired", "lock", name, "waited", time.Since(since).Round(time.Millisecond).String())
			}
			return nil
		case attempt == 0:
			log.Info("another process is migrating this database; waiting", "lock", name)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("migrations: waiting for the lock %s held by another process: %w", name, ctx.Err())
		}
	}
}

// CreateTables is a helper for the common first migration of a module: it
// creates the tables of the given models if they do not exist.
func CreateTables(models ...any) func(ctx context.Context, db bun.IDB) error {
	return func(ctx context.Context, db bun.IDB) error {
		for _, model := range models {
			if _, err := db.NewCreateTable().Model(model).IfNotExists().WithForeignKeys().Exec(ctx); err != nil {
				return fmt.Errorf("create table for %T: %w", model, err)
			}
		}
		return nil
	}
}

// CreateIndex creates an index unless an index of that name exists on the
// model's table: MySQL 8 has no CREATE INDEX IF NOT EXISTS, so the step
// asks information_schema first, which keeps it idempotent there too.
func CreateIndex(model any, name string, columns ...string) func(ctx context.Context, db bun.IDB) error {
	return createIndex(model, name, false, columns)
}

// CreateUniqueIndex is CreateIndex for a UNIQUE index.
func CreateUniqueIndex(model any, name string, columns ...string) func(ctx context.Context, db bun.IDB) error {
	return createIndex(model, name, true, columns)
}

func createIndex(model any, name string, unique bool, columns []string) func(ctx context.Context, db bun.IDB) error {
	return func(ctx context.Context, db bun.IDB) error {
		q := db.NewCreateIndex().Model(model).Index(name).Column(columns...)
		if unique {
			q = q.Unique()
		}
		if db.Dialect().Name() == dialect.MySQL {
			table := db.Dialect().Tables().Get(reflect.TypeOf(model)).Name
			exists, err := db.NewSelect().TableExpr("information_schema.statistics").
				Where("table_schema = DATABASE()").Where("table_name = ?", table).Where("index_name = ?", name).Exists(ctx)
			if err != nil {
				return fmt.Errorf("create index %s: look for it: %w", name, err)
			}
			if exists {
				return nil
			}
		} else {
			q = q.IfNotExists()
		}
		if _, err := q.Exec(ctx); err != nil {
			return fmt.Errorf("create index %s: %w", name, err)
		}
		return nil
	}
}
