package pages

import (
	"context"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/app"
	"github.com/onair/onair/modules/chat"
	"github.com/onair/onair/modules/shows"
	"github.com/onair/onair/site"
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
	return site.Redirect(c, m.shows.View(sh, false).URL)
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

// moderate runs a moderation form of the show page (delete a message, ban
// its author) as the session's user: chat.Service decides who may (the
// show's owner, staff). The script asks for JSON; without it the browser
// comes back to the show.
func (m *Module) moderate(c *fiber.Ctx, act func(ctx context.Context, showID int64, p *app.Principal) error) error {
	v, err := m.visitorOf(c)
	if err != nil {
		return err
	}
	if !v.signedIn() {
		return app.Unauthorized("sign in first")
	}
	if err := m.checkCSRF(c, v); err != nil {
		return err
	}
	showID, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil || showID < 1 {
		return shows.ErrNotFound
	}
	sh, err := m.shows.Visible(c.UserContext(), showID, v.p)
	if err != nil {
		return err
	}
	if err := act(c.UserContext(), sh.ID, v.p); err != nil {
		return err
	}
	if strings.Contains(c.Get(fiber.HeaderAccept), fiber.MIMEApplicationJSON) {
		return c.JSON(fiber.Map{"ok": true})
	}
	return site.Redirect(c, m.shows.View(sh, false).URL)
}

// deleteMessage is POST /chat/:id/messages/:mid/delete.
func (m *Module) deleteMessage(c *fiber.Ctx) error {
	mid, err := strconv.ParseInt(c.Params("mid"), 10, 64)
	if err != nil || mid < 1 {
		return app.NotFound("chat")
	}
	return m.moderate(c, func(ctx context.Context, showID int64, p *app.Principal) error {
		// The message must be of this show.
		if _, err := m.chat.Get(ctx, showID, mid, p); err != nil {
			return err
		}
		_, err := m.chat.Delete(ctx, mid, p)
		return err
	})
}

// banUser is POST /chat/:id/users/:uid/ban: the user may no longer post in
// this show's chat.
func (m *Module) banUser(c *fiber.Ctx) error {
	uid, err := strconv.ParseInt(c.Params("uid"), 10, 64)
	if err != nil || uid < 1 {
		return app.NotFound("user")
	}
	return m.moderate(c, func(ctx context.Context, showID int64, p *app.Principal) error {
		if _, err := m.users.Get(ctx, uid); err != nil {
			return app.NotFound("user")
		}
		_, err := m.chat.Ban(ctx, uid, showID, "banned from the show page", p)
		return err
	})
}
