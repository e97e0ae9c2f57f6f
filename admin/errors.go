package admin

import (
	"errors"
	"net/http"
	"net/url"
	"sort"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/app"
)

// errorView is what the error page shows.
type errorView struct {
	Status  int
	Title   string
	Message string
	Fields  []fieldError
	// Back is the console page the request came from, when known.
	Back string
}

type fieldError struct{ Field, Problem string }

// renderErrors turns every error under /admin into an HTML page with the
// error's status (403 for a refused action, 409 for a state conflict, 422
// with the fields of a form that did not validate...). Faults are logged
// and shown without details.
func (m *Module) renderErrors(c *fiber.Ctx) error {
	err := c.Next()
	if err == nil {
		return nil
	}
	var apiErr *app.Error
	var fe *fiber.Error
	v := errorView{}
	switch {
	case errors.As(err, &apiErr):
		v.Status, v.Message = apiErr.Status, apiErr.Message
		for f, p := range apiErr.Fields {
			v.Fields = append(v.Fields, fieldError{f, p})
		}
		sort.Slice(v.Fields, func(i, j int) bool { return v.Fields[i].Field < v.Fields[j].Field })
		if apiErr.RetryAfter > 0 {
			c.Set(fiber.HeaderRetryAfter, strconv.Itoa(apiErr.RetryAfter))
		}
	case errors.As(err, &fe):
		v.Status, v.Message = fe.Code, fe.Message
	default:
		m.core.Log.Error("admin: request failed", "method", c.Method(), "path", app.LogPath(c),
			"request_id", app.RequestID(c), "err", err)
		v.Status, v.Message = http.StatusInternalServerError, "Something went wrong on the server; it has been logged."
	}
	v.Title = http.StatusText(v.Status)
	if ref, err := url.Parse(c.Get(fiber.HeaderReferer)); err == nil && ref.Host == string(c.Request().Host()) && safeNext(ref.RequestURI()) {
		v.Back = ref.RequestURI()
	}
	if v.Status == http.StatusUnprocessableEntity {
		v.Title = "Please check the form"
	}
	c.Response().ResetBody()
	return RenderStatus(c, v.Status, errorPage(v))
}
