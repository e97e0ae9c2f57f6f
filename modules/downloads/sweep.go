package downloads

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/store"
	"github.com/onair/onair/modules/shows"
)

// The sweep works from the shows that are due, never from all archived
// shows: show_downloads.due_at is set when a show needs its files (in the
// archive's own transaction, by onShowTx) and cleared once they are
// made, the show is skipped or its tries are spent, so a sweep reads the
// due rows through the index (due_at, show_id) and its cost follows the
// work waiting, not the shows kept. Shows archived before the table had
// due_at are found once by the backfill, a walk of the shows table by id
// whose cursor (downloads_sweep) survives restarts and is shared by the
// nodes.
const (
	// sweepEvery is how often the worker looks for due shows (retries,
	// and archived events a full queue dropped).
	sweepEvery = 10 * time.Minute
	// retryAfter is how long a failed show waits: the next sweep, not the
	// one that failed it, tries it again.
	retryAfter = 5 * time.Minute
	// maxAttempts bounds the tries at one show's files.
	maxAttempts = 3
	// lease is how long a node's claim on a show holds off the others:
	// longer than a make may take, so only a node that died mid-make
	// leaves a show to be claimed again.
	lease = makeTimeout + 5*time.Minute
	// sweepPage is how many due shows one statement reads.
	sweepPage = 100
	// backfillPage is how many shows one backfill statement reads, and
	// backfillPages how many pages one sweep walks; backfillEvery is the
	// sweeps' period until the walk is done.
	backfillPage  = 1000
	backfillPages = 100
	backfillEvery = 10 * time.Second
)

// sweepState is the backfill's cursor, one row (id 1) shared by the nodes.
type sweepState struct {
	bun.BaseModel `bun:"table:downloads_sweep,alias:ds"`

	ID int64 `bun:"id,pk"`
	// After is the highest show id the backfill has examined.
	After int64 `bun:"backfill_after,notnull,default:0"`
	// Done is set once the walk reached the last show: every show
	// archived since has been made due by its archive.
	Done      bool      `bun:"backfill_done,notnull,default:false"`
	UpdatedAt time.Time `bun:"updated_at,notnull"`
}

// SweepStats is what one sweep read and did.
type SweepStats struct {
	// Statements the sweep ran itself (not those of the makes).
	Statements int
	// BackfillRows and DueRows are the rows its reads returned: shows
	// walked by the backfill, due shows.
	BackfillRows, DueRows int
	// Made counts the shows this sweep claimed and tried.
	Made int
	// BackfillDone tells whether the backfill is complete.
	BackfillDone bool
}

type metrics struct {
	rows    *prometheus.CounterVec
	dropped prometheus.Counter
	sweeps  prometheus.CounterFunc
	swept   atomic.Int64
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	mt := &metrics{
		rows: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "onair_downloads_sweep_rows_total",
			Help: "Rows the downloads sweeps of this node read, by step: due (shows waiting for their files) or backfill (shows walked once after an upgrade).",
		}, []string{"step"}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "onair_downloads_queue_dropped_total",
			Help: "Archived events this node's full downloads queue dropped; the sweep makes their files.",
		}),
	}
	mt.sweeps = prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "onair_downloads_sweeps_total",
		Help: "Downloads sweeps this node finished.",
	}, func() float64 { return float64(mt.swept.Load()) })
	mt.rows.WithLabelValues("due")
	mt.rows.WithLabelValues("backfill")
	for _, c := range []prometheus.Collector{mt.rows, mt.dropped, mt.sweeps} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return mt, nil
}

// onShowTx makes an archived show due, in the archive's transaction:
// the show cannot be archived without it, whatever becomes of the event
// (a full queue, a node that stops, downloads off for now). A show
// archived again is due again; its failed tries stay counted. A deleted
// show's row goes in the delete's transaction (show_id is the table's
// key, so bun makes no foreign key of it to cascade; the live module
// removes the files with the show's media).
func (m *Module) onShowTx(ctx context.Context, tx bun.IDB, ev shows.Event) error {
	if ev.Type == shows.EventDeleted {
		if _, err := tx.NewDelete().Model((*File)(nil)).Where("show_id = ?", ev.Show.ID).Exec(ctx); err != nil {
			return fmt.Errorf("downloads: forget show %d: %w", ev.Show.ID, err)
		}
		return nil
	}
	if ev.Type != shows.EventArchived {
		return nil
	}
	now := m.core.Clock.Stamp()
	_, err := tx.NewInsert().Model(&File{ShowID: ev.Show.ID, DueAt: &now, UpdatedAt: now}).
		On(m.onConflict(m.replacing("due_at"))).Exec(ctx)
	if err != nil {
		return fmt.Errorf("downloads: due show %d: %w", ev.Show.ID, err)
	}
	return nil
}

// claim takes a due show for this node until the lease ends; false when
// it is not due (made, given up, or claimed by another node).
func (m *Module) claim(ctx context.Context, id int64) (bool, error) {
	now := m.core.Clock.Stamp()
	res, err := m.core.DB.NewUpdate().Model((*File)(nil)).Set("due_at = ?", now.Add(lease)).
		Where("show_id = ?", id).Where("due_at <= ?", now).Exec(ctx)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// sweep advances the backfill, then makes the shows due when it began,
// oldest due first, until none is left or ctx ends.
func (m *Module) sweep(ctx context.Context) (st SweepStats) {
	began := time.Now()
	defer func() {
		if st.BackfillRows+st.DueRows > 0 {
			m.core.Log.Info("downloads swept", "backfill_rows", st.BackfillRows, "backfill_done", st.BackfillDone,
				"due_rows", st.DueRows, "made", st.Made, "statements", st.Statements, "took", time.Since(began).Round(time.Millisecond))
		}
		m.metrics.rows.WithLabelValues("backfill").Add(float64(st.BackfillRows))
		m.metrics.rows.WithLabelValues("due").Add(float64(st.DueRows))
		if ctx.Err() == nil {
			m.metrics.swept.Add(1)
		}
	}()
	if err := m.backfill(ctx, &st); err != nil {
		if ctx.Err() == nil {
			m.core.Log.Error("downloads: backfill", "err", err)
		}
	}
	start := m.core.Clock.Stamp()
	// Every row read leaves the due set before the next page (claimed,
	// hence due after start; or claimed by another node): the same
	// query reads the next page. prev guards against a row that would
	// not leave.
	var prev map[int64]bool
	for ctx.Err() == nil {
		var ids []int64
		st.Statements++
		err := m.dueQuery(start).Scan(ctx, &ids)
		if err != nil {
			if ctx.Err() == nil {
				m.core.Log.Error("downloads: sweep", "err", err)
			}
			return st
		}
		st.DueRows += len(ids)
		fresh := false
		for _, id := range ids {
			if prev[id] {
				continue
			}
			fresh = true
			st.Statements++
			ok, err := m.claim(ctx, id)
			if err != nil {
				if ctx.Err() == nil {
					m.core.Log.Error("downloads: claim", "show", id, "err", err)
				}
				return st
			}
			if ok {
				st.Made++
				m.makeLogged(ctx, id)
			}
		}
		if len(ids) < sweepPage || !fresh {
			return st
		}
		prev = make(map[int64]bool, len(ids))
		for _, id := range ids {
			prev[id] = true
		}
	}
	return st
}

// dueQuery reads a page of the shows due at start, through the index
// show_downloads_due.
func (m *Module) dueQuery(start time.Time) *bun.SelectQuery {
	return m.core.DB.NewSelect().Model((*File)(nil)).Column("show_id").
		Where("due_at <= ?", start).OrderExpr("due_at ASC, show_id ASC").Limit(sweepPage)
}

// backfill walks up to backfillPages pages of shows past the cursor and
// makes due the archived ones that have a recording and no row yet. A
// show without a recording is passed over for good: its archive is
// final. Two nodes on one page insert the same rows once; the cursor
// moves only from where the node read it, so the slower one stops.
func (m *Module) backfill(ctx context.Context, st *SweepStats) error {
	db := m.core.DB
	var state sweepState
	st.Statements++
	if err := db.NewSelect().Model(&state).Where("id = 1").Scan(ctx); err != nil {
		return fmt.Errorf("read cursor: %w", err)
	}
	for page := 0; !state.Done && page < backfillPages && ctx.Err() == nil; page++ {
		var list []struct {
			ID       int64 `bun:"id"`
			Archive  bool  `bun:"archive"`
			Radio    bool  `bun:"radio"`
			HasVideo bool  `bun:"has_video"`
		}
		st.Statements++
		err := db.NewSelect().Model((*shows.Show)(nil)).Column("s.id", "s.archive", "s.radio").
			ColumnExpr("s.video_url IS NOT NULL AS has_video").
			Where("s.id > ?", state.After).OrderExpr("s.id ASC").Limit(backfillPage).Scan(ctx, &list)
		if err != nil {
			return fmt.Errorf("walk shows after %d: %w", state.After, err)
		}
		st.BackfillRows += len(list)
		now := m.core.Clock.Stamp()
		var due []File
		for _, s := range list {
			if !s.Archive || s.Radio {
				continue
			}
			rec, err := m.recorded(ctx, s.ID, s.HasVideo)
			if err != nil {
				return err
			}
			if rec {
				due = append(due, File{ShowID: s.ID, DueAt: &now, UpdatedAt: now})
			}
		}
		if len(due) > 0 {
			// A show with a row (made, failed, due) keeps it.
			st.Statements++
			if _, err := db.NewInsert().Model(&due).On(m.keepExisting()).Exec(ctx); err != nil {
				return fmt.Errorf("make shows due: %w", err)
			}
		}
		next := state
		next.Done = len(list) < backfillPage
		if len(list) > 0 {
			next.After = list[len(list)-1].ID
		}
		next.UpdatedAt = now
		st.Statements++
		res, err := db.NewUpdate().Model(&next).Column("backfill_after", "backfill_done", "updated_at").
			WherePK().Where("backfill_after = ?", state.After).Where("backfill_done = ?", false).Exec(ctx)
		if err != nil {
			return fmt.Errorf("move cursor: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err // another node moved it: it walks on
		}
		state = next
	}
	st.BackfillDone = state.Done
	return nil
}

// keepExisting is the ON DUPLICATE KEY / ON CONFLICT clause of an insert
// that leaves the row already there as it is.
func (m *Module) keepExisting() string {
	if app.IsMySQL(m.core.DB) {
		return "DUPLICATE KEY UPDATE show_id = show_id"
	}
	return "CONFLICT (show_id) DO NOTHING"
}

// recorded tells whether the store holds an archive playlist make would
// read for the show (the audio one, or the A/V one of a show with video).
// An error other than a missing object counts as recorded: make tries and
// retries it.
func (m *Module) recorded(ctx context.Context, id int64, video bool) (bool, error) {
	names := []string{archiveAudio}
	if video {
		names = append(names, archiveAV)
	}
	for _, name := range names {
		_, err := m.core.Store.Stat(ctx, "shows/"+strconv.FormatInt(id, 10)+"/"+name)
		if err == nil || !store.IsNotExist(err) {
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			return true, nil
		}
	}
	return false, nil
}
