package ping

import (
	"fmt"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/admin"
	"github.com/onair/onair/app"
)

// AdminPages: the console's Pings page lists the latest pings; staff whom
// Casbin allows to purge get a button that deletes those older than the
// retention. The console mounts the page under /admin/pings behind its
// session, CSRF and staff checks.
func (m *Module) AdminPages() []app.AdminPage {
	return []app.AdminPage{{Path: "/pings", Title: "Pings", Order: 80, Mount: func(r fiber.Router) {
		r.Get("/", m.pingsPage)
		r.Post("/purge", m.purgeAction)
	}}}
}

// pingsPage is GET /admin/pings.
func (m *Module) pingsPage(c *fiber.Ctx) error {
	var pings []Ping
	if err := m.db.NewSelect().Model(&pings).Order("id DESC").Limit(50).Scan(c.UserContext()); err != nil {
		return fmt.Errorf("ping: console list: %w", err)
	}
	return admin.Render(c, pingsView(pings, m.retention.String()))
}

// purgeAction is POST /admin/pings/purge: Casbin first, then the purge,
// then the audit log, then back to the page with a one-line message.
func (m *Module) purgeAction(c *fiber.Ctx) error {
	if err := m.authz.Can(admin.Principal(c), "pings", "purge"); err != nil {
		return err
	}
	n, err := m.purge(c.UserContext(), m.retention)
	if err != nil {
		return err
	}
	if err := admin.Log(c, "pings.purge", "pings", nil, map[string]int64{"deleted": n}); err != nil {
		return err
	}
	return admin.Back(c, admin.Path("/pings"), fmt.Sprintf("%d pings purged.", n))
}
