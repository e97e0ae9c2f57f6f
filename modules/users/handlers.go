package users

import (
	"errors"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/app"
)

// PageSize of GET /users.
const PageSize = 20

// maxQueryText bounds the text filters of GET /users.
const maxQueryText = 200

type handlers struct {
	svc   *Service
	authz *app.Authz
}

// list is GET /v1/users: most followed first, 20 a page, filter/slug/name.
func (h *handlers) list(c *fiber.Ctx) error {
	page, err := app.ParsePage(c, PageSize)
	if err != nil {
		return err
	}
	q := ListQuery{Page: page}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"filter", &q.Filter}, {"slug", &q.Slug}, {"name", &q.Name}} {
		if *f.dst, err = app.QueryText(c, f.name, maxQueryText); err != nil {
			return err
		}
	}
	list, count, err := h.svc.List(c.UserContext(), q)
	if err != nil {
		return err
	}
	views := make([]*View, 0, len(list))
	for i := range list {
		views = append(views, h.svc.View(&list[i], ForUserRead))
	}
	return app.NewList(c, h.svc.publicURL, page, count, "users", views).Send(c)
}

// get is GET /v1/users/:id (or me).
func (h *handlers) get(c *fiber.Ctx) error {
	u, err := h.svc.lookup(c)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"user": h.svc.View(u, ForUserRead)})
}

// follow is POST /v1/users/:id/follow; it answers the followed user.
func (h *handlers) follow(c *fiber.Ctx) error {
	u, err := h.svc.lookup(c)
	if err != nil {
		return err
	}
	if err := h.svc.Follow(c.UserContext(), app.CurrentPrincipal(c).UserID, u.ID); err != nil {
		return err
	}
	return h.answerFresh(c, u.ID)
}

// unfollow is DELETE /v1/users/:id/follow.
func (h *handlers) unfollow(c *fiber.Ctx) error {
	u, err := h.svc.lookup(c)
	if err != nil {
		return err
	}
	if err := h.svc.Unfollow(c.UserContext(), app.CurrentPrincipal(c).UserID, u.ID); err != nil {
		return err
	}
	return h.answerFresh(c, u.ID)
}

// requestRadio is POST /v1/users/me/radio_request (extension beyond v1):
// the caller asks staff for the radio approval; it answers the caller.
func (h *handlers) requestRadio(c *fiber.Ctx) error {
	p := app.CurrentPrincipal(c)
	if err := h.authz.Can(p, "users", "request_radio"); err != nil {
		return err
	}
	if _, err := h.svc.RequestRadio(c.UserContext(), p.UserID); err != nil {
		return err
	}
	return h.answerFresh(c, p.UserID)
}

func (h *handlers) answerFresh(c *fiber.Ctx, id int64) error {
	u, err := h.svc.Get(c.UserContext(), id)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"user": h.svc.View(u, ForUserRead)})
}

// lookup resolves the :id path parameter: a user id or "me".
func (s *Service) lookup(c *fiber.Ctx) (*User, error) {
	id, err := UserIDParam(c, "id")
	if err != nil {
		return nil, err
	}
	u, err := s.Get(c.UserContext(), id)
	if errors.Is(err, ErrNotFound) {
		return nil, app.NotFound("user")
	}
	return u, err
}

// UserIDParam reads a user id path parameter that may be "me". Anything that
// is not a positive integer or "me" is a 404: no such user exists.
func UserIDParam(c *fiber.Ctx, name string) (int64, error) {
	raw := c.Params(name)
	if raw == "me" {
		return app.CurrentPrincipal(c).UserID, nil
	}
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id < 1 {
		return 0, app.NotFound("user")
	}
	return id, nil
}
