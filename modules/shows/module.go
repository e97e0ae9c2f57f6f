// Package shows is the shows module: the Show resource of the v1 API
// (lists, reads, create, update, stop, delete, favorites) and the lifecycle
// service that the live-media module, the admin console and the API all call,
// so the state rules of a show live in one place (lifecycle.go).
package shows

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/gofiber/fiber/v2"
	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
	"github.com/onair/onair/app/events"
	"github.com/onair/onair/app/outbox"
	"github.com/onair/onair/migrations"
	"github.com/onair/onair/modules/users"
)

func init() { app.Register(&Module{}) }

// Subscribe handles the users module's tag merges (a migration step): the
// merge re-points show_tags, and the counts per tag and the shows' copies
// of their tag ids follow in the same step (when they exist yet;
// migrations 0020 and 0032 fill them otherwise).
func (*Module) Subscribe(bus *events.Bus) {
	events.SubscribeTx(bus, users.TagsMerged, func(ctx context.Context, tx *events.Tx, _ users.TagMerge) error {
		return tagsMerged(ctx, tx)
	})
}

func tagsMerged(ctx context.Context, db bun.IDB) error {
	if ok, err := migrations.TableExists(ctx, db, "show_counts"); err != nil || !ok {
		return err
	}
	if err := RebuildCounts(ctx, db); err != nil {
		return err
	}
	if ok, err := migrations.ColumnExists(ctx, db, "shows", "tag_ids"); err != nil || !ok {
		return err
	}
	return fillTagIDs(ctx, db)
}

// Module is the shows module. After Provision, Service is ready for other
// modules (live, chat, admin) to use; From finds it.
type Module struct {
	Service *Service

	janitor *janitor
	core    *app.Core // the console asks the other modules for viewer counts
}

var (
	_ app.Modeler           = (*Module)(nil)
	_ app.Migrator          = (*Module)(nil)
	_ app.Policier          = (*Module)(nil)
	_ app.Provisioner       = (*Module)(nil)
	_ app.Subscriber        = (*Module)(nil)
	_ app.APIRouter         = (*Module)(nil)
	_ app.PublicRouter      = (*Module)(nil)
	_ app.OpenAPIDocumenter = (*Module)(nil)
	_ app.Runner            = (*Module)(nil)
	_ app.Configurer        = (*Module)(nil)
)

// Settings of the module: where broadcasters publish and how long a live
// show whose publisher dropped waits for it. The outbox of show events is
// kept as the outbox module's settings say (package app/outbox).
const (
	SettingRTMPURL         = "ONAIR_RTMP_URL"
	SettingReconnectWindow = "ONAIR_RECONNECT_WINDOW"
)

func (*Module) Settings() []app.Setting {
	return []app.Setting{
		{Env: SettingRTMPURL, Flag: "rtmp-url", Default: "rtmp://localhost:1935/live",
			Help: "RTMP address given to broadcasters as stream_url", Parse: app.ParseURLSetting(false, "rtmp", "rtmps")},
		{Env: SettingReconnectWindow, Flag: "reconnect-window", Default: "60s",
			Help: "how long a dropped live show waits for its publisher", Parse: app.ParseDuration},
		{Env: SettingListCache, Flag: "shows-list-cache-mb", Default: "64",
			Help: "memory of the cache of show list answers, in MiB; 0 turns it off", Parse: app.ParseNonNegativeInt},
	}
}

// From returns the provisioned shows service of a booted core.
func From(core *app.Core) *Service {
	m, ok := app.Lookup[*Module](core)
	if !ok || m.Service == nil {
		panic("shows: module not provisioned (is modules/shows imported?)")
	}
	return m.Service
}

func (*Module) Name() string { return "shows" }

// Models: the m2m join model first, as Bun requires.
func (*Module) Models() []any {
	return []any{(*ShowTag)(nil), (*Show)(nil), (*Favorite)(nil), (*ShowGram)(nil), (*ShowCount)(nil), (*ShowGeneration)(nil)}
}

// Migrations create the tables and the indexes that serve every list
// filter in list order (see docs/shows.md, "Indexes"). Each list index is
// (filter columns, start, id) followed by the visibility columns (private,
// off, user_id), so the page of ids and the counts are read from the index
// alone, without a row lookup per show walked.
func (*Module) Migrations() []migrations.Migration {
	vis := []string{"private", "off", "user_id"}
	idx := func(id, name string, cols ...string) migrations.Migration {
		return migrations.Migration{ID: id, Up: migrations.CreateIndex((*Show)(nil), name, append(cols, vis...)...)}
	}
	return append([]migrations.Migration{
		{ID: "0001_create_tables", Up: migrations.CreateTables((*Show)(nil), (*ShowTag)(nil), (*Favorite)(nil))},
		{ID: "0002_unique_user_slug", Up: uniqueIndex((*Show)(nil), "shows_user_slug_uq", "user_id", "slug")},
		idx("0003_index_start", "shows_start_idx", "start", "id"),
		{ID: "0004_index_user", Up: migrations.CreateIndex((*Show)(nil), "shows_user_idx", "user_id", "start", "id")},
		idx("0005_index_live", "shows_live_idx", "live", "start", "id"),
		idx("0006_index_state", "shows_state_idx", "complete", "live", "start", "id"),
		idx("0007_index_archive", "shows_archive_idx", "archive", "start", "id"),
		idx("0008_index_featured", "shows_featured_idx", "featured", "start", "id"),
		idx("0009_index_radio", "shows_radio_idx", "radio", "start", "id"),
		idx("0010_index_slug", "shows_slug_idx", "slug", "start", "id"),
		{ID: "0011_index_tag_start", Up: migrations.CreateIndex((*ShowTag)(nil), "show_tags_tag_start_idx", "tag_id", "start", "show_id")},
		{ID: "0012_index_favorites_show", Up: migrations.CreateIndex((*Favorite)(nil), "show_favorites_show_idx", "show_id")},
		{ID: "0013_create_grams", Up: migrations.CreateTables((*ShowGram)(nil))},
		{ID: "0014_backfill_grams", Up: backfillGrams},
		// A rename replaces a show's grams: without this index the delete
		// scans (and on MySQL locks) the whole table.
		{ID: "0015_index_grams_show", Up: migrations.CreateIndex((*ShowGram)(nil), "show_grams_show_idx", "show_id")},
	}, append(outboxMigrations(),
		// Maintained counts (counts.go), filled from the shows there are.
		migrations.Migration{ID: "0019_create_counts", Up: migrations.CreateTables((*ShowCount)(nil))},
		migrations.Migration{ID: "0020_fill_counts", Up: RebuildCounts},
		// One owner's list (GET /v1/users/:id/shows) and a viewer's own
		// hidden shows, paged and counted from the index alone.
		migrations.Migration{ID: "0021_index_user_cover", Up: migrations.CreateIndex((*Show)(nil), userCoverIndex,
			"user_id", "start", "id", "live", "complete", "archive", "featured", "radio", "private", "off")},
		// The name filter's confirmation (search.go): a narrow copy of
		// the columns a list reads, in id order.
		migrations.Migration{ID: "0022_index_name_cover", Up: migrations.CreateIndex((*Show)(nil), nameCoverIndex,
			"id", "name", "start", "private", "off", "user_id", "live", "complete", "archive", "featured", "radio")},
		// The lists' data generation (keyset.go).
		migrations.Migration{ID: "0023_create_generation", Up: createGeneration},
		// The uploaded image of a show (image.go).
		migrations.Migration{ID: "0024_image_key", Up: migrations.AddColumns((*Show)(nil), "image_key")},
		// The show options of docs/show-options.md: a scheduled end,
		// audio-only shows and chat on/off (on for the shows there are).
		migrations.Migration{ID: "0026_show_options", Up: migrations.AddColumns((*Show)(nil), "ends_at", "audio_only", "chat_disabled")},
		// The peak viewers of a show's run (peak.go).
		migrations.Migration{ID: "0028_peak_viewers", Up: migrations.AddColumns((*Show)(nil), "peak_viewers")},
		// The name filter's index on SQLite: FTS5 trigrams (fts.go).
		migrations.Migration{ID: "0030_create_name_fts", Up: createNameFTS},
		// Each show's tag ids in its row (Show.TagIDs).
		migrations.Migration{ID: "0032_tag_ids", Up: func(ctx context.Context, db bun.IDB) error {
			if err := migrations.AddColumns((*Show)(nil), "tag_ids")(ctx, db); err != nil {
				return err
			}
			return fillTagIDs(ctx, db)
		}},
		// The owner's switch of the archive's downloads (Show.DownloadsOff).
		migrations.Migration{ID: "0041_downloads_off", Up: migrations.AddColumns((*Show)(nil), "downloads_off")},
		// The gram rows' copies of their show's name, start and
		// visibility: a term's public matches from one gram's rows
		// (grams.go, matches.go).
		migrations.Migration{ID: "0042_gram_keys", Up: addGramKeys},
		// One owner's shows stored together on MySQL (ownerorder.go).
		migrations.Migration{ID: "0043_cluster_by_owner", Up: clusterByOwner},
		// The favorites of users deleted before their deletion deleted
		// them (userkeeper.go), and the counts that still held them.
		migrations.Migration{ID: "0044_delete_orphan_favorites", Up: deleteOrphanFavorites},
	)...)
}

// Policies: owners update, stop and delete their shows; staff stop, delete,
// feature and take off any show, and edit it in the console ("edit"; the
// API's PUT stays the owner's, as the spec says); only radio-approved
// users create radio shows.
func (*Module) Policies() []string {
	return []string{
		"p, user, shows, create",
		"p, user, shows, favorite",
		"p, radio, shows, create_radio",
		"p, owner, shows, update",
		"p, owner, shows, stop",
		"p, owner, shows, delete",
		"p, moderator, shows, stop",
		"p, moderator, shows, delete",
		"p, moderator, shows, feature",
		"p, moderator, shows, off",
		"p, moderator, shows, edit",
	}
}

func (m *Module) Provision(ctx context.Context, core *app.Core) error {
	um, ok := app.Lookup[*users.Module](core)
	if !ok || um.Service == nil {
		return fmt.Errorf("shows: the users module is not provisioned")
	}
	m.Service = NewService(core)
	m.Service.images = &imageStore{users: um.Service, log: core.Log}
	m.core = core
	if c := m.Service.Lists.cache; c != nil {
		for _, col := range c.collectors() {
			if err := core.Metrics.Register(col); err != nil {
				return fmt.Errorf("shows: metrics: %w", err)
			}
		}
	}
	events.SubscribeTx(core.Events, users.Deleted, m.deleteUserShows)
	m.janitor = newJanitor(m.Service, m.Service.window)
	outbox.Declare(m.Service.outbox, durable)
	return nil
}

// APIRoutes lists the module's /v1 routes in one place.
func (m *Module) APIRoutes(r fiber.Router) {
	h := &handlers{svc: m.Service}
	r.Get("/shows", h.list)
	r.Post("/shows", h.create)
	r.Get("/shows/:id", h.get)
	r.Put("/shows/:id", h.update)
	r.Delete("/shows/:id", h.delete)
	r.Post("/shows/:id/stop", h.stop)
	r.Post("/shows/:id/stream_key", h.regenerateKey)
	r.Get("/shows/:id/health", m.health)
	r.Post("/shows/:id/favorite", h.favorite)
	r.Delete("/shows/:id/favorite", h.unfavorite)
	r.Get("/users/:id/shows", h.userShows)
}

// PublicRoutes serves the placeholder thumbnail of shows without one.
func (m *Module) PublicRoutes(r fiber.Router) {
	r.Get("/media/shows/:id/placeholder.svg", placeholder)
}

//go:embed openapi.json
var openAPI []byte

func (*Module) OpenAPI() []byte { return openAPI }

// Start runs, as a Core.Go loop, the janitor that completes shows whose
// publisher did not come back within the reconnect window, and radio
// shows after 24 hours. The outbox module relays the events.
func (m *Module) Start(context.Context) error {
	m.core.Go("shows: janitor", m.janitor.run)
	return nil
}

// Stop has nothing of its own to release: the kernel stops the loops.
func (*Module) Stop(context.Context) error { return nil }

// uniqueIndex is migrations.CreateIndex for a UNIQUE index.
func uniqueIndex(model any, name string, columns ...string) func(ctx context.Context, db bun.IDB) error {
	return func(ctx context.Context, db bun.IDB) error {
		if _, err := db.NewCreateIndex().Model(model).Unique().Index(name).Column(columns...).Exec(ctx); err != nil {
			return fmt.Errorf("create index %s: %w", name, err)
		}
		return nil
	}
}
