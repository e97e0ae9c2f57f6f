package app

import (
	"context"
	"flag"
	"fmt"
	"io"
	"reflect"
	"sync"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/app/events"
	"github.com/onair/onair/internal/svgchart"
	"github.com/onair/onair/migrations"
)

// Module is the one thing every OnAir module is: something with a unique name.
// Everything else a module can do is an optional ability, an extra interface
// below that the kernel discovers by type assertion.
//
// Lifecycle of a module, in order (Boot runs Models to Reserved names for
// every command; onair serve adds Routes, Start and Stop):
//
//	init()          the package calls Register(&Module{}).
//	Settings        the module's settings are read with the kernel's, from
//	                the environment and flags, before anything boots; a bad
//	                value stops the command naming the variable or flag.
//	Subscriptions   each Subscriber gets the boot's event bus (Core.Events)
//	                and subscribes, so it hears the events published from
//	                here on, migrations included (a tag merge).
//	Models          models are registered with Bun (m2m join tables first).
//	Migrations      pending steps run, module by module (see Migrator).
//	Policies        the module's Casbin lines are parsed into the one enforcer.
//	Provision       the module receives the boot's context and the Core (DB,
//	                config, authz, logger, clock, events, store, Redis,
//	                metrics...), after the media store and Redis are opened
//	                and the one Authenticator is found.
//	Reserved names  every module's routes are mounted on a scratch Fiber app
//	                and their first path segments reserved as user slugs
//	                (Core.ReservedSlug).
//	Routes          the server mounts /v1 routes (behind auth), then public
//	                routes; the console mounts the admin pages
//	                (AdminPager), the site host (modules/pages) the site's
//	                public and account pages (SitePager, AccountSectioner).
//	Start           background work starts (Runner), in registration order,
//	                when the server begins to serve; the ctx Start gets
//	                lives until the module stops, and the loops it runs
//	                with Core.Go belong to it.
//	Stop            runners stop, in reverse order, once the server has
//	                stopped taking requests on shutdown: each module's Stop,
//	                then its context ends and its Core.Go loops are awaited.
//
// Every step from Models on walks the modules in registration order (Stop
// in reverse), which is Go's package initialisation order: a module that
// imports another module's package is always registered after it, so its
// dependencies are migrated and provisioned first.
type Module interface {
	Name() string
}

// Configurer declares the module's settings: ONAIR_* variables and flags
// (the flag is the variable's name: ONAIR_PING_RETENTION, -ping-retention)
// that the kernel reads, validates with Setting.Parse (a bad value stops
// the command naming the variable or flag) and lists in onair help;
// README.md lists them too, which a test checks for the modules of the
// build. The module reads a value with Get[T](core.Config, env). Settings
// is called on the registered prototype before any boot, so it must not
// depend on module state.
type Configurer interface {
	Settings() []Setting
}

// Modeler contributes Bun models that must be registered before use
// (m2m join models above all).
type Modeler interface {
	Models() []any
}

// Migrator contributes schema migrations. Their ids are namespaced by the
// module name in the bookkeeping table ("shows:0001_create_tables"), so two
// modules can never collide; a module's steps run in the lexical order of
// their ids, each in one transaction with its bookkeeping row, on the
// bun.IDB the step is given, and one process at a time. Steps must be
// idempotent on MySQL, where DDL commits implicitly (package migrations).
type Migrator interface {
	Migrations() []migrations.Migration
}

// Policier contributes Casbin policy lines ("p, role, obj, act" and
// "g, role, parent-role"). A malformed line fails start-up.
type Policier interface {
	Policies() []string
}

// Provisioner receives the kernel's shared dependencies once per boot,
// before any route is mounted. Modules that import this module's package
// are provisioned after it and may use what Provision built (Lookup). ctx
// is the boot's: it bounds what Provision reads (a key, a secret), and
// ends with the command's start-up, so nothing that runs on may keep it
// (background work starts in Start, with Core.Go).
type Provisioner interface {
	Provision(ctx context.Context, core *Core) error
}

// Subscriber receives the boot's event bus before the migrations run, to
// subscribe to the events it handles (events.Subscribe, SubscribeTx) and
// keep the bus to publish its own. It is the one step before Provision
// that a module sees: a migration may publish (users' tag merge), and the
// modules owning the rows handle it in the step's transaction. Subscribe
// must not depend on module state other than the bus.
type Subscriber interface {
	Subscribe(bus *events.Bus)
}

// APIRouter mounts routes under /v1. Every one of them sits behind the
// Bearer-token middleware and the per-token rate limiter. APIRoutes and
// PublicRoutes are called twice when a server boots (once to reserve the
// routes' first segments, once on the server), so they must only register
// routes.
type APIRouter interface {
	APIRoutes(r fiber.Router)
}

// PublicRouter mounts routes at the root without authentication (public
// pages, media files, health endpoints of a module). The first segment of
// each route's path (/media, /embed) is reserved, so no user's page at
// /{slug} can hide it.
type PublicRouter interface {
	PublicRoutes(r fiber.Router)
}

// AdminPager contributes pages to the staff console. The console (itself a
// module, in admin/) collects them from Core.Modules and mounts them behind
// its own session, CSRF and staff checks; it knows no module by name.
type AdminPager interface {
	AdminPages() []AdminPage
}

// AdminPage is one page (and its form actions) of the staff console.
type AdminPage struct {
	// Path under /admin, e.g. "/shows".
	Path string
	// Title shown in the console's navigation; empty keeps it out of the menu.
	Title string
	// Order sorts the navigation, lowest first.
	Order int
	// Object and Action, when set, restrict the page to staff whom Casbin
	// allows Action on Object: it is left out of their navigation and
	// answers 403. Empty: every staff member may open it (each form action
	// still asks Casbin).
	Object, Action string
	// Mount registers the page's GET and POST handlers on r (already
	// prefixed with /admin + Path).
	Mount func(r fiber.Router)
}

// SitePager contributes pages to the public site: pages anyone may see
// and account pages of the signed-in user (under /account, /studio or a
// path of the module's own). The module serving the site (modules/pages)
// collects them from Core.Modules and mounts them before its catch-alls
// (/{user}, /{user}/{show}), behind the session of the request; it knows no
// module by name. A page draws itself in the site's shared frame with
// package site (site.Page, site.LayoutOf, site.Render): header, footer,
// session, CSRF; an error it returns is shown as the site's HTML error
// page. Like every public route, a page's first path segment is reserved.
type SitePager interface {
	SitePages() []SitePage
}

// SitePage is one page (and its form actions) of the public site.
type SitePage struct {
	// Path of the page, e.g. "/account/webhooks": it starts and does not end
	// with "/", and no other site page has it.
	Path string
	// Account keeps the page to signed-in users: a signed-out GET or HEAD
	// is sent to sign in and come back (303 to /signin?next=Path...), any
	// other method is a 401; a form (any method but GET and HEAD) must carry
	// the session's CSRF token from this site, else 403 (site.CheckPost).
	Account bool
	// Nav, when set, is the title of the page's entry in the site header's
	// navigation for signed-in visitors, which links to Path. Entries
	// come in NavOrder (ascending; ties in registration order); the host's
	// own Studio (10) and Account (20) are among them.
	Nav      string
	NavOrder int
	// Mount registers the page's handlers on r (already prefixed with Path).
	Mount func(r fiber.Router)
}

// AccountSectioner adds a section to the signed-in user's account page
// (/account), below the page's own, in registration order: a summary of
// what the module keeps for the user, with a link to its own account page.
// It is called on every view of the account page by a signed-in user
// (site.Current(c) is the visitor); a nil Component adds nothing.
type AccountSectioner interface {
	AccountSection(c *fiber.Ctx) (Component, error)
}

// Component is a piece of HTML that renders itself, as a templ component
// does (any templ.Component is one).
type Component interface {
	Render(ctx context.Context, w io.Writer) error
}

// AdminWidgeter contributes cards to the dashboard of the staff console
// ("Live now: 3"). It is called on every dashboard view, so it should cost
// a few indexed counts at most.
type AdminWidgeter interface {
	AdminWidgets(ctx context.Context) ([]AdminWidget, error)
}

// AdminWidget is one card of the console's dashboard: a figure and what it
// counts, optionally linking to the console page that lists it.
type AdminWidget struct {
	Label string // "Live now"
	Value string // "3"
	// Link is a path under /admin ("/shows?state=live"); empty: no link.
	Link string
	// Order sorts the cards, lowest first.
	Order int
}

// AdminCharter contributes charts to the console's dashboard (viewers
// over time, sign-ups per day), drawn below the cards. Like the widgets
// it is called on every dashboard view: keep it to a few indexed reads.
type AdminCharter interface {
	AdminCharts(ctx context.Context) ([]AdminChart, error)
}

// AdminChart is one chart of the console's dashboard.
type AdminChart struct {
	Chart svgchart.Chart
	// Order sorts the charts, lowest first.
	Order int
}

// Runner is a module with background work (an RTMP listener, a
// janitor...), run by onair serve only. Start must not block; its ctx
// lives until the module stops (after its Stop returns), and the loops
// Start runs with Core.Go get that ctx and are awaited then. A Start that
// fails stops the runners already started and the server. Stop releases
// what the module holds (listeners, sessions) and must return once that
// work has stopped or ctx ends.
type Runner interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

// Drainer is a Runner that stops taking new work (closes its own
// listeners) as soon as the process is told to stop, while the HTTP
// server drains its requests in flight; what it has under way carries on
// until Stop.
type Drainer interface {
	Drain()
}

// Commander contributes CLI sub-commands such as "users create".
type Commander interface {
	Commands() []Command
}

// Command is one CLI sub-command. Name may hold a space ("users create").
// Flags declares the command's own flags on fs, beside the ONAIR_* setting
// flags every command accepts, and returns the function that runs it once
// the flags are parsed and the kernel has booted.
type Command struct {
	Name  string
	Usage string
	Flags func(fs *flag.FlagSet) func(ctx context.Context, core *Core, stdout io.Writer) error
}

// OpenAPIDocumenter contributes a fragment of the OpenAPI document: a JSON
// object with "paths" and optionally "components" that is merged into
// /v1/openapi.json.
type OpenAPIDocumenter interface {
	OpenAPI() []byte
}

// Authenticator turns a Bearer token into a Principal. Exactly one module
// (users) provides it. The token is a view of the request's buffer, valid
// only during the call (RequireToken does not copy it): an implementation
// that keeps it, or anything sliced from it, past the call must copy it.
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (*Principal, error)
}

// Registry is an ordered set of modules with unique names. The process has
// one (the package-level Register and Modules use it); tests make their own
// with NewRegistry.
type Registry struct {
	mu      sync.Mutex
	modules []Module
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{} }

// Register adds a module. It panics on a nil module or an empty or
// duplicate name, since each is a programming error found at init().
func (r *Registry) Register(m Module) {
	if m == nil {
		panic("app: nil module registered")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	name := m.Name()
	if name == "" {
		panic(fmt.Sprintf("app: module %T registered with an empty name", m))
	}
	for _, other := range r.modules {
		if other.Name() == name {
			panic(fmt.Sprintf("app: module %q registered twice", name))
		}
	}
	r.modules = append(r.modules, m)
}

// Modules returns the registered modules in registration order.
func (r *Registry) Modules() []Module {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Module(nil), r.modules...)
}

// registry holds the modules of this binary, filled by the init() of each
// module package that modules/modules.go imports.
var registry = NewRegistry()

// Register adds a module to the process's registry. It is called from the
// module package's init() and panics on an empty or duplicate name.
func Register(m Module) { registry.Register(m) }

// Modules returns the process's registered modules in registration order.
func Modules() []Module { return registry.Modules() }

// fresh returns a new instance of every prototype module: a shallow copy of
// the registered value. Modules keep per-process state (their services) in
// their own struct, so each Boot (two test servers in one process, a CLI
// command) provisions its own instances instead of sharing the registered
// prototypes.
func fresh(prototypes []Module) []Module {
	out := make([]Module, len(prototypes))
	for i, p := range prototypes {
		v := reflect.ValueOf(p)
		if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
			out[i] = p
			continue
		}
		n := reflect.New(v.Elem().Type())
		n.Elem().Set(v.Elem())
		out[i] = n.Interface().(Module)
	}
	return out
}

// Lookup returns the registered module of type T (for example
// *shows.Module), so a module can use another's services after both are
// provisioned. Modules are provisioned in registration order, so a module
// may look up the modules it imports during its own Provision.
func Lookup[T Module](core *Core) (T, bool) {
	for _, m := range core.Modules {
		if t, ok := m.(T); ok {
			return t, true
		}
	}
	var zero T
	return zero, false
}

// SessionReader resolves the signed-in web user of a request from its
// session cookie. The users module provides it; the chat's web socket
// uses it to tell registered viewers from anonymous ones.
type SessionReader interface {
	SessionPrincipal(c *fiber.Ctx) (*Principal, error)
}
