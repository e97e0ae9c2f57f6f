package downloads_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/broadcasttest"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/downloads"
)

// TestUpgradeFromOldRelease runs the upgrade an install makes from a
// release before the due sweep (migrations downloads:0002–0004), end to
// end: a database left as that release leaves it — a show broadcast and
// archived while downloads were off, so it has no row, and a show whose
// make failed once, a row without due_at — booted again by this release.
// The migrations run, the first sweep's backfill finds the recorded show
// and makes its file, which the API then offers and serves; the failed
// show is tried again; and the sweep after that reads nothing.
func TestUpgradeFromOldRelease(t *testing.T) {
	broadcasttest.Require(t)
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		old := onairtest.New(t, onairtest.Options{Backend: backend,
			Configure: func(c *app.Config) { c.Set(downloads.SettingEnabled, false) }})
		_, token := old.CreateUser("Long Timer")
		recorded := onairtest.CreateShow(t, old, token, map[string]any{"name": "Before the upgrade", "audio_only": true})
		broadcasttest.Archive(t, recorded, 4, true)
		failed := archiveBare(t, old, token)

		// Back to the old release's shape.
		db := old.Core.DB
		dropIndex := "DROP INDEX show_downloads_due"
		if app.IsMySQL(db) {
			dropIndex += " ON show_downloads"
		}
		for _, q := range []string{
			"DELETE FROM show_downloads",
			dropIndex,
			"ALTER TABLE show_downloads DROP COLUMN due_at",
			"DROP TABLE downloads_sweep",
			"DELETE FROM onair_migrations WHERE id IN ('downloads:0002_due_at', 'downloads:0003_due_index', 'downloads:0004_sweep_state')",
			fmt.Sprintf("INSERT INTO show_downloads (show_id, ready, audio_size, video_size, attempts, updated_at) VALUES (%d, false, 0, 0, 1, '2026-11-01 10:00:00')", failed),
		} {
			if _, err := db.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		if err := old.Shutdown(); err != nil {
			t.Fatal(err)
		}

		env := onairtest.New(t, onairtest.Options{DatabaseURL: old.Core.Config.DatabaseURL,
			Configure: func(c *app.Config) { c.DataDir, c.StorageURL = old.Core.Config.DataDir, old.Core.Config.StorageURL }})
		m := quiet(t, env)
		var ran int
		if err := env.Core.DB.NewRaw("SELECT COUNT(*) FROM onair_migrations WHERE id IN ('downloads:0002_due_at', 'downloads:0003_due_index', 'downloads:0004_sweep_state')").Scan(ctx, &ran); err != nil || ran != 3 {
			t.Fatalf("migrations recorded after the upgrade: %d (%v), want 3", ran, err)
		}
		s := env.Do("GET", fmt.Sprintf("/v1/shows/%d", recorded.ID), token, nil).Expect(t, http.StatusOK).JSON(t)["show"].(map[string]any)
		d, ok := s["downloads"].(map[string]any)
		if !ok || d["audio"] == nil {
			t.Fatalf("downloads of the show archived before the upgrade: %v", s["downloads"])
		}
		if resp := awaitFile(t, d["audio"].(string)); resp.ContentLength <= 0 {
			t.Errorf("the audio file: length %d", resp.ContentLength)
		}
		if f, ok := file(t, env, recorded.ID); !ok || !f.Ready || f.AudioSize <= 0 || f.DueAt != nil {
			t.Errorf("the recorded show's row: %+v (row %v), want made and not due", f, ok)
		}
		// Without a recording the failed show fails again: its second
		// try, due again after the retry delay, not now.
		if f, _ := file(t, env, failed); f.Ready || f.Attempts != 2 || f.DueAt == nil || !f.DueAt.After(time.Now()) {
			t.Errorf("the failed show's row: %+v, want a second try counted and due later", f)
		}
		if st := m.Sweep(ctx); !st.BackfillDone || st.BackfillRows != 0 || st.DueRows != 0 {
			t.Errorf("the sweep after the upgrade's: %+v, want nothing left to read", st)
		}
	})
}
