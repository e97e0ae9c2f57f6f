package shows_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/shows"
)

// TestPeakViewersMigration: a database from before peak_viewers gets the
// column from migration 0028, 0 for the shows there are; run again (a
// crash after MySQL committed the DDL), it changes nothing.
func TestPeakViewersMigration(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		url := "sqlite://" + filepath.Join(t.TempDir(), "old.db")
		if backend == "mysql" {
			url = onairtest.FreshMySQL(t)
		}
		ctx := context.Background()
		db, err := app.OpenDB(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		db.RegisterModel((*shows.ShowTag)(nil)) // as the kernel does for every module's models
		if _, err := db.ExecContext(ctx, "CREATE TABLE shows (id INTEGER PRIMARY KEY, name VARCHAR(100) NOT NULL)"); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, "INSERT INTO shows (id, name) VALUES (1, 'Old Set')"); err != nil {
			t.Fatal(err)
		}
		for run := 1; run <= 2; run++ {
			if err := shows.MigratePeakViewers(ctx, db); err != nil {
				t.Fatalf("run %d: %v", run, err)
			}
		}
		var peak int
		if err := db.NewRaw("SELECT peak_viewers FROM shows WHERE id = 1").Scan(ctx, &peak); err != nil || peak != 0 {
			t.Errorf("peak_viewers of an old show: %d %v", peak, err)
		}
	})
}
