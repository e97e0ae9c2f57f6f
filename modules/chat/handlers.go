package chat

import (
	"errors"
	"sort"
	"strconv"

	"github.com/gofiber/fiber/v2"
	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
	"github.com/onair/onair/modules/users"
)

type handlers struct {
	m *Module
}

func showIDParam(c *fiber.Ctx, name string) (int64, error) {
	id, err := strconv.ParseInt(c.Params(name), 10, 64)
	if err != nil || id < 1 {
		return 0, app.NotFound("show")
	}
	return id, nil
}

// list is GET /v1/shows/:id/chats: newest first, 50 a page.
func (h *handlers) list(c *fiber.Ctx) error {
	showID, err := showIDParam(c, "id")
	if err != nil {
		return err
	}
	page, err := app.ParsePage(c, PageSize)
	if err != nil {
		return err
	}
	list, count, err := h.m.Service.List(c.UserContext(), showID, app.CurrentPrincipal(c), page)
	if err != nil {
		return err
	}
	views := make([]*View, 0, len(list))
	for i := range list {
		views = append(views, h.m.Service.View(&list[i]))
	}
	return app.NewList(c, h.m.core.Config.PublicURL, page, count, "chats", views).Send(c)
}

// message loads the :id message of the :show_id show for the caller; a
// bad id, a message of another show and a hidden show are all 404.
func (h *handlers) message(c *fiber.Ctx) (*Message, error) {
	showID, err := showIDParam(c, "show_id")
	if err != nil {
		return nil, err
	}
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil || id < 1 {
		return nil, app.NotFound("chat message")
	}
	m, err := h.m.Service.Get(c.UserContext(), showID, id, app.CurrentPrincipal(c))
	if errors.Is(err, ErrNotFound) {
		return nil, app.NotFound("chat message")
	}
	return m, err
}

// get is GET /v1/shows/:show_id/chats/:id.
func (h *handlers) get(c *fiber.Ctx) error {
	m, err := h.message(c)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"chat": h.m.Service.View(m)})
}

// post is POST /v1/shows/:id/chats.
func (h *handlers) post(c *fiber.Ctx) error {
	showID, err := showIDParam(c, "id")
	if err != nil {
		return err
	}
	in, err := app.ReadInput(c)
	if err != nil {
		return err
	}
	body, _, err := in.String("message")
	if err != nil {
		return err
	}
	m, err := h.m.Service.Post(c.UserContext(), showID, app.CurrentPrincipal(c), body)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{"chat": h.m.Service.View(m)})
}

// remove is DELETE /v1/shows/:show_id/chats/:id: the author or staff hide
// a message (an extension beyond v1).
func (h *handlers) remove(c *fiber.Ctx) error {
	m, err := h.message(c)
	if err != nil {
		return err
	}
	if _, err := h.m.Service.Delete(c.UserContext(), m.ID, app.CurrentPrincipal(c)); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"chat": h.m.Service.View(m)})
}

// anonymousEntry is an anonymous viewer in chat_users.
type anonymousEntry struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	Registered bool   `json:"registered"`
}

// chatUsers is GET /v1/shows/:id/chat_users.
func (h *handlers) chatUsers(c *fiber.Ctx) error {
	showID, err := showIDParam(c, "id")
	if err != nil {
		return err
	}
	entries, err := h.m.Service.ChatUsers(c, showID)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"count": len(entries), "chat_users": entries})
}

// ChatUsers lists the viewers present in a visible show's room: registered
// users first (by name), then anonymous viewers (by name).
func (s *Service) ChatUsers(c *fiber.Ctx, showID int64) ([]any, error) {
	ctx := c.UserContext()
	if _, err := s.shows.Visible(ctx, showID, app.CurrentPrincipal(c)); err != nil {
		return nil, err
	}
	keys, err := s.hub.presence.Keys(ctx, showID)
	if err != nil {
		return nil, err
	}
	var ids []int64
	var anon []anonymousEntry
	for _, k := range keys {
		v, ok := viewerFromKey(k)
		switch {
		case !ok:
		case v.UserID != 0:
			ids = append(ids, v.UserID)
		default:
			anon = append(anon, anonymousEntry{ID: v.AnonID, Name: v.Name})
		}
	}
	out := make([]any, 0, len(keys))
	if len(ids) > 0 {
		var list []users.User
		if err := s.db.NewSelect().Model(&list).Where("u.id IN (?)", bun.List(ids)).OrderExpr("u.name, u.id").Scan(ctx); err != nil {
			return nil, err
		}
		for i := range list {
			out = append(out, users.NewView(s.public, &list[i], users.ForChatUser))
		}
	}
	sort.Slice(anon, func(i, j int) bool { return anon[i].Name < anon[j].Name })
	for _, a := range anon {
		out = append(out, a)
	}
	return out, nil
}
