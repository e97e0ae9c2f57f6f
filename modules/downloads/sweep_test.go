package downloads_test

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/broadcasttest"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/store"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/downloads"
	"github.com/onair/onair/modules/shows"
)

// quiet returns the env's downloads module once its worker's first sweep
// is over (with ffmpeg; without it there is no worker), so the test's own
// sweeps are the only ones.
func quiet(t *testing.T, env *onairtest.Env) *downloads.Module {
	t.Helper()
	m, _ := onairtest.Module[*downloads.Module](env)
	if _, err := exec.LookPath("ffmpeg"); err == nil {
		testload.Poll(t, "the worker's first sweep", func() error {
			if m.Sweeps() < 1 {
				return fmt.Errorf("no sweep yet")
			}
			return nil
		})
	}
	return m
}

// archiveBare runs a show through go-live, stop and archive with no
// recording at all, as the live module would for a broadcast whose
// recording was lost.
func archiveBare(t *testing.T, env *onairtest.Env, token string) int64 {
	t.Helper()
	ctx := context.Background()
	id := onairtest.CreateShow(t, env, token, nil).ID
	svc := shows.From(env.Core)
	if _, err := svc.GoLive(ctx, id, shows.Media{}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Stop(ctx, id, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Archive(ctx, id, shows.Media{}); err != nil {
		t.Fatal(err)
	}
	return id
}

func file(t *testing.T, env *onairtest.Env, id int64) (downloads.File, bool) {
	t.Helper()
	var f downloads.File
	n, err := env.Core.DB.NewSelect().Model(&f).Where("show_id = ?", id).ScanAndCount(context.Background())
	if err != nil && n != 0 {
		t.Fatal(err)
	}
	return f, n == 1
}

// TestSweepBounded: the sweep reads the due shows only. Shows whose files
// are made, and shows without a recording once their 3 tries are spent,
// are never read again: the sweep after that reads no row in two
// statements, through the index show_downloads_due, however many shows
// the install keeps. A failed show waits for the next sweep, not the one
// that failed it.
func TestSweepBounded(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env := onairtest.New(t, onairtest.Options{Backend: backend})
		m := quiet(t, env)
		m.DropEvents(true) // only the test's sweeps make anything
		ctx := context.Background()
		_, token := env.CreateUser("Dead Air")
		const bare, made = 8, 8
		var bareIDs []int64
		for range bare {
			bareIDs = append(bareIDs, archiveBare(t, env, token))
		}
		for range made {
			id := archiveBare(t, env, token)
			// What make records once the files are stored.
			f := &downloads.File{ShowID: id, Ready: true, AudioSize: 10, UpdatedAt: env.Core.Clock.Stamp()}
			if _, err := env.Core.DB.NewUpdate().Model(f).Column("ready", "audio_size", "due_at", "updated_at").WherePK().Exec(ctx); err != nil {
				t.Fatal(err)
			}
		}

		var offset time.Duration
		defer env.Core.Clock.Set(nil)
		for try := 1; try <= downloads.MaxAttempts; try++ {
			st := m.Sweep(ctx)
			if st.DueRows != bare || st.Made != bare || !st.BackfillDone {
				t.Fatalf("sweep %d: %+v, want the %d shows without a recording", try, st, bare)
			}
			for _, id := range bareIDs {
				if f, _ := file(t, env, id); f.Attempts != try || f.Ready {
					t.Fatalf("show %d after sweep %d: attempts %d, ready %v", id, try, f.Attempts, f.Ready)
				}
			}
			if again := m.Sweep(ctx); again.DueRows != 0 {
				t.Fatalf("a sweep right after sweep %d read %d due shows", try, again.DueRows)
			}
			offset += downloads.SweepEvery
			o := offset
			env.Core.Clock.Set(func() time.Time { return time.Now().Add(o) })
		}
		st := m.Sweep(ctx)
		if st.DueRows != 0 || st.BackfillRows != 0 || st.Made != 0 || st.Statements != 2 {
			t.Errorf("sweep after the tries: %+v, want no row in 2 statements", st)
		}
		for _, id := range bareIDs {
			if f, _ := file(t, env, id); f.Attempts != downloads.MaxAttempts || f.DueAt != nil {
				t.Errorf("show %d given up: attempts %d, due %v", id, f.Attempts, f.DueAt)
			}
		}

		// The database reads the due shows through the index, not the
		// table.
		q := m.DueQuery(env.Core.Clock.Stamp())
		var plan []string
		if app.IsMySQL(env.Core.DB) {
			rows, err := env.Core.DB.QueryContext(ctx, "EXPLAIN "+q)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			cols, _ := rows.Columns()
			for rows.Next() {
				vals := make([]any, len(cols))
				ptrs := make([]any, len(cols))
				for i := range vals {
					ptrs[i] = &vals[i]
				}
				if err := rows.Scan(ptrs...); err != nil {
					t.Fatal(err)
				}
				for i, c := range cols {
					if b, ok := vals[i].([]byte); ok {
						vals[i] = string(b)
					}
					plan = append(plan, fmt.Sprintf("%s=%v", c, vals[i]))
				}
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
		} else {
			rows, err := env.Core.DB.QueryContext(ctx, "EXPLAIN QUERY PLAN "+q)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			for rows.Next() {
				var id, parent, notused int
				var detail string
				if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
					t.Fatal(err)
				}
				plan = append(plan, detail)
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
		}
		text := strings.Join(plan, " ")
		t.Logf("plan: %s", text)
		if !strings.Contains(text, "show_downloads_due") || strings.Contains(text, "TEMP B-TREE") || strings.Contains(text, "filesort") {
			t.Errorf("the due shows are not read in index order: %s", text)
		}
	})
}

// TestBackfill: after an upgrade the backfill walks the shows once and
// makes due the archived ones with a recording and no row; a show without
// a recording is passed over and, like a made one, never read again.
func TestBackfill(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env := onairtest.New(t, onairtest.Options{Backend: backend})
		m := quiet(t, env)
		ctx := context.Background()
		_, token := env.CreateUser("Old Timer")
		archived := func(name string) int64 {
			id := onairtest.CreateShow(t, env, token, map[string]any{"name": name}).ID
			// Archived by a release before due_at: no row, no hook.
			if _, err := env.Core.DB.NewUpdate().Table("shows").Set("complete = ?, archive = ?", true, true).Where("id = ?", id).Exec(ctx); err != nil {
				t.Fatal(err)
			}
			return id
		}
		recorded, bare, made := archived("Recorded"), archived("Bare"), archived("Made")
		onairtest.CreateShow(t, env, token, map[string]any{"name": "Scheduled"})
		if err := store.PutBytes(ctx, env.Core.Store, fmt.Sprintf("shows/%d/archive_audio.m3u8", recorded), []byte("#EXTM3U\n"), "application/vnd.apple.mpegurl"); err != nil {
			t.Fatal(err)
		}
		if _, err := env.Core.DB.NewInsert().Model(&downloads.File{ShowID: made, Ready: true, AudioSize: 10, UpdatedAt: time.Now()}).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		// The cursor as the migration leaves an upgraded install.
		if _, err := env.Core.DB.NewUpdate().Table("downloads_sweep").Set("backfill_after = 0, backfill_done = ?", false).Where("id = 1").Exec(ctx); err != nil {
			t.Fatal(err)
		}

		st := m.Sweep(ctx)
		if st.BackfillRows != 4 || !st.BackfillDone || st.DueRows != 1 || st.Made != 1 {
			t.Errorf("first sweep after the upgrade: %+v, want 4 shows walked, the recorded one made", st)
		}
		if f, ok := file(t, env, recorded); !ok || f.Attempts != 1 {
			// The playlist lists no segment: ffmpeg fails, a try is counted.
			t.Errorf("the recorded show: %+v (row %v), want one failed try", f, ok)
		}
		if f, ok := file(t, env, bare); ok {
			t.Errorf("the show without a recording has a row: %+v", f)
		}
		if f, _ := file(t, env, made); !f.Ready || f.DueAt != nil {
			t.Errorf("the made show: %+v", f)
		}
		if st := m.Sweep(ctx); st.BackfillRows != 0 || st.DueRows != 0 || st.Statements != 2 {
			t.Errorf("the next sweep: %+v, want no row in 2 statements", st)
		}
	})
}

// TestDroppedEventSweep: a show archived while the queue is full (its
// event dropped) is due all the same, and the next sweep makes its files.
func TestDroppedEventSweep(t *testing.T) {
	broadcasttest.Require(t)
	env := onairtest.New(t, onairtest.Options{})
	m := quiet(t, env)
	m.DropEvents(true)
	_, token := env.CreateUser("Full Queue")
	b := onairtest.CreateShow(t, env, token, map[string]any{"audio_only": true})
	s := broadcasttest.Archive(t, b, 4, true)
	d, ok := s["downloads"].(map[string]any)
	if !ok || d["audio"] == nil {
		t.Fatalf("downloads of an archived show: %v", s["downloads"])
	}
	audio := d["audio"].(string)
	if resp, body := get(t, audio, ""); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("the audio before any sweep: %d %s, want 503 preparing", resp.StatusCode, body)
	}
	if !strings.Contains(env.Logs(), "queue full") {
		t.Errorf("the dropped event was not logged")
	}
	st := m.Sweep(context.Background())
	if st.DueRows != 1 || st.Made != 1 {
		t.Errorf("sweep: %+v, want the dropped show", st)
	}
	awaitFile(t, audio)
	if st := m.Sweep(context.Background()); st.DueRows != 0 {
		t.Errorf("the sweep after: %+v, want nothing due", st)
	}
}

// TestSweepNodesShare: two nodes sweeping the same due shows at once try
// each show once between them (a claim holds off the other node).
func TestSweepNodesShare(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		a := onairtest.New(t, onairtest.Options{Backend: backend})
		b := onairtest.New(t, onairtest.Options{DatabaseURL: a.Core.Config.DatabaseURL})
		ma, mb := quiet(t, a), quiet(t, b)
		ma.DropEvents(true)
		_, token := a.CreateUser("Two Nodes")
		const n = 12
		var ids []int64
		for range n {
			ids = append(ids, archiveBare(t, a, token))
		}
		ctx := context.Background()
		got := make(chan downloads.SweepStats, 2)
		for _, m := range []*downloads.Module{ma, mb} {
			go func() { got <- m.Sweep(ctx) }()
		}
		sa, sb := <-got, <-got
		if sa.Made+sb.Made != n {
			t.Errorf("the nodes tried %d and %d shows, want %d between them", sa.Made, sb.Made, n)
		}
		for _, id := range ids {
			if f, _ := file(t, a, id); f.Attempts != 1 {
				t.Errorf("show %d: %d tries, want 1", id, f.Attempts)
			}
		}
	})
}

// TestMigrateDueAt: the migration that adds due_at makes the failed shows
// with tries left due, and nothing else; run again (MySQL commits DDL at
// once, so a step may run twice) it changes nothing.
func TestMigrateDueAt(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env := onairtest.New(t, onairtest.Options{Backend: backend})
		quiet(t, env)
		ctx := context.Background()
		_, token := env.CreateUser("Upgrader")
		rows := map[string]*downloads.File{
			"failed":   {Attempts: 1},
			"given up": {Attempts: downloads.MaxAttempts},
			"made":     {Ready: true, AudioSize: 10},
		}
		for name, f := range rows {
			f.ShowID = onairtest.CreateShow(t, env, token, map[string]any{"name": name}).ID
			f.UpdatedAt = time.Now()
			// As a release before due_at left them.
			if _, err := env.Core.DB.NewInsert().Model(f).Exec(ctx); err != nil {
				t.Fatal(err)
			}
		}
		for run := 1; run <= 2; run++ {
			if err := downloads.AddDueAt(ctx, env.Core.DB); err != nil {
				t.Fatalf("run %d: %v", run, err)
			}
			for name, f := range rows {
				got, _ := file(t, env, f.ShowID)
				if due := got.DueAt != nil; due != (name == "failed") {
					t.Errorf("run %d: the %s show due %v", run, name, got.DueAt)
				}
			}
		}
	})
}
