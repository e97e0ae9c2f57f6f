// Package migrations runs the schema steps every module contributes.
//
// A migration id is "<module>:<id>" in the bookkeeping table, so two modules
// can never collide on an id; inside one module ids must be unique and are
// applied in lexical order (use a sortable prefix such as 0001_, or a
// timestamp). Migrations must be written so that they run unchanged on MySQL
// (MariaDB) and SQLite: use Bun's query builders, or branch on Dialect.
package migrations

import (
	"context"
	"fmt"
	"log/slog"
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

// record is the bookkeeping row of one applied migration.
type record struct {
	bun.BaseModel `bun:"table:onair_migrations"`

	ID        string    `bun:"id,pk,type:varchar(191)"`
	AppliedAt time.Time `bun:"applied_at,notnull"`
}

// Run applies every migration not yet applied, module by module in the given
// order, and reports how many it applied. On MySQL DDL commits implicitly, so
// a failed migration may leave partial schema; the bookkeeping row is written
// only after a step succeeds, and steps should be idempotent where they can
// (IfNotExists).
func Run(ctx context.Context, db *bun.DB, sets []Set, log *slog.Logger) (int, error) {
	if _, err := db.NewCreateTable().Model((*record)(nil)).IfNotExists().Exec(ctx); err != nil {
		return 0, fmt.Errorf("migrations: create bookkeeping table: %w", err)
	}
	var done []record
	if err := db.NewSelect().Model(&done).Scan(ctx); err != nil {
		return 0, fmt.Errorf("migrations: read applied: %w", err)
	}
	applied := make(map[string]bool, len(done))
	for _, r := range done {
		applied[r.ID] = true
	}
	n := 0
	for _, set := range sets {
		steps := append([]Migration(nil), set.Migrations...)
		sort.SliceStable(steps, func(i, j int) bool { return steps[i].ID < steps[j].ID })
		seen := map[string]bool{}
		for _, m := range steps {
			if m.ID == "" || seen[m.ID] {
				return n, fmt.Errorf("migrations: module %s: empty or duplicate id %q", set.Module, m.ID)
			}
			seen[m.ID] = true
			id := set.Module + ":" + m.ID
			if applied[id] {
				continue
			}
			start := time.Now()
			if err := apply(ctx, db, m); err != nil {
				return n, fmt.Errorf("migrations: %s: %w", id, err)
			}
			if _, err := db.NewInsert().Model(&record{ID: id, AppliedAt: time.Now().UTC()}).Exec(ctx); err != nil {
				return n, fmt.Errorf("migrations: record %s: %w", id, err)
			}
			n++
			if log != nil {
				log.Info("migration applied", "id", id, "took", time.Since(start).Round(time.Millisecond).String())
			}
		}
	}
	return n, nil
}

// apply runs one step, inside a transaction where the dialect makes DDL
// transactional (SQLite); MySQL commits DDL implicitly anyway.
func apply(ctx context.Context, db *bun.DB, m Migration) error {
	if db.Dialect().Name() == dialect.SQLite {
		return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error { return m.Up(ctx, tx) })
	}
	return m.Up(ctx, db)
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

// CreateIndex creates an index. It has no IF NOT EXISTS because MySQL 8 lacks
// it; the bookkeeping table already guarantees a step runs once.
func CreateIndex(model any, name string, columns ...string) func(ctx context.Context, db bun.IDB) error {
	return func(ctx context.Context, db bun.IDB) error {
		_, err := db.NewCreateIndex().Model(model).Index(name).Column(columns...).Exec(ctx)
		if err != nil {
			return fmt.Errorf("create index %s: %w", name, err)
		}
		return nil
	}
}
