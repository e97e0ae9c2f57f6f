package pages

import (
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/modules/shows"
	"github.com/onair/onair/site"
)

// embed is GET /embed/:id, the src of a show's embed_code: the player, and
// with ?chat=1 the chat beside it, read-only. ?listen=1 plays audio only.
// Any site may frame it (CSP frame-ancestors *, no X-Frame-Options). In a
// third-party iframe the browser usually withholds our cookies, so a
// private show is a 404 there like everywhere for a stranger.
func (m *Module) embed(c *fiber.Ctx, v *visitor) error {
	site.Embeddable(c)
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil || id < 1 {
		return shows.ErrNotFound
	}
	sh, err := m.shows.Visible(c.UserContext(), id, v.p)
	if err != nil {
		return err
	}
	view := m.shows.View(sh, false)
	listen := listenMode(c, sh, view)
	withChat := c.Query("chat") == "1"
	var cd chatData
	if withChat {
		if cd, err = m.chatFor(c, v, sh, stateOf(sh, m.clock.Stamp()), false); err != nil {
			return err
		}
		m.ensureViewerCookie(c)
	}
	l := m.layout(c, v, sh.Name, "")
	return m.render(c, fiber.StatusOK, embedPage(l, m.playerFor(sh, view, listen), withChat, cd, view.URL))
}
