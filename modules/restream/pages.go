package restream

import (
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/app"
	"github.com/onair/onair/site"
)

var _ app.SitePager = (*Module)(nil)

// SitePages: the studio's Destinations page, /studio/destinations, where a
// signed-in user manages their restream destinations as the API does. The
// site's host mounts it behind the session and the form token (an
// account page).
func (m *Module) SitePages() []app.SitePage {
	return []app.SitePage{{Path: "/studio/destinations", Account: true, Mount: func(r fiber.Router) {
		r.Get("/", m.destinationsPage)
		r.Post("/", m.createDestination)
		r.Post("/:id", m.updateDestination)
		r.Post("/:id/delete", m.deleteDestination)
	}}}
}

// destinationsData is /studio/destinations: the user's restream
// destinations (their keys masked), the form to add one, and the problem
// of the last form sent.
type destinationsData struct {
	CSRF, APIURL, Problem string
	// Form keeps what was typed in the add form after a refusal, but
	// never the URL: it holds the key.
	Name         string
	Destinations []pageDestination
}

type pageDestination struct {
	ID, Name, URL string
	Enabled       bool
}

// destinationsPage is GET /studio/destinations.
func (m *Module) destinationsPage(c *fiber.Ctx) error {
	return m.renderDestinations(c, fiber.StatusOK, "", "")
}

func (m *Module) renderDestinations(c *fiber.Ctx, status int, problem, name string) error {
	v := site.Current(c)
	if !v.SignedIn() { // an account page: the host signs visitors in first
		return app.Unauthorized("sign in first")
	}
	d := destinationsData{CSRF: v.CSRF, APIURL: m.public + "/v1/destinations", Problem: problem, Name: name}
	list, err := OfUser(c.UserContext(), m.db, v.User.ID)
	if err != nil {
		return err
	}
	for i := range list {
		ds := &list[i]
		d.Destinations = append(d.Destinations, pageDestination{ID: strconv.FormatInt(ds.ID, 10), Name: ds.Name,
			URL: ds.MaskedURL(), Enabled: ds.Enabled})
	}
	site.NoStore(c)
	return site.Render(c, status, destinationsView(site.LayoutOf(c, "Destinations", ""), d))
}

// createDestination is POST /studio/destinations.
func (m *Module) createDestination(c *fiber.Ctx) error {
	name, url := c.FormValue("name"), c.FormValue("url")
	on := c.FormValue("enabled") != ""
	if _, err := m.Create(c.UserContext(), site.Current(c).Principal, Input{Name: &name, URL: &url, Enabled: &on}); err != nil {
		if msg, ok := site.FormProblem(err); ok {
			return m.renderDestinations(c, fiber.StatusUnprocessableEntity, msg, name)
		}
		return err
	}
	return site.Redirect(c, "/studio/destinations")
}

// updateDestination is POST /studio/destinations/:id: the edit form sends
// the name, the URL (its masked form keeps the key) and enabled.
func (m *Module) updateDestination(c *fiber.Ctx) error {
	id, _ := strconv.ParseInt(c.Params("id"), 10, 64)
	name, url := c.FormValue("name"), c.FormValue("url")
	on := c.FormValue("enabled") != ""
	if _, err := m.Update(c.UserContext(), site.Current(c).Principal, id, Input{Name: &name, URL: &url, Enabled: &on}); err != nil {
		if msg, ok := site.FormProblem(err); ok {
			return m.renderDestinations(c, fiber.StatusUnprocessableEntity, msg, "")
		}
		return err
	}
	return site.Redirect(c, "/studio/destinations")
}

// deleteDestination is POST /studio/destinations/:id/delete.
func (m *Module) deleteDestination(c *fiber.Ctx) error {
	id, _ := strconv.ParseInt(c.Params("id"), 10, 64)
	if _, err := m.Delete(c.UserContext(), site.Current(c).Principal, id); err != nil {
		return err
	}
	return site.Redirect(c, "/studio/destinations")
}
