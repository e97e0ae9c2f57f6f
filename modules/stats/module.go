// Package stats is the statistics module: while a show is live, the node
// ingesting it samples the stream's health, its viewers and its chat
// every ONAIR_STATS_INTERVAL into the show_stats table (sampler.go); once
// it has run, a summary is computed from those points (summary.go).
// GET /v1/shows/:id/stats gives both to the show's owner and staff, the
// studio charts them, and the console's dashboard charts the instance
// (dashboard.go) with the process's CPU and memory (process.go).
//
// The module reads the other modules through small interfaces it
// declares (HealthReporter of shows, chatCounter, followCounter), so
// neither live nor chat knows it exists.
package stats

import (
	"context"
	_ "embed"
	"fmt"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
	"github.com/onair/onair/migrations"
	"github.com/onair/onair/modules/shows"
)

func init() { app.Register(&Module{}) }

// Module is the statistics module.
type Module struct {
	core  *app.Core
	shows *shows.Service
	// every is the sampling interval of live shows (ONAIR_STATS_INTERVAL).
	every time.Duration
	// sampler is the sampling loop's state (sampler.go), used by its
	// goroutine only.
	sampler sampler
	// process samples this process's CPU and memory.
	process *processSamples

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

var (
	_ app.Configurer        = (*Module)(nil)
	_ app.Modeler           = (*Module)(nil)
	_ app.Migrator          = (*Module)(nil)
	_ app.Policier          = (*Module)(nil)
	_ app.Provisioner       = (*Module)(nil)
	_ app.APIRouter         = (*Module)(nil)
	_ app.OpenAPIDocumenter = (*Module)(nil)
	_ app.Runner            = (*Module)(nil)
	_ app.AdminCharter      = (*Module)(nil)
)

// Settings of the module.
const (
	SettingInterval        = "ONAIR_STATS_INTERVAL"
	SettingProcessInterval = "ONAIR_STATS_PROCESS_INTERVAL"
)

// The bounds of the intervals: longer would leave a chart with a point or
// two; a show's points are at least a second apart, as their times are
// whole seconds (the API's timestamps, MySQL's DATETIME), while the
// process's samples stay in memory and may be closer (tests).
const (
	minInterval        = time.Second
	minProcessInterval = 100 * time.Millisecond
	maxInterval        = time.Hour
)

func (*Module) Name() string { return "stats" }

func (*Module) Settings() []app.Setting {
	return []app.Setting{
		{Env: SettingInterval, Flag: "stats-interval", Default: "10s",
			Help: "how often a live show's viewers, bitrate, fps and chat are sampled (1s–1h)", Parse: parseInterval(minInterval)},
		{Env: SettingProcessInterval, Flag: "stats-process-interval", Default: "1m",
			Help: "how often the process's CPU and memory are sampled for the console (100ms–1h; 24 h are kept)", Parse: parseInterval(minProcessInterval)},
	}
}

func parseInterval(least time.Duration) func(string) (any, error) {
	return func(v string) (any, error) {
		d, err := time.ParseDuration(v)
		if err != nil {
			return nil, fmt.Errorf("must be a duration such as 10s")
		}
		if d < least || d > maxInterval {
			return nil, fmt.Errorf("must be between %s and %s", least, maxInterval)
		}
		return d, nil
	}
}

func (*Module) Models() []any { return []any{(*Point)(nil)} }

// Migrations create show_stats; its primary key (show_id, t) is also the
// index every read walks.
func (*Module) Migrations() []migrations.Migration {
	return []migrations.Migration{
		{ID: "0001_create_show_stats", Up: migrations.CreateTables((*Point)(nil))},
	}
}

// Policies: a show's statistics are its owner's and the staff's.
func (*Module) Policies() []string {
	return []string{
		"p, owner, stats, read",
		"p, moderator, stats, read",
	}
}

func (m *Module) Provision(ctx context.Context, core *app.Core) error {
	m.core = core
	m.shows = shows.From(core)
	m.every = app.Get[time.Duration](core.Config, SettingInterval)
	m.process = newProcessSamples(core.Metrics, app.Get[time.Duration](core.Config, SettingProcessInterval))
	// A deleted show's points go with it, in the same transaction.
	m.shows.SubscribeTx(func(ctx context.Context, tx bun.IDB, ev shows.Event) error {
		if ev.Type != shows.EventDeleted {
			return nil
		}
		if _, err := tx.NewDelete().Model((*Point)(nil)).Where("show_id = ?", ev.Show.ID).Exec(ctx); err != nil {
			return fmt.Errorf("stats: delete points of show %d: %w", ev.Show.ID, err)
		}
		return nil
	})
	return nil
}

// APIRoutes lists the module's /v1 routes.
func (m *Module) APIRoutes(r fiber.Router) {
	r.Get("/shows/:id/stats", m.getStats)
}

//go:embed openapi.json
var openAPI []byte

func (*Module) OpenAPI() []byte { return openAPI }

// Start runs the samplers: live shows at their start and every
// ONAIR_STATS_INTERVAL (sampler.go), the process every
// ONAIR_STATS_PROCESS_INTERVAL (a first sample at once).
func (m *Module) Start(ctx context.Context) error {
	ctx, m.cancel = context.WithCancel(ctx)
	now := time.Now()
	m.process.sample(now)
	m.sampler = sampler{tick: now.UTC().Truncate(m.every), last: map[int64]time.Time{}}
	m.wg.Add(2)
	go func() {
		defer m.wg.Done()
		app.Every(ctx, checkEvery, func(ctx context.Context) { m.sampleShows(ctx, time.Now()) })
	}()
	go func() {
		defer m.wg.Done()
		app.Every(ctx, m.process.every, func(context.Context) { m.process.sample(time.Now()) })
	}()
	return nil
}

func (m *Module) Stop(ctx context.Context) error {
	if m.cancel != nil {
		m.cancel()
	}
	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Every is the sampling interval of live shows.
func (m *Module) Every() time.Duration { return m.every }

// From returns the provisioned stats module of a booted core.
func From(core *app.Core) *Module {
	m, ok := app.Lookup[*Module](core)
	if !ok || m.shows == nil {
		panic("stats: module not provisioned (is modules/stats imported?)")
	}
	return m
}
