// Package notify is the notify module: when a show goes live, each of its
// owner's followers who wants it gets one mail naming the show and the DJ,
// with a link (docs/api.md, "Go-live mail"). The switch is per follow (on
// for a new follow; PUT /v1/users/:id/follow {"notify": false}) and per
// account; every mail carries RFC 8058 one-click unsubscribe headers.
//
// The mails are queued durably: the go-live's own transaction writes a job
// (so a go-live that commits is never forgotten and one that rolls back
// mails no one), the worker of any node expands it into one row per
// follower (unique per show and follower: a reconnect, a second node or a
// retry never mails twice) and sends them through ONAIR_SMTP_URL at
// ONAIR_NOTIFY_MAIL_RATE a node. Without ONAIR_SMTP_URL nothing is queued.
package notify

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/app"
	"github.com/onair/onair/app/events"
	"github.com/onair/onair/migrations"
	"github.com/onair/onair/modules/shows"
	"github.com/onair/onair/modules/users"
)

func init() { app.Register(&Module{}) }

// Module is the notify module.
type Module struct {
	core  *app.Core
	users *users.Service
	shows *shows.Service
	// mail is set when ONAIR_SMTP_URL is: without it nothing is queued.
	mail   bool
	rate   int // mails a minute this node sends at most
	signer signer

	wake chan struct{}
}

var (
	_ app.Configurer        = (*Module)(nil)
	_ app.Modeler           = (*Module)(nil)
	_ app.Migrator          = (*Module)(nil)
	_ app.Provisioner       = (*Module)(nil)
	_ app.APIRouter         = (*Module)(nil)
	_ app.PublicRouter      = (*Module)(nil)
	_ app.OpenAPIDocumenter = (*Module)(nil)
	_ app.Runner            = (*Module)(nil)
)

// SettingMailRate bounds the go-live mails one node sends a minute.
const SettingMailRate = "ONAIR_NOTIFY_MAIL_RATE"

func (*Module) Settings() []app.Setting {
	return []app.Setting{
		{Env: SettingMailRate, Flag: "notify-mail-rate", Default: "60",
			Help: "go-live mails one node sends a minute at most (with ONAIR_SMTP_URL)", Parse: app.ParsePositiveInt},
	}
}

func (*Module) Name() string { return "notify" }

func (*Module) Models() []any {
	return []any{(*Mute)(nil), (*AccountMute)(nil), (*Job)(nil), (*Mail)(nil)}
}

func (*Module) Migrations() []migrations.Migration {
	return []migrations.Migration{
		{ID: "0001_create_tables", Up: migrations.CreateTables((*Mute)(nil), (*AccountMute)(nil), (*Job)(nil), (*Mail)(nil))},
		{ID: "0002_unique_mail", Up: migrations.CreateUniqueIndex((*Mail)(nil), "notify_mails_show_user_uq", "show_id", "user_id")},
		{ID: "0003_index_mail_due", Up: migrations.CreateIndex((*Mail)(nil), "notify_mails_due_idx", "status", "next_at")},
		{ID: "0004_index_job_pending", Up: migrations.CreateIndex((*Job)(nil), "notify_jobs_pending_idx", "expanded_at")},
		// The mutes of a user deleted, by followed_id (forget.go).
		{ID: "0005_index_mutes_followed", Up: migrations.CreateIndex((*Mute)(nil), "notify_mutes_followed_idx", "followed_id")},
		{ID: "0006_delete_orphans", Up: deleteOrphans},
		// A job's failed expansions, retried with a backoff (worker.go).
		{ID: "0007_job_retries", Up: migrations.AddColumns((*Job)(nil), "attempts", "next_at", "last_error", "failed_at")},
	}
}

// unsubscribeSecret names the key of the one-click unsubscribe links among
// the install's secrets.
const unsubscribeSecret = "notify.unsubscribe"

func (m *Module) Provision(ctx context.Context, core *app.Core) error {
	um, ok := app.Lookup[*users.Module](core)
	if !ok || um.Service == nil {
		return fmt.Errorf("notify: the users module is not provisioned")
	}
	m.core, m.users, m.shows = core, um.Service, shows.From(core)
	m.mail = app.Get[string](core.Config, users.SettingSMTPURL) != ""
	m.rate = app.Get[int](core.Config, SettingMailRate)
	keyCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	key, err := core.Secret(keyCtx, unsubscribeSecret)
	cancel()
	if err != nil {
		return fmt.Errorf("notify: unsubscribe key: %w", err)
	}
	m.signer = signer{key: key}
	m.wake = make(chan struct{}, 1)
	// A new follow starts with notifications on, whatever an earlier
	// follow of the same user was set to.
	events.SubscribeTx(core.Events, users.Followed, func(ctx context.Context, tx *events.Tx, f users.Follow) error {
		_, err := tx.NewDelete().Model((*Mute)(nil)).Where("follower_id = ? AND followed_id = ?", f.FollowerID, f.FollowedID).Exec(ctx)
		return err
	})
	// A deleted user's switches and a deleted show's job go in the
	// delete's transaction, mail or not (forget.go).
	events.SubscribeTx(core.Events, users.Deleted, m.forgetUser)
	m.shows.SubscribeTx(m.onShowTx)
	if m.mail {
		m.shows.Subscribe(func(_ context.Context, ev shows.Event) {
			if ev.Type == shows.EventLive && !ev.Remote {
				m.Wake()
			}
		})
	}
	return nil
}

func (m *Module) APIRoutes(r fiber.Router) {
	h := &handlers{m: m}
	r.Get("/users/:id/follow", h.getFollow)
	r.Put("/users/:id/follow", h.putFollow)
	r.Get("/notifications", h.getAccount)
	r.Put("/notifications", h.putAccount)
}

func (m *Module) PublicRoutes(r fiber.Router) {
	r.Get("/unsubscribe/:token", m.unsubscribePage)
	r.Post("/unsubscribe/:token", m.unsubscribe)
}

//go:embed openapi.json
var openAPI []byte

func (*Module) OpenAPI() []byte { return openAPI }

// Start runs the mail worker (with ONAIR_SMTP_URL), a Core.Go loop: when
// the module stops, a mail being sent is finished or, cut off, sent again
// later (its claim lapses).
func (m *Module) Start(context.Context) error {
	if m.mail {
		m.core.Go("notify: mail worker", m.run)
	}
	return nil
}

// Stop has nothing of its own to release (the worker is a Core.Go loop).
func (*Module) Stop(context.Context) error { return nil }

// Wake makes the worker look for work now rather than at its next poll.
func (m *Module) Wake() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}
