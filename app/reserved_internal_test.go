package app

import (
	"testing"

	"github.com/gofiber/fiber/v2"
)

func TestFirstSegment(t *testing.T) {
	for path, want := range map[string]string{
		"/":                        "",
		"/healthz":                 "healthz",
		"/Static/:file":            "static",
		"/media/shows/:id/*":       "media",
		"/:user":                   "",
		"/:user/:show":             "",
		"/*":                       "",
		"/v1/shows/:id":            "v1",
		"/admin":                   "admin",
		"/feeds:rss":               "",
		"/optional?":               "",
		"/media/users/:id/av.svg":  "media",
		"/embed/:id":               "embed",
		"/ws/shows/:id":            "ws",
		"/chat/:id/replay":         "chat",
		"/account/tokens/:id/kill": "account",
	} {
		if got := firstSegment(path); got != want {
			t.Errorf("firstSegment(%q) = %q, want %q", path, got, want)
		}
	}
}

// routed is a module with one public and one /v1 route.
type routed struct{}

func (routed) Name() string { return "routed" }

func (routed) PublicRoutes(r fiber.Router) {
	r.Get("/Jukebox/:id", func(c *fiber.Ctx) error { return nil })
	r.Get("/:user/:show", func(c *fiber.Ctx) error { return nil })
}

func (routed) APIRoutes(r fiber.Router) { r.Get("/records", func(c *fiber.Ctx) error { return nil }) }

// A module's public routes reserve their first segment; routes under /v1
// reserve only v1; parameters reserve nothing. Before Boot has read the
// routes (a bare Core), the kernel's segments and the kept names are
// reserved.
func TestReserveRoutes(t *testing.T) {
	core := &Core{Modules: []Module{routed{}}}
	if core.ReservedSlug("jukebox") || !core.ReservedSlug("v1") || !core.ReservedSlug("studio") {
		t.Fatal("a bare core reserves something else than the kernel's and the kept names")
	}
	core.reserved = reserveRoutes(core)
	for slug, want := range map[string]bool{
		"jukebox": true, "JUKEBOX": true, "v1": true, "healthz": true, "readyz": true, "metrics": true,
		"studio": true, "api": true, "www": true, "live": true,
		"records": false, "user": false, "show": false, "jukebox-2": false, "dj-nova": false,
	} {
		if got := core.ReservedSlug(slug); got != want {
			t.Errorf("ReservedSlug(%q) = %v, want %v", slug, got, want)
		}
	}
}
