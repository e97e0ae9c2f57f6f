// Package chat is the chat module: chat messages of a show (REST), a
// realtime room per show over WebSocket with presence of registered and
// anonymous viewers, moderation (delete, ban, slow mode), in one process or
// across nodes through Redis.
package chat

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/onair/onair/app"
	"github.com/onair/onair/app/events"
	"github.com/onair/onair/migrations"
	"github.com/onair/onair/modules/shows"
	"github.com/onair/onair/modules/users"
)

func init() { app.Register(&Module{}) }

// Module is the chat module; Service is ready after Provision.
type Module struct {
	Service *Service

	core   *app.Core
	shows  *shows.Service
	users  *users.Service
	hub    *Hub
	ctx    context.Context
	cancel context.CancelFunc

	// sockets counts the open web sockets per client address, capped at
	// ONAIR_MAX_SOCKETS_PER_IP; refused counts the upgrades refused.
	sockets    *addrCount
	maxSockets int
	refused    prometheus.Counter
}

var (
	_ app.Modeler           = (*Module)(nil)
	_ app.Migrator          = (*Module)(nil)
	_ app.Policier          = (*Module)(nil)
	_ app.Provisioner       = (*Module)(nil)
	_ app.APIRouter         = (*Module)(nil)
	_ app.PublicRouter      = (*Module)(nil)
	_ app.Runner            = (*Module)(nil)
	_ app.OpenAPIDocumenter = (*Module)(nil)
	_ app.Configurer        = (*Module)(nil)
)

// SettingMaxSocketsPerIP caps the chat web sockets of one client address.
// A household behind one NAT, every member with a few tabs open, stays far
// below the default; a script opening sockets by the thousand does not.
const SettingMaxSocketsPerIP = "ONAIR_MAX_SOCKETS_PER_IP"

func (*Module) Settings() []app.Setting {
	return []app.Setting{
		{Env: SettingMaxSocketsPerIP, Flag: "max-sockets-per-ip", Default: "32",
			Help: "chat web sockets one client address may hold open; beyond, the upgrade answers 429", Parse: app.ParsePositiveInt},
	}
}

func (*Module) Name() string { return "chat" }

func (*Module) Models() []any { return []any{(*Message)(nil), (*Ban)(nil), (*Settings)(nil)} }

func (*Module) Migrations() []migrations.Migration {
	return []migrations.Migration{
		{ID: "0001_create_tables", Up: migrations.CreateTables((*Message)(nil), (*Ban)(nil), (*Settings)(nil))},
		{ID: "0002_index_show_created", Up: migrations.CreateIndex((*Message)(nil), "chat_messages_show_idx", "show_id", "created_at", "id")},
		{ID: "0003_index_bans_user", Up: migrations.CreateIndex((*Ban)(nil), "chat_bans_user_idx", "user_id", "show_id")},
	}
}

// Policies: staff moderate every chat, a show's owner (the "host"
// relation) their own show's; authors may take back their own messages.
func (*Module) Policies() []string {
	return []string{
		"p, author, chat, delete",
		"p, host, chat, delete",
		"p, host, chat, ban",
		"p, moderator, chat, delete",
		"p, moderator, chat, ban",
		"p, moderator, chat, slow_mode",
	}
}

func (m *Module) Provision(ctx context.Context, core *app.Core) error {
	m.core = core
	m.shows = shows.From(core)
	um, ok := app.Lookup[*users.Module](core)
	if !ok {
		return fmt.Errorf("chat: the users module is missing")
	}
	m.users = um.Service
	var rate RateGate = newMemoryGate()
	if core.Redis != nil {
		node := uuid.NewString()
		m.hub = NewSharedHub(
			&redisBus{rdb: core.Redis, channel: core.Config.RedisPrefix + "chat:events"},
			&redisPresence{rdb: core.Redis, prefix: core.Config.RedisPrefix + "chat:", node: node},
			core.Log)
		m.hub.away = core.RedisState.Down
		rate = &redisGate{rdb: core.Redis, prefix: core.Config.RedisPrefix + "chat:", local: newMemoryGate(), away: core.RedisState.Down}
	} else {
		m.hub = NewLocalHub(core.Log)
	}
	if sm, ok := app.Lookup[*shows.Module](core); ok {
		m.hub.audience = sm.Audience
	}
	keyCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	secret, err := core.Secret(keyCtx, viewerSecret)
	cancel()
	if err != nil {
		return fmt.Errorf("chat: viewer key: %w", err)
	}
	// The sockets' context: the kernel's, ended by Stop.
	m.ctx, m.cancel = context.WithCancel(core.Context())
	m.Service = &Service{
		db: core.DB, shows: m.shows, users: m.users, authz: core.Authz, rate: rate,
		hub: m.hub, public: core.Config.PublicURL, nowFunc: core.Clock.Now, bus: core.Events, log: core.Log,
		viewers: newViewerKeys(secret, secureURL(core.Config.PublicURL)),
	}
	m.hub.mayView = m.mayView
	m.hub.metrics = newHubMetrics()
	m.shows.Subscribe(m.onShowEvent)
	events.SubscribeTx(core.Events, users.Deleted, m.forgetUser)
	m.sockets = &addrCount{n: map[string]int{}}
	m.maxSockets = app.Get[int](core.Config, SettingMaxSocketsPerIP)
	m.refused = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "onair_chat_sockets_refused_total",
		Help: "Chat web sockets refused because their client address holds ONAIR_MAX_SOCKETS_PER_IP already.",
	})
	return errors.Join(
		core.Metrics.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "onair_chat_connections",
			Help: "Chat web sockets open on this node.",
		}, func() float64 { return float64(m.hub.Sockets()) })),
		core.Metrics.Register(m.refused),
		core.Metrics.Register(m.hub.metrics.flush),
		core.Metrics.Register(m.hub.metrics.delivery),
	)
}

// mayView loads a changed show once and answers who may still see it; a
// show that is gone (or cannot be read) is seen by nobody.
func (m *Module) mayView(ctx context.Context, showID int64) func(*app.Principal) bool {
	sh, err := m.shows.Get(ctx, showID)
	if err != nil {
		return func(*app.Principal) bool { return false }
	}
	return func(p *app.Principal) bool { return p != nil && m.shows.CanView(sh, p) }
}

// onShowEvent tells a show's room that the show changed. Hidden states
// (off, deleted) carry no show details; a deleted show's messages go with
// it. An event from another node (Remote) is not published again: the
// node that made the change published it, and the hub fans it out to
// every node over Redis; the idempotent database work runs anyway.
func (m *Module) onShowEvent(ctx context.Context, ev shows.Event) {
	if !ev.Remote {
		// Only a public show's details go to the room: everyone in it
		// may be anyone, and a private show's view carries signed media
		// URLs. Sockets that may no longer see the show are dropped as
		// the event arrives.
		out := Event{Type: EventShowUpdated, State: ev.Type}
		if ev.Type != shows.EventDeleted {
			on := !ev.Show.ChatDisabled
			out.ChatEnabled = &on
		}
		if ev.Type != shows.EventDeleted && !ev.Show.Private && !ev.Show.Off {
			out.Show = m.shows.View(ev.Show, false)
		}
		m.hub.Publish(ctx, ev.Show.ID, out)
	}
	if ev.Type == shows.EventDeleted {
		if err := m.Service.deleteShow(ctx, ev.Show.ID); err != nil {
			m.core.Log.Error("chat: delete messages of a deleted show", "show", ev.Show.ID, "err", err)
		}
	}
}

// Routes of the module, in one place.
func (m *Module) APIRoutes(r fiber.Router) {
	h := &handlers{m: m}
	r.Get("/shows/:id/chats", h.list)
	r.Post("/shows/:id/chats", h.post)
	r.Get("/shows/:show_id/chats/:id", h.get)
	r.Delete("/shows/:show_id/chats/:id", h.remove)
	r.Get("/shows/:id/chat_users", h.chatUsers)
	r.Get("/shows/:id/chat/socket", m.apiSocket, m.upgrade)
}

func (m *Module) PublicRoutes(r fiber.Router) {
	r.Get("/ws/shows/:id", m.webSocket, m.upgrade)
}

//go:embed openapi.json
var openAPI []byte

func (*Module) OpenAPI() []byte { return openAPI }

// Start runs the hub, a Core.Go loop: the bus subscription and presence
// refreshes.
func (m *Module) Start(context.Context) error {
	m.core.Go("chat: hub", func(ctx context.Context) {
		m.hub.run(ctx, presenceTTL/3) // drops every socket as it ends
		m.cancel()
	})
	m.core.Log.Debug("chat hub started", "shared", m.core.Redis != nil)
	return nil
}

// Stop has nothing of its own to release: the kernel then stops the hub,
// which closes every socket and ends their context.
func (*Module) Stop(context.Context) error { return nil }

// Hub is the module's realtime hub (benchmarks and the pages use it).
func (m *Module) Hub() *Hub { return m.hub }
