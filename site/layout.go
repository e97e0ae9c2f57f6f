package site

import (
	"net/url"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// Layout is what the frame of a page (Page) needs.
type Layout struct {
	Title       string
	Description string
	Canonical   string
	// Image, when set, is the page's picture for link previews
	// (og:image): a show's image_url, a user's avatar.
	Image     string
	CSS, JS   string
	BodyClass string
	Path      string // the request path, for "sign in and come back"
	// SignIn is the header's sign-in link: back to this page afterwards,
	// or, on the sign-in and sign-up pages, to where they lead.
	SignIn   string
	SignedIn bool
	UserName string
	UserPath string
	// Nav is the header's navigation of a signed-in visitor (Request.Nav).
	Nav  []NavItem
	CSRF string
	// Feed, when set, is the page's podcast feed (<link rel="alternate">).
	Feed, FeedTitle string
}

// LayoutOf is the frame of the current request's page (Current), with
// its title and meta description.
func LayoutOf(c *fiber.Ctx, title, description string) Layout {
	return NewLayout(c, Current(c), title, description)
}

// NewLayout is the frame of a page seen by r.
func NewLayout(c *fiber.Ctx, r *Request, title, description string) Layout {
	l := Layout{
		Title: title, Description: description, CSS: r.CSS, JS: r.JS,
		Path: string(c.Request().URI().RequestURI()),
	}
	l.SignIn = "/signin?next=" + url.QueryEscape(l.Path)
	switch c.Path() {
	case "/signin", "/signup":
		l.SignIn = "/signin"
		if next := SafeNext(c.Query("next")); next != "" {
			l.SignIn += "?next=" + url.QueryEscape(next)
		}
	case "/":
		l.SignIn = "/signin"
	}
	if r.SignedIn() {
		l.SignedIn, l.UserName, l.UserPath, l.Nav, l.CSRF = true, r.User.Name, "/"+r.User.Slug, r.Nav, r.CSRF
	}
	return l
}

// SafeNext keeps a post-sign-in redirect on this site: a path of ours,
// or "".
func SafeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.ContainsRune(next, '\\') {
		return ""
	}
	// Browsers drop tabs and newlines inside URLs ("/\t/evil" is "//evil"):
	// refuse every control character, and anything with a scheme or host.
	for _, r := range next {
		if r < 0x20 || r == 0x7f {
			return ""
		}
	}
	if u, err := url.Parse(next); err != nil || u.Scheme != "" || u.Host != "" {
		return ""
	}
	return next
}
