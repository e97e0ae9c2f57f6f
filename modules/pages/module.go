// Package pages is the public web side of OnAir: server-rendered templ
// pages for listeners and broadcasters (home, a show's page with its player
// and live chat, a user's page, the embeddable player, sign up and sign in,
// the account page with API tokens and stream keys). It owns no table: it
// reads and writes through the users, shows and chat services, and the live
// chat itself is the chat module's public WebSocket.
//
// A show's page lives at its url, /{user_slug}/{show_slug}, and a user's at
// /{user_slug}. Those two routes are catch-alls: they are mounted last, and
// a first segment that is reserved (the kernel reserves the first segment
// of every route, app.Core.ReservedSlug) or names no user falls through to
// whatever route comes after them, so they never shadow /v1, /admin,
// /media, /ws, /healthz and the rest.
package pages

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/csrf"
	"github.com/onair/onair/modules/chat"
	"github.com/onair/onair/modules/notify"
	"github.com/onair/onair/modules/shows"
	"github.com/onair/onair/modules/stats"
	"github.com/onair/onair/modules/users"
	"github.com/onair/onair/site"
)

func init() { app.Register(&Module{}) }

// Module is the pages module.
type Module struct {
	clock *app.Clock // the kernel's
	// nav is the header's navigation of signed-in visitors (sitepages.go).
	nav    []site.NavItem
	users  *users.Service
	shows  *shows.Service
	chat   *chat.Service
	assets assets
	csrf   *csrf.Guard
	public string // ONAIR_PUBLIC_URL
	rtmp   string // ONAIR_RTMP_URL, the stream url shown to owners
	log    *slog.Logger
	notify *notify.Module // go-live mails; nil without the module
	// healthOf is a show's stream health (shows.Module.HealthOf).
	healthOf func(sh *shows.Show) shows.Health
	// stats charts a show in the studio (stats.go); nil without it.
	stats *stats.Module
	// following hands show events to the pages' event streams (follow.go).
	following following
	// modules are the boot's modules, whose site pages and account
	// sections the pages host (sitepages.go).
	modules []app.Module
}

var (
	_ app.Provisioner  = (*Module)(nil)
	_ app.PublicRouter = (*Module)(nil)
)

func (*Module) Name() string { return "pages" }

// Provision finds the services the pages work through. Those modules'
// packages are imported here, so they are provisioned first.
func (m *Module) Provision(ctx context.Context, core *app.Core) error {
	um, ok := app.Lookup[*users.Module](core)
	if !ok || um.Service == nil {
		return fmt.Errorf("pages: the users module is not provisioned")
	}
	cm, ok := app.Lookup[*chat.Module](core)
	if !ok || cm.Service == nil {
		return fmt.Errorf("pages: the chat module is not provisioned")
	}
	assets, err := loadAssets()
	if err != nil {
		return err
	}
	if m.csrf, err = csrf.New(core.Config.PublicURL); err != nil {
		return err
	}
	m.clock, m.users, m.shows, m.chat = core.Clock, um.Service, shows.From(core), cm.Service
	m.healthOf = func(sh *shows.Show) shows.Health {
		return shows.Health{PeakViewers: sh.PeakViewers, Warnings: []string{}}
	}
	if sm, ok := app.Lookup[*shows.Module](core); ok {
		m.healthOf = sm.HealthOf
	}
	m.assets, m.public, m.rtmp, m.log = assets, core.Config.PublicURL, app.Get[string](core.Config, shows.SettingRTMPURL), core.Log
	m.modules = core.Modules
	m.stats, _ = app.Lookup[*stats.Module](core)
	m.notify, _ = app.Lookup[*notify.Module](core)
	m.shows.Subscribe(m.following.event)
	return nil
}

// PublicRoutes lists every route of the pages, the catch-alls last.
func (m *Module) PublicRoutes(r fiber.Router) {
	r.Get("/static/:file", m.assets.serve)

	r.Get("/", m.page(m.home))
	r.Get("/embed/:id", m.page(m.embed))
	r.Get("/docs", m.page(m.docs))
	r.Get("/events/shows", m.page(m.showEvents))

	r.Get("/signup", m.page(m.signUpForm))
	r.Post("/signup", m.page(m.signUp))
	r.Get("/signin", m.page(m.signInForm))
	r.Post("/signin", m.page(m.signIn))
	r.Post("/signout", m.page(m.signOut))
	r.Get("/forgot", m.page(m.forgotForm))
	r.Post("/forgot", m.page(m.forgot))
	r.Get("/reset/:token", m.page(m.resetForm))
	r.Post("/reset/:token", m.page(m.resetPassword))

	r.Get("/account", m.page(m.account))
	r.Post("/account/tokens", m.page(m.createToken))
	r.Post("/account/notifications", m.page(m.setNotifications))
	r.Post("/account/tokens/:id/revoke", m.page(m.revokeToken))
	r.Post("/account/shows/:id/key", m.page(m.revealKey))
	r.Post("/account/shows/:id/key/regenerate", m.page(m.regenerateKey))
	r.Get("/account/profile", m.page(m.profileForm))
	r.Post("/account/profile", m.page(m.saveProfile))
	r.Post("/account/password", m.page(m.changePassword))
	r.Post("/account/radio", m.page(m.requestRadio))

	r.Get("/studio", m.page(m.studio))
	r.Get("/studio/shows/new", m.page(m.newShowForm))
	r.Post("/studio/shows", m.page(m.createShowForm))
	r.Get("/studio/shows/:id", m.page(m.studioShow))
	r.Post("/studio/shows/:id", m.page(m.updateShowForm))
	r.Post("/studio/shows/:id/stop", m.page(m.stopShowForm))
	r.Get("/studio/shows/:id/delete", m.page(m.deleteShowConfirm))
	r.Post("/studio/shows/:id/delete", m.page(m.deleteShowForm))
	r.Get("/studio/shows/:id/health", m.page(m.health))
	r.Get("/studio/shows/:id/stats", m.page(m.showStats))
	r.Post("/studio/shows/:id/key", m.page(m.studioKey))
	r.Post("/studio/shows/:id/key/regenerate", m.page(m.studioRegenerate))

	r.Post("/follow/:id", m.page(m.follow))

	// JSON for the chat script: post as the session's user, and the
	// messages of an archive to replay.
	r.Post("/chat/:id", m.postChat)
	r.Get("/chat/:id/replay", m.replayChat)
	r.Post("/chat/:id/messages/:mid/delete", m.deleteMessage)
	r.Post("/chat/:id/users/:uid/ban", m.banUser)

	// The modules' own pages (app.SitePager), before the catch-alls.
	m.mountSitePages(r)

	// Catch-alls, last.
	r.Get("/:user", m.page(m.userPage))
	r.Get("/:user/:show", m.page(m.showPage))
}
