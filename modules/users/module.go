// Package users is the users module: the User resource of the v1 API, API
// tokens (it is the kernel's Authenticator), following, tags, and the
// "users create" and "tokens create" commands, its pages of the staff
// console (users, radio approvals) and the kernel's app.Accounts (staff
// sign-in and sessions).
package users

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
	"github.com/onair/onair/app/events"
	"github.com/onair/onair/app/outbox"
	"github.com/onair/onair/internal/imaging"
	"github.com/onair/onair/migrations"
)

func init() { app.Register(&Module{}) }

// Module is the users module. After Provision, Service is ready for other
// modules (shows, chat, admin) to use.
type Module struct {
	Service *Service

	core    *app.Core
	bus     *events.Bus // Subscribe: the boot's, from the migrations on
	authz   *app.Authz
	console *console
}

var (
	_ app.Modeler           = (*Module)(nil)
	_ app.Migrator          = (*Module)(nil)
	_ app.Policier          = (*Module)(nil)
	_ app.Provisioner       = (*Module)(nil)
	_ app.Subscriber        = (*Module)(nil)
	_ app.APIRouter         = (*Module)(nil)
	_ app.PublicRouter      = (*Module)(nil)
	_ app.Commander         = (*Module)(nil)
	_ app.Authenticator     = (*Module)(nil)
	_ app.OpenAPIDocumenter = (*Module)(nil)
	_ app.Runner            = (*Module)(nil)
	_ app.SessionReader     = (*Module)(nil)
	_ app.Configurer        = (*Module)(nil)
)

// Settings of the module: the token cache, the profile image limit, the
// sign-up limit (throttle.go) and the mail of reset links (mail.go).
func (*Module) Settings() []app.Setting {
	return []app.Setting{
		{Env: SettingTokenCacheTTL, Flag: "token-cache-ttl", Default: "5s",
			Help: "how long a node trusts an API token it has looked up (a revocation elsewhere shows within it; 0: look up every request)", Parse: app.ParseDuration},
		{Env: SettingImageMaxBytes, Flag: "image-max-bytes", Default: strconv.Itoa(DefaultImageMaxBytes),
			Help: "largest uploaded image (avatar, cover, show image) accepted, in bytes; beyond, 413", Parse: app.ParsePositiveInt},
		{Env: SettingImageDecodeMB, Flag: "image-decode-mb", Default: strconv.Itoa(DefaultImageDecodeMB),
			Help: "memory the image decodes in flight may hold together, in MB (uploaded avatars, covers, show images); an image whose decode alone needs more is 422, one that waits over 5 s for its share is 503 with Retry-After", Parse: app.ParsePositiveInt},
		{Env: SettingSignupLimit, Flag: "signup-limit", Default: strconv.Itoa(DefaultSignupLimit),
			Help: "sign-up attempts one client address may make per hour (accepted or not); beyond, 429 with Retry-After", Parse: app.ParsePositiveInt},
		{Env: SettingSMTPURL, Flag: "smtp-url",
			Help: "mail server for password reset links (smtp://user:pass@host:587 upgrades with STARTTLS when offered, smtps://…:465 is TLS throughout); unset: no mail, staff make reset links", Parse: parseSMTPURL},
		{Env: SettingSMTPFrom, Flag: "smtp-from",
			Help: "sender of the reset mails, e.g. OnAir <onair@example.com> (default: onair@ the host of ONAIR_PUBLIC_URL)", Parse: parseFrom},
	}
}

func (*Module) Name() string { return "users" }

func (*Module) Models() []any {
	return []any{(*UserTag)(nil), (*User)(nil), (*Tag)(nil), (*Token)(nil), (*Follow)(nil), (*Session)(nil), (*PasswordReset)(nil)}
}

func (m *Module) Migrations() []migrations.Migration {
	return []migrations.Migration{
		{ID: "0001_create_tables", Up: migrations.CreateTables(
			(*User)(nil), (*Tag)(nil), (*UserTag)(nil), (*Token)(nil), (*Follow)(nil))},
		{ID: "0002_index_followers", Up: migrations.CreateIndex((*User)(nil), "users_followers_idx", "followers_count", "id")},
		{ID: "0003_index_tokens_user", Up: migrations.CreateIndex((*Token)(nil), "tokens_user_idx", "user_id")},
		{ID: "0004_index_follows_followed", Up: migrations.CreateIndex((*Follow)(nil), "follows_followed_idx", "followed_id")},
		{ID: "0005_create_sessions", Up: migrations.CreateTables((*Session)(nil))},
		{ID: "0006_tag_identity", Up: func(ctx context.Context, db bun.IDB) error { return migrateTagIdentity(ctx, db, m.bus) }},
		{ID: "0007_profile", Up: migrateProfile},
		{ID: "0008_password_resets", Up: migrations.CreateTables((*PasswordReset)(nil))},
		{ID: "0009_tag_slugs", Up: migrateTagSlugs},
		// A profile's tags in the order they were given (older links: 0,
		// then by identity).
		{ID: "0010_tag_position", Up: migrations.AddColumns((*UserTag)(nil), "position")},
		// The follows of users deleted before deletions deleted them.
		{ID: "0011_delete_orphan_follows", Up: deleteOrphanFollows},
	}
}

// Policies: staff manage users; only admins change roles and manage the
// tokens of other staff (a token of an admin is an admin); every user may
// ask for the radio approval.
func (*Module) Policies() []string {
	return []string{
		"p, user, users, request_radio",
		"p, moderator, users, update",
		"p, moderator, users, approve_radio",
		"p, moderator, users, create",
		"p, moderator, tokens, manage",
		"p, admin, users, set_role",
		"p, admin, tokens, manage_staff",
		"p, moderator, users, suspend",
		"p, moderator, users, reset_password",
		"p, admin, users, delete",
	}
}

func (m *Module) Provision(ctx context.Context, core *app.Core) error {
	m.Service = NewService(core.DB, core.Config.PublicURL)
	m.Service.reader = core.ReadDB()
	m.Service.clock = core.Clock
	m.Service.bus = core.Events
	m.Service.outbox = outbox.From(core)
	outbox.Declare(m.Service.outbox, deletedOut)
	events.Subscribe(core.Events, Deleted, m.Service.tokensOfDeleted)
	m.Service.ReserveFrom(core)
	m.Service.signupLimit = app.Get[int](core.Config, SettingSignupLimit)
	m.Service.signups = newMemoryThrottle(m.Service.signupLimit, SignupWindow)
	if core.Redis != nil {
		m.Service.UseRedisThrottle(core.Redis, core.Config.RedisPrefix)
	}
	m.Service.hintOut = core.Stderr
	m.Service.tokens = &tokenCache{ttl: app.Get[time.Duration](core.Config, SettingTokenCacheTTL), log: core.Log}
	if core.Redis != nil && m.Service.tokens.ttl > 0 {
		m.Service.tokens.rdb = core.Redis
		m.Service.tokens.channel = core.Config.RedisPrefix + "tokens:invalidate"
	}
	m.Service.store = core.Store
	m.Service.maxImage = app.Get[int](core.Config, SettingImageMaxBytes)
	m.Service.images = imaging.NewDecoder(int64(app.Get[int](core.Config, SettingImageDecodeMB))<<20, imageDecodeWait)
	mailer, err := newMailer(app.Get[string](core.Config, SettingSMTPURL), app.Get[string](core.Config, SettingSMTPFrom), core.Config.PublicURL, core.Log)
	if err != nil {
		return err
	}
	m.Service.mail = mailer
	m.core = core
	m.authz = core.Authz
	m.console = newConsole(core, m.Service)
	return nil
}

// Routes of the module, in one place.
func (m *Module) APIRoutes(r fiber.Router) {
	h := &handlers{svc: m.Service, authz: m.authz}
	r.Get("/users", h.list)
	r.Post("/users/me/radio_request", h.requestRadio)
	r.Put("/users/:id", h.updateMe)
	r.Get("/users/:id", h.get)
	r.Post("/users/:id/follow", h.follow)
	r.Delete("/users/:id/follow", h.unfollow)
}

func (m *Module) PublicRoutes(r fiber.Router) {
	r.Get("/media/users/:id/avatar.svg", avatar)
	r.Get("/media/users/:id/cover.svg", cover)
	r.Get("/media/users/:id/:file", m.Service.serveImage)
}

func (m *Module) Authenticate(ctx context.Context, token string) (*app.Principal, error) {
	return m.Service.Authenticate(ctx, token)
}

//go:embed openapi.json
var openAPI []byte

func (*Module) OpenAPI() []byte { return openAPI }

func (m *Module) Commands() []app.Command { return commands() }

// Start listens for the other nodes' token invalidations (with Redis) and
// prints the first-run hint when nobody has an account yet.
func (m *Module) Start(ctx context.Context) error {
	if mail := m.Service.mail; mail != nil {
		m.core.Go("users: mail", mail.run)
	}
	if c := m.Service.tokens; c != nil && c.rdb != nil {
		ready := make(chan struct{})
		m.core.Go("users: token invalidations", func(ctx context.Context) { c.listen(ctx, ready) })
		select {
		case <-ready:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	n, err := m.Service.db.NewSelect().Model((*User)(nil)).Count(ctx)
	if err != nil {
		return fmt.Errorf("users: count: %w", err)
	}
	if n == 0 {
		printFirstRunHint(m.Service.hintOut, m.Service.publicURL)
	}
	return nil
}

// Stop has nothing of its own to release: the mail worker and the
// invalidation listener are Core.Go loops, which the kernel stops (mails
// still queued are dropped; their senders ask again).
func (*Module) Stop(context.Context) error { return nil }

func printFirstRunHint(w io.Writer, publicURL string) {
	fmt.Fprintf(w, `
  OnAir has no users yet. It serves %[1]s:

    %[1]s/signup   make an account in the browser (DJs start here)
    %[1]s/admin    the staff console, for users with the admin role

  Or from a terminal, an admin and an API token:

    onair users create --name "Your Name" --email you@example.com --password 'a long secret' --role admin
    onair tokens create --user you@example.com
    curl -H "Authorization: Bearer <token>" %[1]s/v1/users/me

  (from a source checkout: go run . users create ..., go run . tokens create ...)
  onair help lists every command and setting.

`, publicURL)
}
