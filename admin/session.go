package admin

import (
	"context"
	"errors"
	"net/url"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/csrf"
)

// Login throttling is the accounts' (app.Accounts.SignIn, the users
// module), shared with the public sign-in form.

// CSRFFieldName is the form field (or X-CSRF-Token header) that carries
// the session's CSRF secret on every POST; internal/csrf checks it, for
// the console as for the public pages.
const CSRFFieldName = csrf.Field

// loginForm is GET /admin/login.
func (m *Module) loginForm(c *fiber.Ctx) error {
	if sess, err := m.accounts.WebSession(c); err == nil && sess != nil && m.isStaff(sess.Account) {
		return c.Redirect(nextPath(c.Query("next")), fiber.StatusSeeOther)
	}
	// The sign-in form has no session yet: its token is the signed-out
	// browser's (a cookie the form repeats).
	token, err := m.csrf.FormToken(c)
	if err != nil {
		return err
	}
	// The flash of a sign-out is shown here.
	c.SetUserContext(context.WithValue(c.UserContext(), requestKey{}, &Request{Flash: takeFlash(c), Path: c.Path()}))
	return Render(c, loginPage(loginView{CSRF: token, Next: nextPath(c.Query("next"))}))
}

// login is POST /admin/login: CSRF, throttle, password, staff, session.
func (m *Module) login(c *fiber.Ctx) error {
	if !m.csrf.CheckForm(c) {
		return app.Forbidden("the sign-in form has expired or did not come from this site; reload it and try again")
	}
	email := strings.ToLower(strings.TrimSpace(c.FormValue("email")))
	view := loginView{CSRF: c.FormValue(CSRFFieldName), Next: nextPath(c.FormValue("next")), Email: email}
	u, err := m.accounts.SignIn(c.UserContext(), email, c.FormValue("password"), c.IP())
	if errors.Is(err, app.ErrWrongPassword) {
		view.Error = "Wrong email or password."
		return RenderStatus(c, fiber.StatusUnauthorized, loginPage(view))
	}
	if errors.Is(err, app.ErrSuspended) {
		view.Error = "This account is suspended."
		return RenderStatus(c, fiber.StatusForbidden, loginPage(view))
	}
	if err != nil {
		return err
	}
	if !m.isStaff(u) {
		// The password was right, so this is no guessing: no failure is
		// counted, but the console is for staff and signs nobody else in.
		return app.Forbidden("the console is for staff; this account is not a moderator or an admin")
	}
	// A fresh session id on every sign-in (no fixation).
	if err := m.accounts.EndWebSession(c); err != nil {
		return err
	}
	if err := m.accounts.StartWebSession(c, u.ID); err != nil {
		return err
	}
	return c.Redirect(view.Next, fiber.StatusSeeOther)
}

// logout is POST /admin/logout (CSRF-checked like every POST).
func (m *Module) logout(c *fiber.Ctx) error {
	if err := m.accounts.EndWebSession(c); err != nil {
		return err
	}
	setFlash(c, Flash{Message: "Signed out."})
	return c.Redirect(Prefix+"/login", fiber.StatusSeeOther)
}

// session loads the signed-in user of the request. Without a session,
// every request is sent to the sign-in form (GET keeps where it was
// going). Every other method must come from this site and carry the
// session's CSRF secret.
func (m *Module) session(c *fiber.Ctx) error {
	sess, err := m.accounts.WebSession(c)
	if err != nil {
		return err
	}
	if sess == nil {
		to := Prefix + "/login"
		if c.Method() == fiber.MethodGet {
			to += "?next=" + url.QueryEscape(string(c.Request().RequestURI()))
		}
		return c.Redirect(to, fiber.StatusSeeOther)
	}
	p := sess.Account.Principal
	app.SetPrincipal(c, p)
	req := &Request{User: sess.Account, Principal: p, CSRF: sess.CSRF, Path: c.Path(), authz: m.core.Authz, db: m.core.DB, clock: m.core.Clock}
	c.SetUserContext(context.WithValue(c.UserContext(), requestKey{}, req))
	if c.Method() != fiber.MethodGet && c.Method() != fiber.MethodHead {
		if !m.csrf.Check(c, sess.CSRF) {
			return app.Forbidden("the form is missing its security token, has expired or did not come from this site; reload the page and try again")
		}
	} else {
		req.Flash = takeFlash(c)
	}
	return c.Next()
}

// staffOnly answers 403 to a signed-in user who is not staff, and builds
// the navigation for those who are.
func (m *Module) staffOnly(c *fiber.Ctx) error {
	req := Current(c)
	if !req.Can("admin", "enter") {
		return app.Forbidden("the console is for staff; your account is not a moderator or an admin")
	}
	for _, p := range m.pages {
		if p.Title == "" || (p.Object != "" && !req.Can(p.Object, p.Action)) {
			continue
		}
		href := Prefix + p.Path
		current := req.Path == href || req.Path == href+"/" || (p.Path != "" && strings.HasPrefix(req.Path, href+"/"))
		req.Nav = append(req.Nav, NavItem{Title: p.Title, Href: href, Current: current})
	}
	return c.Next()
}

func (m *Module) isStaff(a *app.Account) bool {
	return a != nil && m.core.Authz.Allowed(a.Principal.Roles, "admin", "enter")
}

// nextPath keeps a redirect target only when it is a console path on this
// site (no //host, no backslashes): anything else goes to the dashboard.
func nextPath(next string) string {
	if safeNext(next) {
		return next
	}
	return Prefix
}

func safeNext(p string) bool {
	return (p == Prefix || strings.HasPrefix(p, Prefix+"/") || strings.HasPrefix(p, Prefix+"?")) &&
		!strings.ContainsAny(p, "\\\r\n") && !strings.Contains(p, "..") && !strings.HasPrefix(p, Prefix+"/login") && !strings.HasPrefix(p, Prefix+"/logout")
}

// securityHeaders: console pages are never cached, framed or leaked in a
// Referer, and load nothing but their own stylesheet.
func securityHeaders(c *fiber.Ctx) error {
	c.Set("Cache-Control", "no-store")
	c.Set("X-Frame-Options", "DENY")
	c.Set("X-Content-Type-Options", "nosniff")
	c.Set("Referrer-Policy", "same-origin")
	c.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	return c.Next()
}
