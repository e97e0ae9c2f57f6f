// Package csrf guards the forms of the public pages and of the staff
// console against cross-site request forgery. Both sign browsers in with
// the same session cookie, and both use this one implementation.
//
// A request that changes something (any method but GET, HEAD and OPTIONS)
// goes on only when both checks pass:
//
//   - Origin: the browser does not say it comes from another site. This is
//     Go's net/http CrossOriginProtection (Sec-Fetch-Site, or else Origin
//     against Host), with the public URL's origin trusted as well, for a
//     proxy that rewrites Host. A client that sends neither header (curl,
//     old browsers) passes this check and still needs the token.
//   - Token: the request carries a token in the form field "csrf" (or the
//     X-CSRF-Token header, for scripts). A signed-in browser's token is the
//     CSRF secret of its session, stored with the session by the users
//     module: every node knows it, it survives restarts, it dies with the
//     session, and another session's token is worthless. A signed-out
//     browser (the sign-in and sign-up forms) has no session yet; its token
//     is the value of the onair_csrf cookie, which the form repeats (double
//     submit).
//
// Fiber's csrf middleware was the alternative. In Fiber v2 it keeps tokens
// in its own storage (process memory unless a shared store is configured)
// or in Fiber's session package, not in our sessions table, so a token
// would not be tied to our session and would not survive a restart or a
// second node without more storage; and it checks the origin of HTTPS
// requests only.
package csrf

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
)

const (
	// Field is the form field every form posts its token in.
	Field = "csrf"
	// Header carries the token of a script's request instead of Field.
	Header = "X-CSRF-Token"
	// Cookie holds a signed-out browser's token.
	Cookie = "onair_csrf"
	// FormTokenLifetime is how long a signed-out browser keeps its token.
	FormTokenLifetime = 24 * time.Hour
)

// NewSecret returns a fresh token: 32 random bytes in hex.
func NewSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("csrf: randomness: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// Guard checks the requests of one site.
type Guard struct {
	origins *http.CrossOriginProtection
	secure  bool // the public URL is https: the cookie is Secure
}

// New returns the guard of the site whose public base URL is publicURL.
func New(publicURL string) (*Guard, error) {
	u, err := url.Parse(publicURL)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("csrf: public URL %q is not absolute", publicURL)
	}
	g := &Guard{origins: http.NewCrossOriginProtection(), secure: u.Scheme == "https"}
	if err := g.origins.AddTrustedOrigin(u.Scheme + "://" + u.Host); err != nil {
		return nil, fmt.Errorf("csrf: %w", err)
	}
	return g, nil
}

// SameOrigin is false when the browser says an unsafe request comes from
// another site.
func (g *Guard) SameOrigin(c *fiber.Ctx) bool {
	req := &http.Request{Method: c.Method(), Host: string(c.Request().Host()), Header: http.Header{}}
	for _, h := range []string{"Sec-Fetch-Site", fiber.HeaderOrigin} {
		if v := c.Get(h); v != "" {
			req.Header.Set(h, v)
		}
	}
	return g.origins.Check(req) == nil
}

// Check tells whether an unsafe request may go on: it comes from this site
// and carries secret (a session's CSRF secret) as its token. An empty
// secret never matches.
func (g *Guard) Check(c *fiber.Ctx, secret string) bool {
	if !g.SameOrigin(c) {
		return false
	}
	token := c.FormValue(Field)
	if token == "" {
		token = c.Get(Header)
	}
	return secret != "" && len(token) == len(secret) && subtle.ConstantTimeCompare([]byte(token), []byte(secret)) == 1
}

// FormToken returns the token of a signed-out browser for its form,
// setting the cookie that holds it when the browser has none.
func (g *Guard) FormToken(c *fiber.Ctx) (string, error) {
	if t := c.Cookies(Cookie); validToken(t) {
		return t, nil
	}
	t, err := NewSecret()
	if err != nil {
		return "", err
	}
	c.Cookie(&fiber.Cookie{Name: Cookie, Value: t, Path: "/", HTTPOnly: true, SameSite: fiber.CookieSameSiteLaxMode,
		Secure: g.secure, Expires: time.Now().Add(FormTokenLifetime)})
	return t, nil
}

// CheckForm is Check for a signed-out browser: the token must repeat its
// cookie's.
func (g *Guard) CheckForm(c *fiber.Ctx) bool {
	t := c.Cookies(Cookie)
	return validToken(t) && g.Check(c, t)
}

func validToken(t string) bool {
	if len(t) != 64 {
		return false
	}
	return strings.Trim(t, "0123456789abcdef") == ""
}
