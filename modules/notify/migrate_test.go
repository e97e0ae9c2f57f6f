package notify_test

import (
	"context"
	"testing"

	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/notify"
)

// Migration notify:0007 gives the jobs of an earlier release their retry
// columns, each job due at once and not tried yet; run again, it changes
// nothing.
func TestJobRetriesMigration(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		env := onairtest.New(t, onairtest.Options{Backend: backend})
		db := env.Core.DB
		_, djToken := env.CreateUser("Dee Jay")
		show := onairtest.CreateShow(t, env, djToken, nil).ID
		// The table as the earlier release has it.
		for _, c := range []string{"attempts", "next_at", "last_error", "failed_at"} {
			if _, err := db.ExecContext(ctx, "ALTER TABLE notify_jobs DROP COLUMN "+c); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := db.ExecContext(ctx, "INSERT INTO notify_jobs (show_id, created_at) VALUES (?, ?)", show, env.Core.Clock.Stamp()); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if _, err := db.ExecContext(ctx, "DELETE FROM onair_migrations WHERE id = 'notify:0007_job_retries'"); err != nil {
				t.Fatal(err)
			}
			if n, err := env.Core.Migrate(ctx); err != nil || n != 1 {
				t.Fatalf("migrate: %d applied, %v; want 1", n, err)
			}
			var j notify.Job
			if err := db.NewSelect().Model(&j).Where("show_id = ?", show).Scan(ctx); err != nil {
				t.Fatal(err)
			}
			if j.Attempts != 0 || j.NextAt != nil || j.LastError != "" || j.FailedAt != nil || j.ExpandedAt != nil {
				t.Errorf("the earlier job after the migration: %+v", j)
			}
		}
	})
}
