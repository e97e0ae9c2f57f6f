// Package restream is the restream module: a user registers destinations
// (an RTMP or RTMPS URL with its stream key: YouTube, Twitch, another
// OnAir, any RTMP server) and every live show of theirs is pushed to each
// enabled one as it arrives, without transcoding. The push is a reader of
// the live module's stream core (pusher.go) with the rtmp package's
// client; it retries a destination that drops, with backoff, and stops
// when the publication ends. Keys are stored encrypted with the install's
// secret (crypt.go) and shown masked. See docs/broadcasting.md,
// "Restreaming".
package restream

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	_ "embed"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
	"github.com/onair/onair/migrations"
	"github.com/onair/onair/modules/live"
	"github.com/onair/onair/modules/shows"
	"github.com/onair/onair/modules/webhooks"
)

func init() { app.Register(&Module{}) }

// Module is the restream module.
type Module struct {
	db     *bun.DB
	clock  *app.Clock // the kernel's
	authz  *app.Authz
	log    *slog.Logger
	public string
	// allowPrivate is ONAIR_WEBHOOK_ALLOW_PRIVATE: the same guard as the
	// webhooks' keeps destinations off private addresses.
	allowPrivate bool
	keys         *keyBox

	// ctx ends when the module stops: every push ends with it.
	ctx    context.Context
	cancel context.CancelFunc

	mu sync.Mutex
	// pubs are the publications this node ingests, by show, with their
	// pushers.
	pubs    map[int64]*publication
	metrics *metrics
	// backoff is the first pause before a retry (tests shorten it).
	backoff time.Duration
	// roots, when set, are the certificate authorities rtmps://
	// destinations are checked against instead of the system's (tests).
	roots *x509.CertPool
}

var (
	_ app.Modeler           = (*Module)(nil)
	_ app.Migrator          = (*Module)(nil)
	_ app.Policier          = (*Module)(nil)
	_ app.Provisioner       = (*Module)(nil)
	_ app.APIRouter         = (*Module)(nil)
	_ app.OpenAPIDocumenter = (*Module)(nil)
	_ app.Runner            = (*Module)(nil)
	_ shows.HealthAdder     = (*Module)(nil)
)

func (*Module) Name() string { return "restream" }

func (*Module) Models() []any { return []any{(*Destination)(nil)} }

func (*Module) Migrations() []migrations.Migration {
	return []migrations.Migration{
		{ID: "0001_create_tables", Up: migrations.CreateTables((*Destination)(nil))},
		{ID: "0002_index_destinations_user", Up: migrations.CreateIndex((*Destination)(nil), "restream_destinations_user_idx", "user_id", "id")},
	}
}

// Policies: every user manages their own destinations (the owner
// relation).
func (*Module) Policies() []string {
	return []string{
		"p, user, destinations, create",
		"p, owner, destinations, read",
		"p, owner, destinations, update",
		"p, owner, destinations, delete",
	}
}

// keySecret names the install's secret the stream keys are encrypted with.
const keySecret = "restream.keys"

func (m *Module) Provision(ctx context.Context, core *app.Core) error {
	m.db, m.clock, m.authz, m.log, m.public = core.DB, core.Clock, core.Authz, core.Log, core.Config.PublicURL
	m.allowPrivate = app.Get[bool](core.Config, webhooks.SettingAllowPrivate)
	keyCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	secret, err := core.Secret(keyCtx, keySecret)
	cancel()
	if err != nil {
		return fmt.Errorf("restream: key secret: %w", err)
	}
	if m.keys, err = newKeyBox(secret); err != nil {
		return err
	}
	// Pushes begin with publications, which may come before Start: their
	// context is the kernel's, ended by Stop.
	m.ctx, m.cancel = context.WithCancel(core.Context())
	m.pubs = map[int64]*publication{}
	m.backoff = time.Second
	lm, ok := app.Lookup[*live.Module](core)
	if !ok {
		return fmt.Errorf("restream: the live module is not provisioned")
	}
	lm.OnPublish(m.published)
	m.metrics, err = newMetrics(core.Metrics, m)
	return err
}

// APIRoutes lists the module's /v1 routes.
func (m *Module) APIRoutes(r fiber.Router) {
	r.Get("/destinations", m.list)
	r.Post("/destinations", m.create)
	r.Get("/destinations/:id", m.get)
	r.Put("/destinations/:id", m.update)
	r.Delete("/destinations/:id", m.delete)
}

//go:embed openapi.json
var openAPI []byte

func (*Module) OpenAPI() []byte { return openAPI }

// Start has nothing to start: pushes begin with publications.
func (m *Module) Start(context.Context) error { return nil }

// Stop ends every push and waits for them (bounded by ctx).
func (m *Module) Stop(ctx context.Context) error {
	m.cancel()
	m.mu.Lock()
	var all []*pusher
	for _, p := range m.pubs {
		for _, ps := range p.pushers {
			all = append(all, ps)
		}
	}
	m.mu.Unlock()
	for _, ps := range all {
		select {
		case <-ps.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// SetRoots makes rtmps:// destinations be checked against these
// certificate authorities instead of the system's (tests, with a
// self-signed certificate).
func (m *Module) SetRoots(pool *x509.CertPool) {
	m.mu.Lock()
	m.roots = pool
	m.mu.Unlock()
}

// tlsConfig is the TLS configuration of rtmps:// pushes: nil, the
// system's roots, unless SetRoots.
func (m *Module) tlsConfig() *tls.Config {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.roots == nil {
		return nil
	}
	return &tls.Config{RootCAs: m.roots}
}

// SetBackoff sets the first pause before a destination is retried (tests).
func (m *Module) SetBackoff(d time.Duration) {
	m.mu.Lock()
	m.backoff = d
	m.mu.Unlock()
}
