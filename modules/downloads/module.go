// Package downloads is the downloads module: once a show is archived it
// makes the archive into files a listener keeps (the audio as M4A, the
// video as MP4; streams copied by ffmpeg, no transcoding), keeps them in
// the media store, offers them on the show as downloads (an extension of
// the Show resource, when the owner allows it) and serves them with Range
// and a Content-Disposition named after the show.
package downloads

import (
	"context"
	"fmt"
	"os/exec"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
	"github.com/onair/onair/migrations"
	"github.com/onair/onair/modules/shows"
)

func init() { app.Register(&Module{}) }

// Module is the downloads module.
type Module struct {
	core   *app.Core
	shows  *shows.Service
	ffmpeg string // "" when ffmpeg is not on PATH or downloads are off: none are made or offered
	signer signer

	jobs    chan int64 // shows to make files of, from this node's archived events
	metrics *metrics
	// dropEvents makes onShowEvent drop every archived event as a full
	// queue does (tests of the sweep).
	dropEvents atomic.Bool
	// beforeStore, when set, runs before each file is stored; its error
	// fails the store (tests of a show deleted meanwhile).
	beforeStore func(id int64) error
}

var (
	_ app.Configurer   = (*Module)(nil)
	_ app.Modeler      = (*Module)(nil)
	_ app.Migrator     = (*Module)(nil)
	_ app.Provisioner  = (*Module)(nil)
	_ app.PublicRouter = (*Module)(nil)
	_ app.Runner       = (*Module)(nil)
)

func (*Module) Name() string { return "downloads" }

// SettingEnabled turns the module's files off for the install: none made,
// none offered, none served.
const SettingEnabled = "ONAIR_DOWNLOADS"

func (*Module) Settings() []app.Setting {
	return []app.Setting{
		{Env: SettingEnabled, Flag: "downloads", Default: "true",
			Help: "make archived shows' downloads (M4A, MP4) and offer them on the show; false: none made, offered or served", Parse: app.ParseBoolSetting},
	}
}

func (*Module) Models() []any { return []any{(*File)(nil)} }

func (*Module) Migrations() []migrations.Migration {
	return []migrations.Migration{
		{ID: "0001_create_files", Up: migrations.CreateTables((*File)(nil))},
		{ID: "0002_due_at", Up: addDueAt},
		{ID: "0003_due_index", Up: migrations.CreateIndex((*File)(nil), "show_downloads_due", "due_at", "show_id")},
		{ID: "0004_sweep_state", Up: createSweepState},
	}
}

// addDueAt adds show_downloads.due_at and makes the failed shows with
// tries left due (the sweep reads no other rows). Shows without a row are
// the backfill's (sweep.go).
func addDueAt(ctx context.Context, db bun.IDB) error {
	if err := migrations.AddColumns((*File)(nil), "due_at")(ctx, db); err != nil {
		return err
	}
	_, err := db.NewUpdate().Model((*File)(nil)).Set("due_at = ?", time.Now().UTC().Truncate(time.Second)).
		Where("ready = ?", false).Where("attempts < ?", maxAttempts).Where("due_at IS NULL").Exec(ctx)
	return err
}

// createSweepState creates the backfill's cursor at the first show.
func createSweepState(ctx context.Context, db bun.IDB) error {
	if err := migrations.CreateTables((*sweepState)(nil))(ctx, db); err != nil {
		return err
	}
	_, err := db.NewInsert().Model(&sweepState{ID: 1, UpdatedAt: time.Now().UTC().Truncate(time.Second)}).Ignore().Exec(ctx)
	return err
}

// signingSecret names the key of the private shows' download links among
// the install's secrets, so every node agrees on it.
const signingSecret = "downloads.signing"

func (m *Module) Provision(ctx context.Context, core *app.Core) error {
	m.core = core
	m.shows = shows.From(core)
	keyCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	key, err := core.Secret(keyCtx, signingSecret)
	cancel()
	if err != nil {
		return fmt.Errorf("downloads: signing key: %w", err)
	}
	m.signer = signer{key: key}
	m.jobs = make(chan int64, jobQueue)
	if m.metrics, err = newMetrics(core.Metrics); err != nil {
		return fmt.Errorf("downloads: metrics: %w", err)
	}
	// Shows archived while downloads are off, or on a node without
	// ffmpeg, are due all the same: a node that makes files makes theirs.
	m.shows.SubscribeTx(m.onShowTx)
	if !app.Get[bool](core.Config, SettingEnabled) {
		core.Log.Info("downloads off (" + SettingEnabled + "=false): archived shows offer none")
		return nil
	}
	if m.ffmpeg, err = exec.LookPath("ffmpeg"); err != nil {
		m.ffmpeg = ""
		core.Log.Info("ffmpeg not on PATH: archived shows offer no downloads")
		return nil
	}
	m.shows.Views.SetDownloads(m.links)
	m.shows.Subscribe(m.onShowEvent)
	return nil
}

// PublicRoutes serve the files: public shows' at a plain URL, any show's
// with a signed one (what a private show's downloads carry).
func (m *Module) PublicRoutes(r fiber.Router) {
	r.Get("/downloads/shows/:id/t/:token/:file", m.serveSigned)
	r.Get("/downloads/shows/:id/:file", m.servePublic)
}

// Start runs the worker, a Core.Go loop: it makes the files of the shows
// archived on this node as their events come, and sweeps for the other
// due shows (sweep.go): a dropped event, a failure to retry, a show
// archived while the node was down or before this module. When the
// module stops, a file being made is abandoned and due again at once.
func (m *Module) Start(context.Context) error {
	if m.ffmpeg != "" {
		m.core.Go("downloads: worker", m.run)
	}
	return nil
}

// Stop has nothing of its own to release (the worker is a Core.Go loop).
func (*Module) Stop(context.Context) error { return nil }

// From returns the provisioned downloads module of a booted core (the
// podcast feed reads the files' sizes through it).
func From(core *app.Core) *Module {
	m, ok := app.Lookup[*Module](core)
	if !ok {
		panic("downloads: module not provisioned (is modules/downloads imported?)")
	}
	return m
}

// File records the downloads made of an archived show. A row with Ready
// false records failed attempts.
type File struct {
	bun.BaseModel `bun:"table:show_downloads,alias:sd"`

	ShowID int64       `bun:"show_id,pk"`
	Show   *shows.Show `bun:"rel:belongs-to,join:show_id=id,on_delete:CASCADE"`
	Ready  bool        `bun:"ready,notnull,default:false"`
	// AudioSize and VideoSize are the files' lengths in bytes; VideoSize
	// is 0 for a show without video.
	AudioSize int64 `bun:"audio_size,notnull,default:0"`
	VideoSize int64 `bun:"video_size,notnull,default:0"`
	// Attempts counts failed makes; past maxAttempts the sweep gives up.
	Attempts int `bun:"attempts,notnull,default:0"`
	// DueAt is when the show's files are next to be made (archived,
	// retry after a failure, end of a node's claim); nil when there is
	// nothing to do: made, given up, or not archived.
	DueAt     *time.Time `bun:"due_at"`
	UpdatedAt time.Time  `bun:"updated_at,notnull"`
}

// Ready returns the made files of the shows ids, by show id: none when
// downloads are off or ffmpeg is missing (none are served then).
func (m *Module) Ready(ctx context.Context, ids []int64) (map[int64]File, error) {
	out := make(map[int64]File, len(ids))
	if len(ids) == 0 || m.ffmpeg == "" {
		return out, nil
	}
	var list []File
	if err := m.core.DB.NewSelect().Model(&list).Where("show_id IN (?)", bun.List(ids)).Where("ready = ?", true).Scan(ctx); err != nil {
		return nil, fmt.Errorf("downloads: files: %w", err)
	}
	for _, f := range list {
		out[f.ShowID] = f
	}
	return out, nil
}
