package pages

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/a-h/templ"
	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/app"
	"github.com/onair/onair/modules/users"
	"github.com/onair/onair/site"
)

// visitor is who is looking at a page: a signed-in user with their session,
// or nobody. p is never nil: an anonymous visitor is a principal without a
// user id or roles, which the services' visibility rule treats as "sees
// only public shows" (a nil principal would be the system, which sees all).
type visitor struct {
	sess *users.Session
	user *users.User
	p    *app.Principal
}

func (v *visitor) signedIn() bool { return v.user != nil }

// csrf is the session's form token ("" when signed out).
func (v *visitor) csrf() string {
	if v.sess == nil {
		return ""
	}
	return v.sess.CSRF
}

const visitorKey = "onair.pages.visitor"

// visitorOf loads the session of the request once.
func (m *Module) visitorOf(c *fiber.Ctx) (*visitor, error) {
	if v, ok := c.Locals(visitorKey).(*visitor); ok {
		return v, nil
	}
	sess, err := m.users.Session(c)
	if err != nil {
		return nil, err
	}
	v := &visitor{p: &app.Principal{}}
	if sess != nil {
		v.sess, v.user, v.p = sess, sess.User, users.PrincipalOf(sess.User, 0)
		app.SetPrincipal(c, v.p)
	}
	c.Locals(visitorKey, v)
	site.With(c, m.siteRequest(v))
	return v, nil
}

// siteRequest is v as package site shows it to every page, the modules'
// included.
func (m *Module) siteRequest(v *visitor) *site.Request {
	r := &site.Request{Principal: &app.Principal{}, CSS: m.assets.URL("onair.css"), JS: m.assets.URL("onair.js"), Guard: m.csrf}
	if v == nil {
		return r
	}
	r.Principal, r.CSRF = v.p, v.csrf()
	if v.user != nil {
		r.User = &site.User{ID: v.user.ID, Name: v.user.Name, Slug: v.user.Slug}
		r.Nav = m.nav
	}
	return r
}

// page wraps an HTML handler: security headers, and errors rendered as an
// HTML page rather than the API's JSON.
func (m *Module) page(h func(c *fiber.Ctx, v *visitor) error) fiber.Handler {
	return func(c *fiber.Ctx) error {
		v, err := m.visitorOf(c)
		if err == nil {
			err = h(c, v)
		}
		if err == nil {
			return nil
		}
		var p passedOn
		if errors.As(err, &p) {
			return p.err
		}
		return m.renderError(c, v, err)
	}
}

// passedOn is the error of a route after the catch-alls (a module's
// public route, a test route): that route's error, for the kernel's error
// handler to render, not an HTML page.
type passedOn struct{ err error }

func (p passedOn) Error() string { return p.err.Error() }
func (p passedOn) Unwrap() error { return p.err }

// renderError shows an API error (404, 403, 422…) as a page with its
// status; anything else is logged and is a 500 page.
func (m *Module) renderError(c *fiber.Ctx, v *visitor, err error) error {
	if v == nil {
		v = &visitor{p: &app.Principal{}}
	}
	status, msg := http.StatusInternalServerError, "Something went wrong on our side. Please try again."
	var apiErr *app.Error
	var fe *fiber.Error
	switch {
	case errors.As(err, &apiErr):
		status, msg = apiErr.Status, apiErr.Message
	case errors.As(err, &fe):
		status, msg = fe.Code, fe.Message
	default:
		m.log.Error("page failed", "method", c.Method(), "path", app.LogPath(c), "request_id", app.RequestID(c), "err", err)
	}
	if status == http.StatusNotFound {
		msg = "There is nothing here. The page may have moved, or it may be private."
	}
	if apiErr != nil && apiErr.RetryAfter > 0 {
		c.Set(fiber.HeaderRetryAfter, fmt.Sprint(apiErr.RetryAfter))
	}
	title := http.StatusText(status)
	return m.render(c, status, errorPage(m.layout(c, v, title, ""), status, title, msg))
}

// next hands the request to the routes after the catch-alls; when none
// answers, the visitor gets the HTML 404 page.
func (m *Module) next(c *fiber.Ctx, v *visitor) error {
	err := c.Next()
	var fe *fiber.Error
	if errors.As(err, &fe) && fe.Code == fiber.StatusNotFound {
		return m.renderError(c, v, app.NotFound("page"))
	}
	if err != nil {
		return passedOn{err}
	}
	return nil
}

// render writes a component as the HTML response (site.Render: the
// security headers of every page).
func (m *Module) render(c *fiber.Ctx, status int, comp templ.Component) error {
	return site.Render(c, status, comp)
}

// ---- CSRF -------------------------------------------------------------

// Every POST goes through internal/csrf, as the console's do: it must come
// from this site and carry a token, the session's secret when signed in
// (field "csrf" or header X-CSRF-Token), the onair_csrf cookie's value when
// signed out (sign in, sign up).

var errCSRF = site.ErrCSRF

// checkCSRF verifies a POST of a signed-in visitor.
func (m *Module) checkCSRF(c *fiber.Ctx, v *visitor) error {
	if v.sess == nil || !m.csrf.Check(c, v.sess.CSRF) {
		return errCSRF
	}
	return nil
}

// formToken returns the signed-out visitor's form token, setting its
// cookie when there is none yet.
func (m *Module) formToken(c *fiber.Ctx) (string, error) { return m.csrf.FormToken(c) }

// checkFormToken verifies a POST of a signed-out visitor.
func (m *Module) checkFormToken(c *fiber.Ctx) error {
	if !m.csrf.CheckForm(c) {
		return errCSRF
	}
	return nil
}

// ---- Anonymous viewers --------------------------------------------------

// ensureViewerCookie gives an anonymous visitor of a page with a chat the
// chat module's signed onair_viewer cookie, so the viewer keeps one
// identity per room across tabs and visits (docs/pages.md).
func (m *Module) ensureViewerCookie(c *fiber.Ctx) { m.chat.EnsureViewerCookie(c) }

// ---- Small helpers ------------------------------------------------------

// fieldErrors copies the field errors of a service's refusal into errs
// (for a form that shows them beside its fields) and returns the refusal's
// status; ok is false for any other error, which the handler returns.
func fieldErrors(err error, errs map[string]string) (status int, ok bool) {
	var apiErr *app.Error
	if !errors.As(err, &apiErr) || len(apiErr.Fields) == 0 {
		return 0, false
	}
	for k, p := range apiErr.Fields {
		errs[k] = p
	}
	return apiErr.Status, true
}
