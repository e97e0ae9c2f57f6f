// Package admin is the staff console at /admin: sign-in, sessions, CSRF,
// login throttling, the layout every page shares, the dashboard and the
// audit log. The pages themselves come from the modules (app.AdminPager);
// the console knows no module by name and imports none: it signs staff in
// through the kernel's app.Accounts, which the users module provides.
//
// A module adds a page by returning app.AdminPage values from AdminPages,
// rendering with Page (the layout), putting CSRFField in every form (or
// using Form and Button), checking Casbin through the same service calls as
// its API, and recording every change with Log.
package admin

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/csrf"
	"github.com/onair/onair/migrations"
)

func init() { app.Register(&Module{}) }

// Prefix is where the console is mounted.
const Prefix = "/admin"

// Module is the staff console.
type Module struct {
	core     *app.Core
	accounts app.Accounts
	csrf     *csrf.Guard
	pages    []app.AdminPage
}

var (
	_ app.Modeler       = (*Module)(nil)
	_ app.Migrator      = (*Module)(nil)
	_ app.Policier      = (*Module)(nil)
	_ app.Provisioner   = (*Module)(nil)
	_ app.PublicRouter  = (*Module)(nil)
	_ app.AdminPager    = (*Module)(nil)
	_ app.AdminWidgeter = (*Module)(nil)
)

func (*Module) Name() string { return "admin" }

func (*Module) Models() []any { return []any{(*Entry)(nil)} }

func (*Module) Migrations() []migrations.Migration {
	return []migrations.Migration{
		{ID: "0001_create_audit_log", Up: migrations.CreateTables((*Entry)(nil))},
		{ID: "0002_index_audit_actor", Up: migrations.CreateIndex((*Entry)(nil), "audit_log_actor_idx", "actor_id", "id")},
		{ID: "0003_index_audit_target", Up: migrations.CreateIndex((*Entry)(nil), "audit_log_target_idx", "target", "id")},
	}
}

// Policies: staff enter the console; moderators read the audit log too, so
// every staff member can see who did what.
func (*Module) Policies() []string {
	return []string{
		"p, moderator, admin, enter",
		"p, moderator, audit, read",
	}
}

func (m *Module) Provision(ctx context.Context, core *app.Core) error {
	if core.Accounts == nil {
		return fmt.Errorf("admin: no module keeps accounts (app.Accounts) to sign staff in")
	}
	guard, err := csrf.New(core.Config.PublicURL)
	if err != nil {
		return err
	}
	m.core, m.accounts, m.csrf = core, core.Accounts, guard
	return nil
}

// AdminPages: the console's own pages, the dashboard and the audit log.
func (m *Module) AdminPages() []app.AdminPage {
	return []app.AdminPage{
		{Path: "", Title: "Dashboard", Order: 0, Mount: func(r fiber.Router) { r.Get("/", m.dashboard) }},
		{Path: "/audit", Title: "Audit log", Order: 90, Object: "audit", Action: "read",
			Mount: func(r fiber.Router) { r.Get("/", m.auditPage) }},
	}
}

// PublicRoutes mounts the console. Everything under /admin renders errors
// as HTML pages; only the stylesheet and the sign-in form are reachable
// without a session, and only staff get past the session check.
func (m *Module) PublicRoutes(r fiber.Router) {
	m.pages = m.collectPages()
	g := r.Group(Prefix, m.renderErrors, securityHeaders)
	g.Get("/assets/"+cssName, serveCSS)
	g.Get("/login", m.loginForm)
	g.Post("/login", m.login)
	g.Use(m.session)
	g.Post("/logout", m.logout)
	g.Use(m.staffOnly)
	for _, p := range m.pages {
		sub := g.Group(p.Path)
		if p.Object != "" {
			sub.Use(requirePage(p))
		}
		p.Mount(sub)
	}
	g.Use(func(c *fiber.Ctx) error { return app.NotFound("page") })
}

// collectPages gathers the pages of every module, sorted by Order then
// title. A page without a Mount or with a duplicate path fails loudly at
// start-up, since it is a programming error.
func (m *Module) collectPages() []app.AdminPage {
	var pages []app.AdminPage
	seen := map[string]string{}
	for _, mod := range m.core.Modules {
		ap, ok := mod.(app.AdminPager)
		if !ok {
			continue
		}
		for _, p := range ap.AdminPages() {
			if p.Mount == nil {
				panic(fmt.Sprintf("admin: module %s: page %q has no Mount", mod.Name(), p.Path))
			}
			if p.Path != "" && (!strings.HasPrefix(p.Path, "/") || strings.HasSuffix(p.Path, "/")) {
				panic(fmt.Sprintf("admin: module %s: page path %q must start and not end with /", mod.Name(), p.Path))
			}
			if other, dup := seen[p.Path]; dup {
				panic(fmt.Sprintf("admin: page %q of module %s is already mounted by %s", p.Path, mod.Name(), other))
			}
			seen[p.Path] = mod.Name()
			pages = append(pages, p)
		}
	}
	sort.SliceStable(pages, func(i, j int) bool {
		if pages[i].Order != pages[j].Order {
			return pages[i].Order < pages[j].Order
		}
		return pages[i].Title < pages[j].Title
	})
	return pages
}

// requirePage answers 403 to staff whom Casbin does not allow the page.
func requirePage(p app.AdminPage) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if !Current(c).Can(p.Object, p.Action) {
			return app.Forbidden("you may not open " + p.Title)
		}
		return c.Next()
	}
}
