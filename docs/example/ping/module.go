// Package ping records pings: the worked example of an OnAir module that
// docs/modules.md quotes. It is compiled and tested with the rest of the
// tree (ping_test.go) but not part of the binary: copy it to modules/ping
// and add its import to modules/modules.go to enable it.
package ping

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
	"github.com/onair/onair/migrations"
)

func init() { app.Register(&Module{}) }

// Module is the ping module; its dependencies arrive in Provision.
type Module struct {
	db        *bun.DB
	authz     *app.Authz
	log       *slog.Logger
	publicURL string
	retention time.Duration // ONAIR_PING_RETENTION
	core      *app.Core
}

var (
	_ app.Configurer        = (*Module)(nil)
	_ app.Modeler           = (*Module)(nil)
	_ app.Migrator          = (*Module)(nil)
	_ app.Policier          = (*Module)(nil)
	_ app.Provisioner       = (*Module)(nil)
	_ app.APIRouter         = (*Module)(nil)
	_ app.OpenAPIDocumenter = (*Module)(nil)
	_ app.AdminPager        = (*Module)(nil)
	_ app.Runner            = (*Module)(nil)
	_ app.Commander         = (*Module)(nil)
)

func (*Module) Name() string { return "ping" }

// SettingRetention is how long pings are kept.
const SettingRetention = "ONAIR_PING_RETENTION"

// Settings: the kernel reads ONAIR_PING_RETENTION (or -ping-retention) with
// its own settings, stops start-up on a bad value naming it, and lists it in
// onair help. Provision reads the parsed value with app.Get.
func (*Module) Settings() []app.Setting {
	return []app.Setting{{
		Env: SettingRetention, Flag: "ping-retention", Default: "168h",
		Help: "how long pings are kept before the janitor deletes them",
		Parse: func(v string) (any, error) {
			d, err := time.ParseDuration(v)
			if err != nil || d < time.Hour {
				return time.Duration(0), fmt.Errorf("must be a duration of 1h or more, such as 168h")
			}
			return d, nil
		},
	}}
}

// Ping is one recorded ping.
type Ping struct {
	bun.BaseModel `bun:"table:pings,alias:pg"`

	ID        int64     `bun:"id,pk,autoincrement"`
	UserID    int64     `bun:"user_id,notnull"`
	Note      string    `bun:"note,notnull,type:varchar(100)"`
	CreatedAt time.Time `bun:"created_at,notnull"`
}

func (*Module) Models() []any { return []any{(*Ping)(nil)} }

func (*Module) Migrations() []migrations.Migration {
	return []migrations.Migration{
		{ID: "0001_create_pings", Up: migrations.CreateTables((*Ping)(nil))},
		{ID: "0002_index_user", Up: migrations.CreateIndex((*Ping)(nil), "pings_user_idx", "user_id", "id")},
	}
}

// Policies: every user may ping; only staff may purge.
func (*Module) Policies() []string {
	return []string{
		"p, user, pings, create",
		"p, moderator, pings, purge",
	}
}

func (m *Module) Provision(ctx context.Context, core *app.Core) error {
	m.db, m.authz, m.log, m.publicURL, m.core = core.DB, core.Authz, core.Log, core.Config.PublicURL, core
	m.retention = app.Get[time.Duration](core.Config, SettingRetention)
	return nil
}

// Routes, in one place.
func (m *Module) APIRoutes(r fiber.Router) {
	r.Post("/pings", m.create)
	r.Get("/pings", m.list)
}

// create is POST /v1/pings with an optional note (JSON, form or multipart).
func (m *Module) create(c *fiber.Ctx) error {
	in, err := app.ReadInput(c)
	if err != nil {
		return err
	}
	note, _, err := in.String("note")
	if err != nil {
		return err
	}
	ping, err := m.record(c.UserContext(), app.CurrentPrincipal(c), note)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"ping": view(ping)})
}

// record stores a ping of p: the API and the public page's form both
// come here, so they check and refuse alike.
func (m *Module) record(ctx context.Context, p *app.Principal, note string) (*Ping, error) {
	if err := m.authz.Can(p, "pings", "create"); err != nil {
		return nil, err
	}
	if len(note) > 100 {
		return nil, app.Validation{"note": "must be at most 100 characters"}.Err()
	}
	ping := &Ping{UserID: p.UserID, Note: note, CreatedAt: m.core.Clock.Stamp()}
	if _, err := m.db.NewInsert().Model(ping).Exec(ctx); err != nil {
		return nil, fmt.Errorf("ping: create: %w", err)
	}
	return ping, nil
}

// list is GET /v1/pings: the caller's pings, newest first, 20 a page.
func (m *Module) list(c *fiber.Ctx) error {
	page, err := app.ParsePage(c, 20)
	if err != nil {
		return err
	}
	var pings []Ping
	n, err := m.db.NewSelect().Model(&pings).Where("user_id = ?", app.CurrentPrincipal(c).UserID).
		Order("id DESC").Limit(int64(page.Size)).Offset(int64(page.Offset())).ScanAndCount(c.UserContext())
	if err != nil {
		return fmt.Errorf("ping: list: %w", err)
	}
	views := make([]fiber.Map, 0, len(pings))
	for i := range pings {
		views = append(views, view(&pings[i]))
	}
	return app.NewList(c, m.publicURL, page, int(n), "pings", views).Send(c)
}

func view(p *Ping) fiber.Map {
	return fiber.Map{"id": p.ID, "note": p.Note, "created_at": app.Timestamp(p.CreatedAt)}
}

func (*Module) OpenAPI() []byte { return openAPI }

// openAPI documents the module's routes. The kernel adds 401, 429 and 500
// to every operation (and 400, 413, 415 where there is a request body).
var openAPI = []byte(`{
  "paths": {
    "/v1/pings": {
      "post": {
        "operationId": "createPing", "tags": ["ping"],
        "requestBody": {"content": {"application/json": {"schema": {"type": "object", "properties": {"note": {"type": "string", "maxLength": 100}}}}}},
        "responses": {
          "200": {"description": "The new ping.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/PingEnvelope"}}}},
          "403": {"$ref": "#/components/responses/Error"},
          "422": {"$ref": "#/components/responses/Error"}
        }
      },
      "get": {
        "operationId": "listPings", "tags": ["ping"],
        "parameters": [{"$ref": "#/components/parameters/page"}],
        "responses": {
          "200": {"description": "A page of pings.", "content": {"application/json": {"schema": {
            "type": "object", "additionalProperties": false,
            "required": ["page", "next_url", "prev_url", "pages", "count", "pings"],
            "properties": {
              "page": {"type": "integer"}, "pages": {"type": "integer"}, "count": {"type": "integer"},
              "next_url": {"type": ["string", "null"]}, "prev_url": {"type": ["string", "null"]},
              "pings": {"type": "array", "items": {"$ref": "#/components/schemas/Ping"}}
            }}}}},
          "400": {"$ref": "#/components/responses/Error"}
        }
      }
    }
  },
  "components": {"schemas": {
    "Ping": {"type": "object", "additionalProperties": false, "required": ["id", "note", "created_at"],
      "properties": {"id": {"type": "integer"}, "note": {"type": "string"}, "created_at": {"$ref": "#/components/schemas/Timestamp"}}},
    "PingEnvelope": {"type": "object", "additionalProperties": false, "required": ["ping"],
      "properties": {"ping": {"$ref": "#/components/schemas/Ping"}}}
  }}
}`)

// Start runs a janitor that deletes the pings older than the retention,
// hourly: a Core.Go loop, whose ctx ends when the module stops and which
// the kernel waits for then.
func (m *Module) Start(ctx context.Context) error {
	m.core.Go("ping: janitor", func(ctx context.Context) {
		app.Every(ctx, time.Hour, func(ctx context.Context) {
			if _, err := m.purge(ctx, m.retention); err != nil && ctx.Err() == nil {
				m.log.Error("ping janitor", "err", err)
			}
		})
	})
	return nil
}

// Stop has nothing of its own to release: the kernel ends the janitor.
func (m *Module) Stop(ctx context.Context) error { return nil }

// purge deletes the pings older than age and says how many it deleted.
func (m *Module) purge(ctx context.Context, age time.Duration) (int64, error) {
	res, err := m.db.NewDelete().Model((*Ping)(nil)).Where("created_at < ?", m.core.Clock.Stamp().Add(-age)).Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("ping: purge: %w", err)
	}
	n, _ := res.RowsAffected()
	m.log.Info("pings purged", "count", n)
	return n, nil
}

// Commands: "onair pings purge --older-than 24h".
func (m *Module) Commands() []app.Command {
	return []app.Command{{
		Name:  "pings purge",
		Usage: "delete old pings; prints how many",
		Flags: func(fs *flag.FlagSet) func(context.Context, *app.Core, io.Writer) error {
			age := fs.Duration("older-than", 0, "age of the pings to delete (default: ONAIR_PING_RETENTION)")
			return func(ctx context.Context, core *app.Core, stdout io.Writer) error {
				// Commands run on a booted core; this module's own instance
				// is the one provisioned there.
				self, _ := app.Lookup[*Module](core)
				if *age <= 0 {
					*age = self.retention
				}
				n, err := self.purge(ctx, *age)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(stdout, "%d pings purged\n", n)
				return err
			}
		},
	}}
}
