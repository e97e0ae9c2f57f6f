package shows

import (
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/app"
	"github.com/onair/onair/modules/users"
)

type handlers struct {
	svc *Service
}

// list is GET /v1/shows.
func (h *handlers) list(c *fiber.Ctx) error {
	q, err := parseListQuery(c, true, h.svc.clock.Stamp())
	if err != nil {
		return err
	}
	return h.answerList(c, q, nil)
}

// userShows is GET /v1/users/:id/shows (id or me): scheduled and pending
// shows are left out unless scheduled=true. slug, from and to are not
// offered here and are ignored.
//
// An unknown user is a 404, checked only when the list is empty: a show
// cannot outlive its owner (foreign key), so a list that counts one
// proves the user exists, and the usual request makes one statement
// fewer.
func (h *handlers) userShows(c *fiber.Ctx) error {
	id, err := users.UserIDParam(c, "id")
	if err != nil {
		return err
	}
	known := func() error {
		exists, err := h.svc.db.NewSelect().Model((*users.User)(nil)).Where("id = ?", id).Exists(c.UserContext())
		if err != nil {
			return err
		}
		if !exists {
			return app.NotFound("user")
		}
		return nil
	}
	q, err := parseListQuery(c, false, h.svc.clock.Stamp())
	if err != nil {
		// The user's absence answers first, whatever the query says.
		if nf := known(); nf != nil {
			return nf
		}
		return err
	}
	q.UserID, q.RanOnly = id, true
	return h.answerList(c, q, known)
}

// answerList answers the list q. empty, when set, runs when the result set
// is empty (count 0); its error is the answer.
func (h *handlers) answerList(c *fiber.Ctx, q ListQuery, empty func() error) error {
	q.Viewer = app.CurrentPrincipal(c)
	page, err := h.svc.Lists.Page(c.UserContext(), q)
	if err != nil {
		return err
	}
	if page.Count == 0 && empty != nil {
		if err := empty(); err != nil {
			return err
		}
	}
	return app.NewList(c, h.svc.Views.public, q.Page, page.Count, "shows", page.Items).Send(c)
}

// get is GET /v1/shows/:id.
func (h *handlers) get(c *fiber.Ctx) error {
	id, err := showID(c)
	if err != nil {
		return err
	}
	sh, err := h.svc.Visible(c.UserContext(), id, app.CurrentPrincipal(c))
	if err != nil {
		return err
	}
	return h.answer(c, fiber.StatusOK, sh, false)
}

// create is POST /v1/shows: 201 with the new show in its write form.
func (h *handlers) create(c *fiber.Ctx) error {
	in, err := readInput(c, h.svc)
	if err != nil {
		return err
	}
	sh, err := h.svc.Create(c.UserContext(), app.CurrentPrincipal(c), in)
	if err != nil {
		return err
	}
	c.Location(h.svc.View(sh, false).ObjectURL)
	return h.answer(c, fiber.StatusCreated, sh, true)
}

// update is PUT /v1/shows/:id: only the fields sent change.
func (h *handlers) update(c *fiber.Ctx) error {
	id, err := showID(c)
	if err != nil {
		return err
	}
	in, err := readInput(c, h.svc)
	if err != nil {
		return err
	}
	sh, err := h.svc.Update(c.UserContext(), id, app.CurrentPrincipal(c), in)
	if err != nil {
		return err
	}
	return h.answer(c, fiber.StatusOK, sh, true)
}

// stop is POST /v1/shows/:id/stop.
func (h *handlers) stop(c *fiber.Ctx) error {
	id, err := showID(c)
	if err != nil {
		return err
	}
	sh, err := h.svc.Stop(c.UserContext(), id, app.CurrentPrincipal(c))
	if err != nil {
		return err
	}
	return h.answer(c, fiber.StatusOK, sh, true)
}

// regenerateKey is POST /v1/shows/:id/stream_key (an extension): a new
// key for a leaked one, answered in the write form that carries it.
func (h *handlers) regenerateKey(c *fiber.Ctx) error {
	id, err := showID(c)
	if err != nil {
		return err
	}
	sh, err := h.svc.Keys.Regenerate(c.UserContext(), id, app.CurrentPrincipal(c))
	if err != nil {
		return err
	}
	return h.answer(c, fiber.StatusOK, sh, true)
}

// delete is DELETE /v1/shows/:id: the show as it was, in its read form.
func (h *handlers) delete(c *fiber.Ctx) error {
	id, err := showID(c)
	if err != nil {
		return err
	}
	sh, err := h.svc.Delete(c.UserContext(), id, app.CurrentPrincipal(c))
	if err != nil {
		return err
	}
	return h.answer(c, fiber.StatusOK, sh, false)
}

// favorite is POST /v1/shows/:id/favorite (extension); idempotent.
func (h *handlers) favorite(c *fiber.Ctx) error { return h.setFavorite(c, true) }

// unfavorite is DELETE /v1/shows/:id/favorite (extension); idempotent.
func (h *handlers) unfavorite(c *fiber.Ctx) error { return h.setFavorite(c, false) }

func (h *handlers) setFavorite(c *fiber.Ctx, on bool) error {
	id, err := showID(c)
	if err != nil {
		return err
	}
	sh, err := h.svc.Favorite(c.UserContext(), id, app.CurrentPrincipal(c), on)
	if err != nil {
		return err
	}
	return h.answer(c, fiber.StatusOK, sh, false)
}

func (h *handlers) answer(c *fiber.Ctx, status int, sh *Show, write bool) error {
	return c.Status(status).JSON(fiber.Map{"show": h.svc.Views.ViewFor(sh, write, app.CurrentPrincipal(c))})
}

// showID reads :id. Anything but a positive integer names no show: 404.
func showID(c *fiber.Ctx) (int64, error) {
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil || id < 1 {
		return 0, ErrNotFound
	}
	return id, nil
}

// maxQueryText bounds the text filters of the lists.
const maxQueryText = 200

// parseListQuery reads the list filters; a malformed value is 400. all is
// GET /v1/shows, which also offers slug, from and to (a number of days
// before now).
func parseListQuery(c *fiber.Ctx, all bool, now time.Time) (ListQuery, error) {
	var q ListQuery
	var err error
	if q.Page, err = app.ParsePage(c, PageSize); err != nil {
		return q, err
	}
	text := func(name string) (string, error) { return app.QueryText(c, name, maxQueryText) }
	if q.Filter, err = text("filter"); err != nil {
		return q, err
	}
	if q.Tag, err = text("tag"); err != nil {
		return q, err
	}
	for _, f := range []struct {
		name string
		dst  **bool
	}{{"scheduled", &q.Scheduled}, {"live", &q.Live}, {"archive", &q.Archive}, {"featured", &q.Featured}, {"radio", &q.Radio}} {
		if *f.dst, err = app.QueryBool(c, f.name); err != nil {
			return q, err
		}
	}
	if !all {
		return q, nil
	}
	if q.Slug, err = text("slug"); err != nil {
		return q, err
	}
	for _, f := range []struct {
		name string
		dst  **time.Time
	}{{"from", &q.From}, {"to", &q.To}} {
		name, dst := f.name, f.dst
		raw := c.Query(name)
		if raw == "" {
			continue
		}
		t, err := app.ParseSince(raw, now)
		if err != nil {
			return q, app.BadRequest("%s: %v", name, err)
		}
		*dst = &t
	}
	return q, nil
}

// readInput decodes a POST or PUT body into Input (a multipart body may
// carry the file image). Wrong types and bad
// booleans are 400; the rules on the values (422) are the service's.
func readInput(c *fiber.Ctx, svc *Service) (Input, error) {
	var in Input
	body, err := app.ReadInput(c)
	if err != nil {
		return in, err
	}
	for _, f := range []struct {
		name string
		dst  **string
	}{{"name", &in.Name}, {"description", &in.Description}, {"start", &in.Start}, {"ends_at", &in.EndsAt}} {
		name, dst := f.name, f.dst
		v, ok, err := body.String(name)
		if err != nil {
			return in, err
		}
		if ok {
			*dst = &v
		}
	}
	for _, f := range []struct {
		name string
		dst  **bool
	}{{"private", &in.Private}, {"headline", &in.Headline}, {"radio", &in.Radio}, {"audio_only", &in.AudioOnly}, {"chat_enabled", &in.ChatEnabled}, {"downloadable", &in.Downloadable}} {
		name, dst := f.name, f.dst
		v, ok, err := body.Bool(name)
		if err != nil {
			return in, err
		}
		if ok {
			*dst = &v
		}
	}
	tags, ok, err := body.Strings("tags")
	if err != nil {
		return in, err
	}
	if ok {
		if tags == nil {
			tags = []string{}
		}
		in.Tags = &tags
	}
	in.Image, err = svc.images.readImage(c)
	return in, err
}

// validText tells whether s is UTF-8 without control characters (tabs and
// newlines allowed when multiline).
func validText(s string, multiline bool) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) && !(multiline && (r == '\n' || r == '\r' || r == '\t')) {
			return false
		}
	}
	return true
}
