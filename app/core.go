package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/uptrace/bun"

	"github.com/onair/onair/app/events"
	"github.com/onair/onair/internal/store"
	"github.com/onair/onair/migrations"
)

// Version is set at build time with -ldflags "-X github.com/onair/onair/app.Version=…".
var Version = "dev"

// Core is what the kernel hands every module in Provision: the shared
// dependencies, passed explicitly.
type Core struct {
	Config *Config
	// DB is the database: every write, and every read that must see the
	// request's own writes. On SQLite it is one connection.
	DB *bun.DB
	// Reader, when not nil, reads the same database beside DB: on a
	// SQLite file, a pool of read-only connections that WAL lets read
	// while DB's one connection writes (OpenReader). Only hot reads that
	// need no write of their own request use it (ReadDB).
	Reader *bun.DB
	Log    *slog.Logger
	Authz  *Authz
	Redis  *redis.Client // nil unless ONAIR_REDIS_URL is set
	// RedisState says whether Redis is away (nil without Redis).
	RedisState *RedisState
	Modules    []Module
	Auth       Authenticator
	// Accounts signs people in and keeps their browser sessions (the
	// users module); nil when no module of the build keeps accounts.
	Accounts Accounts
	// Store keeps media objects (recordings, thumbnails, images): files
	// in the data dir, or the store ONAIR_STORAGE_URL names.
	Store store.Store
	// Metrics is the Prometheus registry of this boot, served at /metrics.
	// It holds the Go and process collectors and the HTTP server's
	// figures; modules register their own collectors here in Provision.
	Metrics *prometheus.Registry
	// Stderr receives notices meant for the person at the terminal (the
	// first-run hint): the command's stderr, never nil after Boot.
	Stderr io.Writer
	// Clock is the boot's one clock: modules read the time from it, and
	// tests move it (BootOptions.Clock, Clock.Set).
	Clock *Clock
	// Events is the boot's event bus (package app/events): modules
	// subscribe in Subscribe or Provision and publish their topics.
	Events *events.Bus

	run runState // background loops (Go)

	reserved map[string]bool // first path segments of the routes (ReservedSlug)
	secrets  secrets         // per-install secrets read so far (Secret)
	// kernelMigrated counts the kernel's steps Boot applied when told to
	// skip migrations (onair migrate reports them with the modules').
	kernelMigrated int
}

// URL makes an absolute URL on the public base.
func (c *Core) URL(path string) string { return c.Config.PublicURL + path }

// BootOptions tune Boot for tests and one-shot commands.
type BootOptions struct {
	// SkipMigrations leaves the schema alone (onair migrate runs them itself).
	SkipMigrations bool
	Log            *slog.Logger
	// Stderr becomes Core.Stderr (default os.Stderr).
	Stderr io.Writer
	// QueryHooks see every statement of the database handle the core and
	// its modules share (tests count statements with them).
	QueryHooks []bun.QueryHook
	// Clock is what Core.Clock reads (default the system's time).
	Clock func() time.Time
}

// Boot opens the database and Redis, registers models, runs migrations,
// builds the enforcer from every module's policy lines, provisions the
// modules and reads back the paths their routes take (ReservedSlug). It is
// the common start of every command.
func Boot(ctx context.Context, cfg *Config, opts BootOptions) (*Core, error) {
	log := opts.Log
	if log == nil {
		log = NewLogger(os.Stderr, cfg)
	}
	core := &Core{Config: cfg, Log: log, Modules: fresh(Modules()), Stderr: opts.Stderr, Metrics: newMetricsRegistry(),
		Clock: NewClock(opts.Clock), Events: events.NewBus(log)}
	if core.Stderr == nil {
		core.Stderr = os.Stderr
	}
	if len(core.Modules) == 0 {
		return nil, errors.New("app: no modules registered (is the modules import missing from main.go?)")
	}
	db, err := OpenDB(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, err
	}
	for _, h := range opts.QueryHooks {
		db = db.WithQueryHook(h)
	}
	core.DB = db
	fail := func(err error) (*Core, error) {
		core.Close()
		return nil, err
	}
	reader, err := OpenReader(ctx, cfg.DatabaseURL)
	if err != nil {
		return fail(err)
	}
	if reader != nil {
		for _, h := range opts.QueryHooks {
			reader = reader.WithQueryHook(h)
		}
		core.Reader = reader
	}
	for _, m := range core.Modules {
		if sb, ok := m.(Subscriber); ok {
			sb.Subscribe(core.Events)
		}
	}
	for _, m := range core.Modules {
		if md, ok := m.(Modeler); ok {
			db.RegisterModel(md.Models()...)
			if core.Reader != nil {
				core.Reader.RegisterModel(md.Models()...)
			}
		}
	}
	if opts.SkipMigrations {
		// Modules may ask for secrets in Provision: the kernel's own
		// tables exist even when the command migrates the modules itself.
		if core.kernelMigrated, err = migrations.Run(ctx, db, []migrations.Set{kernelSet}, log); err != nil {
			return fail(err)
		}
	} else if _, err := core.Migrate(ctx); err != nil {
		return fail(err)
	}
	lines := map[string][]string{}
	for _, m := range core.Modules {
		if p, ok := m.(Policier); ok {
			lines["module "+m.Name()] = p.Policies()
		}
	}
	if core.Authz, err = NewAuthz(lines); err != nil {
		return fail(err)
	}
	st, err := OpenStore(ctx, cfg.StorageURL)
	if err != nil {
		return fail(err)
	}
	if core.Store, err = store.Instrument(st, core.Metrics); err != nil {
		return fail(fmt.Errorf("app: store metrics: %w", err))
	}
	if cfg.RedisURL != "" {
		ropts, err := redis.ParseURL(cfg.RedisURL)
		if err != nil {
			return fail(fmt.Errorf("config: ONAIR_REDIS_URL: %w", err))
		}
		redis.SetLogger(redisLogger{log})
		core.Redis = redis.NewClient(ropts)
		core.RedisState = newRedisState(log)
		core.Redis.AddHook(core.RedisState)
		if err := core.Redis.Ping(ctx).Err(); err != nil {
			return fail(fmt.Errorf("redis: %s does not answer: %w", ropts.Addr, err))
		}
	}
	for _, m := range core.Modules {
		if a, ok := m.(Authenticator); ok {
			if core.Auth != nil {
				return fail(fmt.Errorf("app: two modules authenticate tokens (second: %s)", m.Name()))
			}
			core.Auth = a
		}
		if a, ok := m.(Accounts); ok {
			if core.Accounts != nil {
				return fail(fmt.Errorf("app: two modules keep accounts (second: %s)", m.Name()))
			}
			core.Accounts = a
		}
	}
	for _, m := range core.Modules {
		if p, ok := m.(Provisioner); ok {
			if err := p.Provision(ctx, core); err != nil {
				return fail(fmt.Errorf("module %s: provision: %w", m.Name(), err))
			}
		}
	}
	if core.Auth == nil {
		return fail(errors.New("app: no module authenticates tokens"))
	}
	core.reserved = reserveRoutes(core)
	return core, nil
}

// OpenStore opens the media store ONAIR_STORAGE_URL names: a directory
// (file://) or a bucket of an S3-compatible store (s3://), created when
// missing. Wrong keys or an unreachable store stop start-up here, with a
// message that names the variable.
func OpenStore(ctx context.Context, raw string) (store.Store, error) {
	if strings.HasPrefix(raw, "s3:") {
		cfg, err := store.ParseS3URL(raw)
		if err != nil {
			return nil, fmt.Errorf("config: ONAIR_STORAGE_URL: %w", err)
		}
		s, err := store.NewS3(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("config: ONAIR_STORAGE_URL (s3 at %s, bucket %s): %w", cfg.Endpoint, cfg.Bucket, err)
		}
		return s, nil
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "file" {
		return nil, fmt.Errorf("config: ONAIR_STORAGE_URL: must be file:///absolute/path or s3://ACCESS:SECRET@host:port/bucket")
	}
	s, err := store.NewLocal(u.Path)
	if err != nil {
		return nil, fmt.Errorf("config: ONAIR_STORAGE_URL: %w", err)
	}
	return s, nil
}

// Migrate applies every module's pending migrations.
func (c *Core) Migrate(ctx context.Context) (int, error) {
	sets := []migrations.Set{kernelSet}
	for _, m := range c.Modules {
		if mg, ok := m.(Migrator); ok {
			sets = append(sets, migrations.Set{Module: m.Name(), Migrations: mg.Migrations()})
		}
	}
	return migrations.Run(ctx, c.DB, sets, c.Log)
}

// Close stops the kernel's background loops (a command's; the server
// stops its own first) and releases the database and Redis connections.
func (c *Core) Close() {
	stopCtx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	if err := c.StopBackground(stopCtx); err != nil {
		c.Log.Error("close", "err", err)
	}
	cancel()
	if c.Redis != nil {
		c.Redis.Close()
	}
	if c.Reader != nil {
		c.Reader.Close()
	}
	if c.DB != nil {
		c.DB.Close()
	}
}

// ReadDB is the handle of the hot reads that may run beside the writes
// (a publisher's stream key check, the show lists): Reader when there is
// one, else DB. A read there sees every transaction committed before it
// began (SQLite's WAL, MySQL's autocommit), never a transaction still
// open, so a request's own writes are read on DB or in its transaction.
func (c *Core) ReadDB() *bun.DB {
	if c.Reader != nil {
		return c.Reader
	}
	return c.DB
}

// NewLogger builds the process logger from the log settings.
func NewLogger(w io.Writer, cfg *Config) *slog.Logger {
	level := slog.LevelInfo
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
