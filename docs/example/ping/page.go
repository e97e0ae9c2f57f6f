package ping

import (
	"fmt"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/app"
	"github.com/onair/onair/site"
)

var _ app.SitePager = (*Module)(nil)

// SitePages: the public page /pings, drawn in the site's layout (header
// with the visitor's session, footer). Anyone sees how many pings there
// are; a signed-in visitor also pings from a form and sees their latest.
// The site's host (modules/pages) mounts it; nothing there names it.
func (m *Module) SitePages() []app.SitePage {
	return []app.SitePage{{Path: "/pings", Mount: func(r fiber.Router) {
		r.Get("/", m.publicPage)
		r.Post("/", m.pingForm)
	}}}
}

// pingsPage is what the public page shows.
type pingsPage struct {
	Count int
	Mine  []Ping // the signed-in visitor's latest pings
	// Problem is the refusal of the last form sent.
	Problem string
}

// publicPage is GET /pings.
func (m *Module) publicPage(c *fiber.Ctx) error {
	return m.renderPublic(c, fiber.StatusOK, "")
}

func (m *Module) renderPublic(c *fiber.Ctx, status int, problem string) error {
	v := site.Current(c)
	d := pingsPage{Problem: problem}
	n, err := m.db.NewSelect().Model((*Ping)(nil)).Count(c.UserContext())
	if err != nil {
		return fmt.Errorf("ping: count: %w", err)
	}
	d.Count = int(n)
	if v.SignedIn() {
		err := m.db.NewSelect().Model(&d.Mine).Where("user_id = ?", v.User.ID).Order("id DESC").Limit(10).Scan(c.UserContext())
		if err != nil {
			return fmt.Errorf("ping: list: %w", err)
		}
	}
	return site.Render(c, status, publicView(site.LayoutOf(c, "Pings", "How many pings OnAir has heard."), d))
}

// pingForm is POST /pings: the session and its form token first, then the
// same code as POST /v1/pings; a refusal is shown on the page.
func (m *Module) pingForm(c *fiber.Ctx) error {
	if err := site.CheckPost(c); err != nil {
		return err
	}
	in, err := app.ReadInput(c)
	if err != nil {
		return err
	}
	note, _, err := in.String("note")
	if err == nil {
		_, err = m.record(c.UserContext(), site.Current(c).Principal, note)
	}
	if err != nil {
		if problem, ok := site.FormProblem(err); ok {
			return m.renderPublic(c, fiber.StatusUnprocessableEntity, problem)
		}
		return err
	}
	return site.Redirect(c, "/pings")
}
