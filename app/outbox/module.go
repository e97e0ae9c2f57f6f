// Package outbox gives every module durable events: an event written in
// the publishing transaction (a row of the outbox table), delivered after
// the commit to the subscribers of its events topic on this node and,
// with Redis, on every other node, once each.
//
// A module declares a durable topic beside its events topic and publishes
// through it:
//
//	var Deleted = events.NewTopic[*Deletion]("users.deleted")
//	var deletedOut = outbox.JSON("users.deleted", Deleted)
//
//	// Provision:
//	m.outbox = outbox.From(core)
//	outbox.Declare(m.outbox, deletedOut)
//
//	// inside the change's transaction (an *events.Tx):
//	err := outbox.Publish(ctx, m.outbox, tx, deletedOut, ev)
//
// Subscribers use the events topic as for any event (events.Subscribe,
// events.SubscribeTx); Remote(ctx) tells a subscriber that the event was
// committed on another node. docs/modules.md, "Durable events", says more;
// docs/operations.md, "Events across nodes", how the relay works.
//
// The package is also a module (it registers itself when a module imports
// it): its settings, the outbox table's migrations, the relay and the
// cleanup, and From for the modules that publish.
package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/onair/onair/app"
	"github.com/onair/onair/migrations"
)

func init() { app.Register(&Module{}) }

// Module is the outbox module. After Provision, Outbox is ready for the
// modules provisioned after it (every module that imports this package).
type Module struct {
	Outbox *Outbox

	core      *app.Core
	retention time.Duration
}

var (
	_ app.Migrator    = (*Module)(nil)
	_ app.Provisioner = (*Module)(nil)
	_ app.Runner      = (*Module)(nil)
	_ app.Configurer  = (*Module)(nil)
)

// Settings of the outbox: how long relayed rows stay, how long the Redis
// stream is, and how often a node sweeps for rows other nodes left.
const (
	SettingRetention = "ONAIR_OUTBOX_RETENTION"
	SettingStreamLen = "ONAIR_EVENTS_STREAM_MAXLEN"
	SettingSweep     = "ONAIR_OUTBOX_SWEEP"
)

// defaultSweepEvery is ONAIR_OUTBOX_SWEEP's default.
const defaultSweepEvery = 30 * time.Second

func (*Module) Name() string { return "outbox" }

func (*Module) Settings() []app.Setting {
	return []app.Setting{
		{Env: SettingRetention, Flag: "outbox-retention", Default: "24h",
			Help: "how long relayed durable events (show changes, user deletions) stay in the outbox table; 0 keeps them", Parse: app.ParseDuration},
		{Env: SettingStreamLen, Flag: "events-stream-maxlen", Default: "10000",
			Help: "about how many durable events the Redis stream keeps (with ONAIR_REDIS_URL)", Parse: app.ParsePositiveInt},
		{Env: SettingSweep, Flag: "outbox-sweep", Default: defaultSweepEvery.String(),
			Help: "how often each node looks for durable events another node committed and did not relay to Redis (it died); a node relays its own at the commit, and sweeps each second while one is left (1s–1h, with ONAIR_REDIS_URL)", Parse: parseSweep},
	}
}

func parseSweep(v string) (any, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d < relayEvery || d > time.Hour {
		return time.Duration(0), fmt.Errorf("must be a duration between 1s and 1h")
	}
	return d, nil
}

// Migrations create the table (the shows module created it first, as
// shows:0016..0018: on those databases these steps find it done).
func (*Module) Migrations() []migrations.Migration {
	return []migrations.Migration{
		{ID: "0001_create_outbox", Up: CreateTable},
		{ID: "0002_index_outbox_relay", Up: IndexRelay},
		{ID: "0003_index_outbox_created", Up: IndexCreated},
	}
}

// From returns the provisioned outbox of a booted core.
func From(core *app.Core) *Outbox {
	m, ok := app.Lookup[*Module](core)
	if !ok || m.Outbox == nil {
		panic("outbox: module not provisioned (is app/outbox imported?)")
	}
	return m.Outbox
}

func (m *Module) Provision(_ context.Context, core *app.Core) error {
	m.core = core
	m.retention = app.Get[time.Duration](core.Config, SettingRetention)
	m.Outbox = New(core.DB, core.Events, core.Clock, core.Log)
	if core.Redis != nil {
		r := newRelay(m.Outbox, core.Redis, core.Config.RedisPrefix+Stream, int64(app.Get[int](core.Config, SettingStreamLen)))
		r.background = core.Background
		r.sweepEvery = app.Get[time.Duration](core.Config, SettingSweep)
		for _, c := range r.collectors() {
			if err := core.Metrics.Register(c); err != nil {
				return fmt.Errorf("outbox: metrics: %w", err)
			}
		}
		m.Outbox.relay = r
	}
	return nil
}

// trimEvery is how often each node trims the outbox.
const trimEvery = time.Minute

// Start runs, as Core.Go loops, the relay (with Redis) and the cleanup of
// old rows (retention 0 keeps every row). The module registers before the
// modules that publish, so it stops after them: the relay still takes
// their last commits.
func (m *Module) Start(ctx context.Context) error {
	o := m.Outbox
	if r := o.relay; r != nil {
		// The reader starts where the stream stands now: the events
		// committed from here on reach this node.
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		r.position(pctx)
		cancel()
		m.core.Go("outbox: event relay", r.run)
	}
	if m.retention > 0 {
		m.core.Go("outbox: cleanup", func(ctx context.Context) {
			app.Every(ctx, trimEvery, func(ctx context.Context) {
				if _, err := o.Trim(ctx, o.clock.Stamp().Add(-m.retention), true); err != nil && ctx.Err() == nil {
					o.log.Error("outbox: cleanup", "err", err)
				}
			})
		})
	}
	return nil
}

// Stop has nothing of its own to release: the kernel stops the loops.
func (*Module) Stop(context.Context) error { return nil }
