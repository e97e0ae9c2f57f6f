// Package webhooks is the webhooks module: users register HTTPS endpoints
// that receive signed notifications (Standard Webhooks) of their shows'
// changes, of chat on them and of new followers. Deliveries are written in
// the transaction of the change that causes them and sent, retried and
// recorded by a worker on every node. See docs/webhooks.md.
package webhooks

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
	"github.com/onair/onair/migrations"
	"github.com/onair/onair/modules/chat"
	"github.com/onair/onair/modules/shows"
	"github.com/onair/onair/modules/users"
)

func init() { app.Register(&Module{}) }

// Module is the webhooks module.
type Module struct {
	db     *bun.DB
	authz  *app.Authz
	log    *slog.Logger
	public string
	shows  *shows.Service
	chat   *chat.Service
	users  *users.Service

	cfg  settings
	node string // this process's name in leases

	// clock is the kernel's (tests move it: Core.Clock.Set).
	clock *app.Clock

	wake    chan struct{}
	client  *clientSet
	metrics *metrics

	cancel context.CancelFunc
	done   chan struct{}
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
)

func (*Module) Name() string { return "webhooks" }

// Settings of the module.
const (
	SettingAllowPrivate = "ONAIR_WEBHOOK_ALLOW_PRIVATE"
	SettingTimeout      = "ONAIR_WEBHOOK_TIMEOUT"
	SettingMaxAttempts  = "ONAIR_WEBHOOK_MAX_ATTEMPTS"
	SettingDisableAfter = "ONAIR_WEBHOOK_DISABLE_AFTER"
	SettingWorkers      = "ONAIR_WEBHOOK_WORKERS"
	SettingPoll         = "ONAIR_WEBHOOK_POLL"
	SettingRetention    = "ONAIR_WEBHOOK_RETENTION"
)

type settings struct {
	allowPrivate bool
	timeout      time.Duration
	maxAttempts  int
	disableAfter time.Duration
	workers      int
	poll         time.Duration
	retention    time.Duration
}

func (*Module) Settings() []app.Setting {
	return []app.Setting{
		{Env: SettingAllowPrivate, Flag: "webhook-allow-private", Default: "false",
			Help: "let webhooks and restream destinations reach loopback, private, link-local and metadata addresses (local development and tests only)", Parse: app.ParseBoolSetting},
		{Env: SettingTimeout, Flag: "webhook-timeout", Default: "10s",
			Help: "how long one webhook delivery attempt may take", Parse: parseDurationAtLeast(100 * time.Millisecond)},
		{Env: SettingMaxAttempts, Flag: "webhook-max-attempts", Default: "9",
			Help: "attempts per webhook delivery (the first and the retries) before it is marked failed", Parse: app.ParsePositiveInt},
		{Env: SettingDisableAfter, Flag: "webhook-disable-after", Default: "72h",
			Help: "a webhook whose deliveries have failed without a success for this long is disabled", Parse: parseDurationAtLeast(time.Second)},
		{Env: SettingWorkers, Flag: "webhook-workers", Default: "4",
			Help: "webhook deliveries this node sends at once (one on SQLite)", Parse: app.ParsePositiveInt},
		{Env: SettingPoll, Flag: "webhook-poll", Default: "30s",
			Help: "how often each node looks for webhook deliveries it was not told of (other nodes' left-overs); its own are sent at once and at their retry times", Parse: parseDurationAtLeast(10 * time.Millisecond)},
		{Env: SettingRetention, Flag: "webhook-retention", Default: "720h",
			Help: "how long succeeded and failed webhook deliveries (and their attempts) are kept", Parse: parseDurationAtLeast(time.Hour)},
	}
}

func parseDurationAtLeast(least time.Duration) func(string) (any, error) {
	return func(v string) (any, error) {
		d, err := time.ParseDuration(v)
		if err != nil || d < least {
			return time.Duration(0), fmt.Errorf("must be a duration of at least %s", least)
		}
		return d, nil
	}
}

func (*Module) Models() []any { return []any{(*Webhook)(nil), (*Attempt)(nil), (*Delivery)(nil)} }

func (*Module) Migrations() []migrations.Migration {
	return []migrations.Migration{
		{ID: "0001_create_tables", Up: migrations.CreateTables((*Webhook)(nil), (*Delivery)(nil), (*Attempt)(nil))},
		{ID: "0002_index_webhooks_user", Up: migrations.CreateIndex((*Webhook)(nil), "webhooks_user_idx", "user_id", "id")},
		{ID: "0003_index_deliveries_due", Up: migrations.CreateIndex((*Delivery)(nil), "webhook_deliveries_due_idx", "status", "next_attempt_at")},
		{ID: "0004_index_deliveries_webhook", Up: migrations.CreateIndex((*Delivery)(nil), "webhook_deliveries_webhook_idx", "webhook_id", "id")},
		{ID: "0005_unique_deliveries_event", Up: migrations.CreateUniqueIndex((*Delivery)(nil), "webhook_deliveries_event_uq", "webhook_id", "event_id")},
		{ID: "0006_index_attempts_delivery", Up: migrations.CreateIndex((*Attempt)(nil), "webhook_attempts_delivery_idx", "delivery_id", "id")},
	}
}

// Policies: every user manages their own webhooks (the owner relation);
// only admins may subscribe to every show (scope "all"); staff see the
// failing webhooks in the console.
func (*Module) Policies() []string {
	return []string{
		"p, user, webhooks, create",
		"p, owner, webhooks, read",
		"p, owner, webhooks, update",
		"p, owner, webhooks, delete",
		"p, admin, webhooks, scope_all",
		"p, moderator, webhooks, console",
	}
}

func (m *Module) Provision(ctx context.Context, core *app.Core) error {
	m.db, m.authz, m.log, m.public = core.DB, core.Authz, core.Log, core.Config.PublicURL
	m.shows = shows.From(core)
	cm, ok := app.Lookup[*chat.Module](core)
	if !ok || cm.Service == nil {
		return errors.New("webhooks: the chat module is not provisioned")
	}
	m.chat = cm.Service
	um, ok := app.Lookup[*users.Module](core)
	if !ok || um.Service == nil {
		return errors.New("webhooks: the users module is not provisioned")
	}
	m.users = um.Service
	m.cfg = settings{
		allowPrivate: app.Get[bool](core.Config, SettingAllowPrivate),
		timeout:      app.Get[time.Duration](core.Config, SettingTimeout),
		maxAttempts:  app.Get[int](core.Config, SettingMaxAttempts),
		disableAfter: app.Get[time.Duration](core.Config, SettingDisableAfter),
		workers:      app.Get[int](core.Config, SettingWorkers),
		poll:         app.Get[time.Duration](core.Config, SettingPoll),
		retention:    app.Get[time.Duration](core.Config, SettingRetention),
	}
	if !app.IsMySQL(core.DB) {
		m.cfg.workers = 1
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	m.node = hex.EncodeToString(b)
	m.clock = core.Clock
	m.wake = make(chan struct{}, 1)
	m.client = newClientSet(m.cfg.timeout, m.cfg.allowPrivate)
	m.subscribe(core.Events)
	var err error
	m.metrics, err = newMetrics(core.Metrics, m)
	return err
}

// now reads the kernel's clock, which tests of retries and of the failure
// window move (Core.Clock.Set).
func (m *Module) now() time.Time { return m.clock.Now() }

// Wake asks the local workers to look for due deliveries now.
func (m *Module) Wake() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// APIRoutes lists the module's /v1 routes.
func (m *Module) APIRoutes(r fiber.Router) {
	r.Get("/webhooks", m.list)
	r.Post("/webhooks", m.create)
	r.Get("/webhooks/:id", m.get)
	r.Put("/webhooks/:id", m.update)
	r.Delete("/webhooks/:id", m.delete)
	r.Post("/webhooks/:id/secret", m.rotate)
	r.Post("/webhooks/:id/ping", m.ping)
	r.Get("/webhooks/:id/deliveries", m.deliveries)
	r.Post("/webhooks/:id/deliveries/:delivery_id/retry", m.retry)
}

//go:embed openapi.json
var openAPI []byte

func (*Module) OpenAPI() []byte { return openAPI }

// Start runs the delivery workers of this node, until Stop (which tests
// also call to hold deliveries back).
func (m *Module) Start(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	m.cancel, m.done = cancel, make(chan struct{})
	go func() {
		defer close(m.done)
		m.run(ctx)
	}()
	return nil
}

// Stop ends the workers; a delivery being sent finishes (or times out)
// first, so its outcome is recorded.
func (m *Module) Stop(ctx context.Context) error {
	if m.cancel == nil {
		return nil
	}
	m.cancel()
	select {
	case <-m.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type metrics struct {
	deliveries *prometheus.CounterVec
	latency    prometheus.Histogram
	disabled   prometheus.Counter
	backlog    prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer, m *Module) (*metrics, error) {
	mt := &metrics{
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "onair_webhook_deliveries_total",
			Help: "Webhook delivery attempts made by this node, by result: success (2xx), http_error (any other status), network_error (timeout, refused, TLS), blocked (address refused by the private-address guard).",
		}, []string{"result"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "onair_webhook_delivery_duration_seconds",
			Help:    "Time of webhook delivery attempts, from connecting to the end of the response.",
			Buckets: []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}),
		disabled: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "onair_webhooks_disabled_total",
			Help: "Webhooks this node disabled after failing for ONAIR_WEBHOOK_DISABLE_AFTER.",
		}),
		backlog: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "onair_webhook_backlog",
			Help: "Webhook deliveries waiting to be sent (pending, due or not), as this node last counted them.",
		}),
	}
	for _, r := range []string{"success", "http_error", "network_error", "blocked"} {
		mt.deliveries.WithLabelValues(r)
	}
	return mt, errors.Join(reg.Register(mt.deliveries), reg.Register(mt.latency), reg.Register(mt.disabled), reg.Register(mt.backlog))
}
