package migrations_test

import (
	"context"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/migrations"
)

// widgetV2 is widget (the same table) with the columns a later release
// adds: nullable, and NOT NULL with a default.
type widgetV2 struct {
	bun.BaseModel `bun:"table:widgets"`
	ID            int64      `bun:"id,pk,autoincrement"`
	Name          string     `bun:"name,notnull,type:varchar(50)"`
	EndsAt        *time.Time `bun:"ends_at"`
	Quiet         bool       `bun:"quiet,notnull,default:false"`
	Loud          bool       `bun:"loud,notnull,default:true"`
}

// TestAddColumns upgrades a table created by an earlier release: the rows
// there get the defaults, a second run (a crash between the DDL and the
// bookkeeping on MySQL) changes nothing, and a column the model lacks is
// an error rather than a silent skip.
func TestAddColumns(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		t.Parallel()
		ctx := context.Background()
		db := openDB(t, backend)
		if err := migrations.CreateTables((*widget)(nil))(ctx, db); err != nil {
			t.Fatal(err)
		}
		if _, err := db.NewInsert().Model(&widget{Name: "old"}).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		add := migrations.AddColumns((*widgetV2)(nil), "ends_at", "quiet", "loud")
		for run := 1; run <= 2; run++ {
			if err := add(ctx, db); err != nil {
				t.Fatalf("run %d: %v", run, err)
			}
		}
		var got widgetV2
		if err := db.NewSelect().Model(&got).Where("name = ?", "old").Scan(ctx); err != nil {
			t.Fatal(err)
		}
		if got.EndsAt != nil || got.Quiet || !got.Loud {
			t.Fatalf("existing row after the upgrade: %+v", got)
		}
		end := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
		if _, err := db.NewInsert().Model(&widgetV2{Name: "new", EndsAt: &end, Quiet: true}).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		if err := db.NewSelect().Model(&got).Where("name = ?", "new").Scan(ctx); err != nil {
			t.Fatal(err)
		}
		if got.EndsAt == nil || !got.EndsAt.Equal(end) || !got.Quiet || !got.Loud {
			t.Fatalf("new row: %+v", got)
		}
		if err := migrations.AddColumns((*widgetV2)(nil), "missing")(ctx, db); err == nil {
			t.Fatal("a column the model lacks was accepted")
		}
	})
}

// TestTableAndColumnExist: the checks a step makes before it changes the
// schema, on a missing table, a table and its columns.
func TestTableAndColumnExist(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		t.Parallel()
		ctx := context.Background()
		db := openDB(t, backend)
		if ok, err := migrations.TableExists(ctx, db, "widgets"); err != nil || ok {
			t.Fatalf("before: TableExists = %v, %v", ok, err)
		}
		if err := migrations.CreateTables((*widget)(nil))(ctx, db); err != nil {
			t.Fatal(err)
		}
		if ok, err := migrations.TableExists(ctx, db, "widgets"); err != nil || !ok {
			t.Fatalf("after: TableExists = %v, %v", ok, err)
		}
		for col, want := range map[string]bool{"name": true, "ends_at": false} {
			if ok, err := migrations.ColumnExists(ctx, db, "widgets", col); err != nil || ok != want {
				t.Errorf("ColumnExists(%s) = %v, %v; want %v", col, ok, err, want)
			}
		}
	})
}
