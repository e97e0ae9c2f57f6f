package migrations_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/migrations"
)

func openDB(t *testing.T, backend string) *bun.DB {
	t.Helper()
	url := "sqlite://" + filepath.Join(t.TempDir(), "m.db")
	if backend == "mysql" {
		url = onairtest.FreshMySQL(t)
	}
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
