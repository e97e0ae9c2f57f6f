package admin

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/gofiber/fiber/v2"
	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
)

// Request is what the console knows about a signed-in request: the staff
// member, the CSRF secret for forms, the navigation and a flash message
// from the previous action. Pages reach it with Current (handlers) or From
// (templates, through the request's context).
type Request struct {
	User      *app.Account
	Principal *app.Principal
	// CSRF is the session's secret; every form sends it back (CSRFField).
	CSRF  string
	Nav   []NavItem
	Flash *Flash
	// Path is the request's path, for marking the current navigation entry.
	Path string

	authz *app.Authz
	db    *bun.DB
	clock *app.Clock // the kernel's: the audit log's times
}

// NavItem is one entry of the console's navigation.
type NavItem struct {
	Title, Href string
	Current     bool
}

// Flash is the one-line outcome of the previous action, shown once.
type Flash struct {
	Error   bool
	Message string
}

// Can tells whether the signed-in staff member may do act on obj (Casbin);
// templates use it to hide forms the user may not submit. The handler
// behind the form asks again.
func (r *Request) Can(obj, act string) bool {
	if r == nil || r.Principal == nil || r.authz == nil {
		return false
	}
	return r.authz.Allowed(r.Principal.Roles, obj, act)
}

type requestKey struct{}

// From returns the console request carried by ctx (the context of a page's
// handler or template); outside the console it is an empty Request.
func From(ctx context.Context) *Request {
	if r, ok := ctx.Value(requestKey{}).(*Request); ok {
		return r
	}
	return &Request{}
}

// Current returns the console request of a handler.
func Current(c *fiber.Ctx) *Request { return From(c.UserContext()) }

// Principal is the signed-in staff member, as the services expect it.
func Principal(c *fiber.Ctx) *app.Principal { return Current(c).Principal }

// Render writes a page with status 200.
func Render(c *fiber.Ctx, page templ.Component) error {
	return RenderStatus(c, fiber.StatusOK, page)
}

// RenderStatus writes a page with the given status.
func RenderStatus(c *fiber.Ctx, status int, page templ.Component) error {
	c.Status(status)
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	return page.Render(c.UserContext(), c.Response().BodyWriter())
}

// Path builds a console path: Path("/shows/%d", id) is "/admin/shows/12".
func Path(format string, args ...any) string {
	return Prefix + fmt.Sprintf(format, args...)
}

// Redirect ends a form action: it stores the flash message for the next
// page and answers 303 See Other to the console path to (built with Path).
// Form actions redirect rather than render, so reloading the page does not
// repeat the action.
func Redirect(c *fiber.Ctx, to, message string) error {
	setFlash(c, Flash{Message: message})
	return c.Redirect(to, fiber.StatusSeeOther)
}

// Back is Redirect to the page the form was on (the Referer when it is a
// console page), else to fallback.
func Back(c *fiber.Ctx, fallback, message string) error {
	to := fallback
	if ref, err := url.Parse(c.Get(fiber.HeaderReferer)); err == nil && ref.Host == string(c.Request().Host()) {
		if p := ref.RequestURI(); safeNext(p) {
			to = p
		}
	}
	return Redirect(c, to, message)
}

const flashCookie = "onair_admin_flash"

func setFlash(c *fiber.Ctx, f Flash) {
	v := "ok:" + f.Message
	if f.Error {
		v = "error:" + f.Message
	}
	c.Cookie(&fiber.Cookie{Name: flashCookie, Value: url.QueryEscape(v), Path: Prefix, HTTPOnly: true,
		SameSite: fiber.CookieSameSiteLaxMode, MaxAge: 60})
}

// takeFlash reads the flash cookie and clears it.
func takeFlash(c *fiber.Ctx) *Flash {
	raw := c.Cookies(flashCookie)
	if raw == "" {
		return nil
	}
	c.Cookie(&fiber.Cookie{Name: flashCookie, Path: Prefix, HTTPOnly: true, SameSite: fiber.CookieSameSiteLaxMode,
		Expires: time.Unix(1, 0)})
	v, err := url.QueryUnescape(raw)
	if err != nil {
		return nil
	}
	kind, msg, _ := strings.Cut(v, ":")
	if msg == "" {
		return nil
	}
	if len(msg) > 300 {
		msg = msg[:300]
	}
	return &Flash{Error: kind == "error", Message: msg}
}

// IDParam reads a positive integer path parameter; anything else is 404.
func IDParam(c *fiber.Ctx, name string) (int64, error) {
	id, err := strconv.ParseInt(c.Params(name), 10, 64)
	if err != nil || id < 1 {
		return 0, app.NotFound("page")
	}
	return id, nil
}

// FormInt reads an integer form field; empty is 0, anything else not a
// number is a 422 on the field.
func FormInt(c *fiber.Ctx, name string) (int64, error) {
	v := strings.TrimSpace(c.FormValue(name))
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, app.Validation{name: "must be a whole number"}.Err()
	}
	return n, nil
}

// Checked reads a checkbox: present and not "false"/"0" is true.
func Checked(c *fiber.Ctx, name string) bool {
	v := c.FormValue(name)
	return v != "" && v != "false" && v != "0"
}

// PageNumber reads ?page= (default 1; anything else not positive is 1).
func PageNumber(c *fiber.Ctx) int {
	n, err := strconv.Atoi(c.Query("page"))
	if err != nil || n < 1 || n > 1_000_000 {
		return 1
	}
	return n
}

// Pages is the number of pages of count items, size a page.
func Pages(count, size int) int { return (count + size - 1) / size }

// PageLink is the current URL with page set to n (other query parameters
// kept).
func PageLink(c *fiber.Ctx, n int) string {
	q := url.Values{}
	c.Request().URI().QueryArgs().VisitAll(func(k, v []byte) { q.Add(string(k), string(v)) })
	q.Set("page", strconv.Itoa(n))
	return c.Path() + "?" + q.Encode()
}

// Pagination is what the Pager component needs; build it with NewPagination.
type Pagination struct {
	Page, Pages, Count int
	Prev, Next         string
}

// NewPagination describes page n of count items, size a page.
func NewPagination(c *fiber.Ctx, n, count, size int) Pagination {
	p := Pagination{Page: n, Pages: Pages(count, size), Count: count}
	if n > 1 {
		p.Prev = PageLink(c, min(n-1, max(p.Pages, 1)))
	}
	if n < p.Pages {
		p.Next = PageLink(c, n+1)
	}
	return p
}

// Time formats a time the way the API does (UTC).
func Time(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05") }
