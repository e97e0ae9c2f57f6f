package app

import (
	"strings"

	"github.com/gofiber/fiber/v2"
)

// A user's page lives at /{slug} (modules/pages), so no user may be given
// a slug that is a path the server answers itself. The reserved names are
// not a hand-kept list: they are the first segment of every route the
// modules mount, read back from Fiber (GetRoutes) once every module is
// provisioned, plus the kernel's own routes and a few names kept back
// though nothing routes them yet.

// kernelSegments are the first path segments NewServer routes itself,
// before any module: /v1 (with /v1/openapi.json), /healthz, /readyz and
// /metrics. TestKernelRoutesAreReserved checks this list against the
// routes of a running server.
var kernelSegments = []string{"v1", "healthz", "readyz", "metrics"}

// keptNames are reserved though no route answers them today: names a
// visitor would take for the service's own (api, www, help, about...),
// the sign-in words the pages do not use (login, logout), and the paths of
// features announced but not built (studio, live, search, explore,
// settings, the users and shows collections, new).
var keptNames = []string{
	"api", "www", "studio", "live", "login", "logout", "settings", "users", "shows",
	"search", "explore", "about", "help", "new",
}

// ReservedSlug tells whether slug (compared without case) is the first
// segment of a server path rather than a free user slug. Once Boot has
// returned it knows every module's routes; before that (during Provision)
// only the kernel's segments and the kept names.
func (c *Core) ReservedSlug(slug string) bool {
	s := strings.ToLower(slug)
	if c.reserved != nil {
		return c.reserved[s]
	}
	return defaultReserved[s]
}

// defaultReserved is what is reserved without the modules' routes.
var defaultReserved = func() map[string]bool {
	m := map[string]bool{}
	for _, s := range append(append([]string(nil), kernelSegments...), keptNames...) {
		m[s] = true
	}
	return m
}()

// reserveRoutes computes the reserved names of a booted core: the routes
// every module mounts are collected on a Fiber app of their own (the
// modules mount the same routes again on the server's), and the first
// segment of each, parameters and wildcards aside, is reserved.
func reserveRoutes(core *Core) map[string]bool {
	routes := fiber.New(fiber.Config{DisableStartupMessage: true})
	v1 := routes.Group("/v1")
	for _, m := range core.Modules {
		if r, ok := m.(APIRouter); ok {
			r.APIRoutes(v1)
		}
		if r, ok := m.(PublicRouter); ok {
			r.PublicRoutes(routes)
		}
	}
	reserved := map[string]bool{}
	for s := range defaultReserved {
		reserved[s] = true
	}
	for _, r := range routes.GetRoutes() {
		if s := firstSegment(r.Path); s != "" {
			reserved[s] = true
		}
	}
	return reserved
}

// firstSegment is the literal first segment of a route path, lower-cased;
// "" for the root, a parameter (/:user) or a wildcard (/*).
func firstSegment(path string) string {
	s, _, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	if s == "" || strings.ContainsAny(s, ":*+?") {
		return ""
	}
	return strings.ToLower(s)
}
