package pages

import (
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/app"
	"github.com/onair/onair/modules/restream"
)

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
func (m *Module) destinationsPage(c *fiber.Ctx, v *visitor) error {
	return m.renderDestinations(c, v, fiber.StatusOK, "", "")
}

func (m *Module) renderDestinations(c *fiber.Ctx, v *visitor, status int, problem, name string) error {
	if !v.signedIn() {
		return redirect(c, "/signin?next=/studio/destinations")
	}
	if m.restream == nil {
		return app.NotFound("page")
	}
	d := destinationsData{CSRF: v.csrf(), APIURL: m.public + "/v1/destinations", Problem: problem, Name: name}
	list, err := restream.OfUser(c.UserContext(), m.users.DB(), v.user.ID)
	if err != nil {
		return err
	}
	for i := range list {
		ds := &list[i]
		d.Destinations = append(d.Destinations, pageDestination{ID: strconv.FormatInt(ds.ID, 10), Name: ds.Name,
			URL: ds.MaskedURL(), Enabled: ds.Enabled})
	}
	noStore(c)
	return m.render(c, status, destinationsView(m.layout(c, v, "Destinations", ""), d))
}

// createDestination is POST /studio/destinations.
func (m *Module) createDestination(c *fiber.Ctx, v *visitor) error {
	if err := m.signedInPost(c, v); err != nil {
		return err
	}
	if m.restream == nil {
		return app.NotFound("page")
	}
	name, url := c.FormValue("name"), c.FormValue("url")
	on := c.FormValue("enabled") != ""
	if _, err := m.restream.Create(c.UserContext(), v.p, restream.Input{Name: &name, URL: &url, Enabled: &on}); err != nil {
		if msg, ok := formProblem(err); ok {
			return m.renderDestinations(c, v, fiber.StatusUnprocessableEntity, msg, name)
		}
		return err
	}
	return redirect(c, "/studio/destinations")
}

// updateDestination is POST /studio/destinations/:id: the edit form sends
// the name, the URL (its masked form keeps the key) and enabled.
func (m *Module) updateDestination(c *fiber.Ctx, v *visitor) error {
	if err := m.signedInPost(c, v); err != nil {
		return err
	}
	if m.restream == nil {
		return app.NotFound("page")
	}
	id, _ := strconv.ParseInt(c.Params("id"), 10, 64)
	name, url := c.FormValue("name"), c.FormValue("url")
	on := c.FormValue("enabled") != ""
	if _, err := m.restream.Update(c.UserContext(), v.p, id, restream.Input{Name: &name, URL: &url, Enabled: &on}); err != nil {
		if msg, ok := formProblem(err); ok {
			return m.renderDestinations(c, v, fiber.StatusUnprocessableEntity, msg, "")
		}
		return err
	}
	return redirect(c, "/studio/destinations")
}

// deleteDestination is POST /studio/destinations/:id/delete.
func (m *Module) deleteDestination(c *fiber.Ctx, v *visitor) error {
	if err := m.signedInPost(c, v); err != nil {
		return err
	}
	if m.restream == nil {
		return app.NotFound("page")
	}
	id, _ := strconv.ParseInt(c.Params("id"), 10, 64)
	if _, err := m.restream.Delete(c.UserContext(), v.p, id); err != nil {
		return err
	}
	return redirect(c, "/studio/destinations")
}
