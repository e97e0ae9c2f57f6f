package pages

import (
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/app"
	"github.com/onair/onair/modules/chat"
	"github.com/onair/onair/modules/shows"
)

// postChat is POST /chat/:id, the chat form of a show's page: the signed-in
// visitor posts through chat.Service.Post, which applies the same rules as
// the API (visibility, bans, rate, length). The script sends it with
// X-CSRF-Token and Accept: application/json and gets {"chat": …} or the
// API's error body; a plain form post is redirected back to the show.
func (m *Module) postChat(c *fiber.Ctx) error {
	v, err := m.visitorOf(c)
	if err != nil {
		return err
	}
	if !v.signedIn() {
		return app.Unauthorized("sign in to chat")
	}
	if err := m.checkCSRF(c, v); err != nil {
		return err
	}
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil || id < 1 {
		return shows.ErrNotFound
	}
	msg, err := m.chat.Post(c.UserContext(), id, v.p, c.FormValue("message"))
	if err != nil {
		return err
	}
	if strings.Contains(c.Get(fiber.HeaderAccept), fiber.MIMEApplicationJSON) {
		return c.Status(fiber.StatusCreated).JSON(fiber.Map{"chat": m.chat.View(msg)})
	}
	sh, err := m.shows.Get(c.UserContext(), id)
	if err != nil {
		return err
	}
	return redirect(c, m.shows.View(sh, false).URL)
}

// replayLimit caps the messages an archive's replay loads.
const (
	replayPage  = 1000
	replayPages = 10
)

// replayChat is GET /chat/:id/replay: the messages of a show the visitor
// may see, oldest first, each with its position, for the archive's replay.
func (m *Module) replayChat(c *fiber.Ctx) error {
	v, err := m.visitorOf(c)
	if err != nil {
		return err
	}
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil || id < 1 {
		return shows.ErrNotFound
	}
	var all []chat.Message
	for n := 1; n <= replayPages; n++ {
		page, total, err := m.chat.List(c.UserContext(), id, v.p, app.Page{Number: n, Size: replayPage})
		if err != nil {
			return err
		}
		all = append(all, page...)
		if len(all) >= total || len(page) == 0 {
			break
		}
	}
	out := make([]*chat.View, 0, len(all))
	for i := len(all) - 1; i >= 0; i-- {
		out = append(out, m.chat.View(&all[i]))
	}
	c.Set(fiber.HeaderCacheControl, "private, no-cache")
	return c.JSON(fiber.Map{"chats": out})
}
