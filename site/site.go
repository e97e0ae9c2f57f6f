// Package site is the shared frame of the public web pages: the layout
// every page is drawn in (header with the visitor's session, footer), the
// visitor of a request, the security headers, and the CSRF check of a
// signed-in form. It knows no module: the pages module (modules/pages)
// hosts the site, loads each request's visitor and puts it here (With);
// any module then draws its own public or account pages in the same
// frame (app.SitePager) without importing modules/pages.
//
// A module's page handler reads the visitor with Current, renders a
// component wrapped in Page(LayoutOf(c, title, description)) with Render,
// and returns errors as usual: the host shows them as the site's HTML
// error page (a 404 of the services is "There is nothing here.").
package site

import (
	"errors"
	"sort"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/csrf"
)

// Request is the site's view of a request: who is looking, and what the
// frame needs. The host builds it once per request (With).
type Request struct {
	// Principal is the visitor as the services see them; never nil. A
	// signed-out visitor is a principal without a user id or roles, which
	// sees public things only.
	Principal *app.Principal
	// User is the signed-in user; nil when signed out.
	User *User
	// CSRF is the session's form secret ("" when signed out); every form
	// of a signed-in page sends it back in the field "csrf".
	CSRF string
	// Nav is the header's navigation for a signed-in visitor, in order:
	// the entries the modules' site pages contribute (app.SitePage.Nav)
	// and the host's own.
	Nav []NavItem
	// CSS and JS are the URLs of the site's stylesheet and script.
	CSS, JS string
	// Guard checks the origin and token of a form (CheckPost).
	Guard *csrf.Guard
}

// NavItem is one entry of the header's navigation.
type NavItem struct {
	Title, Href string
	// Order sorts the entries (ascending; ties keep their order).
	Order int
}

// SortNav sorts entries by Order, ties kept in their order.
func SortNav(items []NavItem) {
	sort.SliceStable(items, func(i, j int) bool { return items[i].Order < items[j].Order })
}

// User is the signed-in visitor as the frame shows them.
type User struct {
	ID         int64
	Name, Slug string
}

// SignedIn tells whether the visitor has a session.
func (r *Request) SignedIn() bool { return r != nil && r.User != nil }

const requestKey = "onair.site.request"

// With stores the request's Request for the site's pages (the host calls
// it once the session is read).
func With(c *fiber.Ctx, r *Request) { c.Locals(requestKey, r) }

// Current returns the request's Request; outside the site (no host
// loaded it) an anonymous one.
func Current(c *fiber.Ctx) *Request {
	if r, ok := c.Locals(requestKey).(*Request); ok {
		return r
	}
	return &Request{Principal: &app.Principal{}}
}

// ErrCSRF is the refusal of a form without its token or from another site.
var ErrCSRF = app.Forbidden("the form has expired or did not come from this site; reload the page and try again")

// CheckPost is the start of every form of a signed-in page: a session
// (else 401) and its CSRF token from this site (else 403).
func CheckPost(c *fiber.Ctx) error {
	r := Current(c)
	if !r.SignedIn() {
		return app.Unauthorized("sign in first")
	}
	if r.Guard == nil || !r.Guard.Check(c, r.CSRF) {
		return ErrCSRF
	}
	return nil
}

// Content-Security-Policy of the pages: scripts and styles only from our
// own files (no inline code), media and playlists from anywhere (the
// ingest node may be another host), and framing only by ourselves, except
// the embed page, which any site may frame.
const (
	cspBase = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: http: https:; " +
		"media-src 'self' blob: http: https:; connect-src 'self' http: https:; worker-src 'self' blob:; " +
		"object-src 'none'; base-uri 'self'; form-action 'self'; "
	cspPage  = cspBase + "frame-ancestors 'self'"
	cspEmbed = cspBase + "frame-ancestors *"
)

// Render writes a component as the HTML response, with the site's
// security headers.
func Render(c *fiber.Ctx, status int, comp templ.Component) error {
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	if c.GetRespHeader("Content-Security-Policy") == "" {
		c.Set("Content-Security-Policy", cspPage)
		c.Set(fiber.HeaderXFrameOptions, "SAMEORIGIN")
	}
	c.Set("X-Content-Type-Options", "nosniff")
	// A page that set its own policy (a reset link's no-referrer) keeps it.
	if c.GetRespHeader(fiber.HeaderReferrerPolicy) == "" {
		c.Set(fiber.HeaderReferrerPolicy, "strict-origin-when-cross-origin")
	}
	if c.GetRespHeader(fiber.HeaderCacheControl) == "" {
		c.Set(fiber.HeaderCacheControl, "private, no-cache")
	}
	c.Status(status)
	return comp.Render(c.UserContext(), c.Response().BodyWriter())
}

// Embeddable lets any site frame the response.
func Embeddable(c *fiber.Ctx) {
	c.Set("Content-Security-Policy", cspEmbed)
	c.Response().Header.Del(fiber.HeaderXFrameOptions)
}

// NoStore keeps a page with secrets (tokens, keys) out of every cache.
func NoStore(c *fiber.Ctx) { c.Set(fiber.HeaderCacheControl, "no-store") }

// Redirect answers 303 See Other, the right answer to a form POST.
func Redirect(c *fiber.Ctx, to string) error { return c.Redirect(to, fiber.StatusSeeOther) }

// FormProblem turns a service's refusal of a form into one line for the
// page ("url must be an absolute http or https URL"); ok is false for
// other errors (a 404, a 500), which the handler returns.
func FormProblem(err error) (problem string, ok bool) {
	var apiErr *app.Error
	if !errors.As(err, &apiErr) || apiErr.Status >= 500 || apiErr.Status == fiber.StatusNotFound {
		return "", false
	}
	if len(apiErr.Fields) == 0 {
		return apiErr.Message, true
	}
	var parts []string
	for f, p := range apiErr.Fields {
		parts = append(parts, f+" "+p)
	}
	sort.Strings(parts)
	return strings.Join(parts, "; "), true
}

// UTC renders a time for people, in UTC (the site's script shows it in
// local time where it is in a <time data-local>).
func UTC(t time.Time) string { return t.UTC().Format("2006-01-02 15:04") + " UTC" }
