// Package admintest drives the staff console over real HTTP in tests: a
// browser-like client with a cookie jar that signs in, keeps the CSRF
// token of the last page it read and posts forms with it. Each module's
// console tests use it with onairtest.New.
package admintest

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/admin"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/users"
)

// Password is the password of the staff Staff creates.
const Password = "correct horse battery"

// Client is one browser session on the console.
type Client struct {
	T    testing.TB
	Env  *onairtest.Env
	HTTP *http.Client
	// CSRF is the token of the last console page read (the hidden field).
	CSRF string
}

// Response is an answered request. Location is set on redirects.
type Response struct {
	Status   int
	Header   http.Header
	Body     string
	Location string
}

// New returns a signed-out client that does not follow redirects, so a
// test sees every 303.
func New(t testing.TB, env *onairtest.Env) *Client {
	jar, _ := cookiejar.New(nil)
	return &Client{T: t, Env: env, HTTP: &http.Client{
		Jar: jar, Timeout: env.Client.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// Staff creates a user with role ("admin", "moderator" or "" for a plain
// user) and the Password, and returns them with a client signed in to the
// console (for a plain user the sign-in is refused: the client is signed
// out).
func Staff(t testing.TB, env *onairtest.Env, name, role string) (*users.User, *Client) {
	t.Helper()
	u, _ := env.CreateUser(name, onairtest.Role(role), onairtest.Password(Password))
	c := New(t, env)
	resp := c.SignIn(u.Email, Password)
	if role != "" {
		if resp.Status != http.StatusSeeOther || resp.Location != admin.Prefix {
			t.Fatalf("sign-in of %s: %d %s: %s", name, resp.Status, resp.Location, resp.Body)
		}
		c.Get(admin.Prefix).Expect(t, http.StatusOK)
	}
	return u, c
}

// NewEnv boots OnAir for console tests on backend ("sqlite" or "mysql"),
// with one extra test-only route that signs a browser in as any user
// (/_test/session/:id), the way the public pages would: the console must
// refuse such a session when the user is not staff.
func NewEnv(t testing.TB, backend string) *onairtest.Env {
	t.Helper()
	var env *onairtest.Env
	env = onairtest.New(t, onairtest.Options{Backend: backend, Mount: func(a *fiber.App) {
		a.Get("/_test/session/:id", func(c *fiber.Ctx) error {
			m, _ := onairtest.Module[*users.Module](env)
			id, err := c.ParamsInt("id")
			if err != nil {
				return err
			}
			if _, err := m.Service.StartSession(c, int64(id)); err != nil {
				return err
			}
			return c.SendString("signed in")
		})
	}})
	return env
}

// SignedInUser creates a plain user signed in with a web session (as on
// the public pages) and returns them with that browser. The env must come
// from NewEnv.
func SignedInUser(t testing.TB, env *onairtest.Env, name string) (*users.User, *Client) {
	t.Helper()
	u, _ := env.CreateUser(name, onairtest.Password(Password))
	c := New(t, env)
	c.do(http.MethodGet, "/_test/session/"+strconv.FormatInt(u.ID, 10), nil).Expect(t, http.StatusOK)
	return u, c
}

// Roles are the four kinds of visitors every console action is tried
// with.
var Roles = []string{"admin", "moderator", "user", "signed-out"}

// Visitor returns a client of the kind: staff signed in, a plain user
// signed in on the public side, or nobody.
func Visitor(t testing.TB, env *onairtest.Env, kind string) *Client {
	t.Helper()
	switch kind {
	case "admin", "moderator":
		_, c := Staff(t, env, "A "+kind, kind)
		return c
	case "user":
		_, c := SignedInUser(t, env, "A user")
		// The 403 page still carries the session's CSRF token (for its
		// sign-out button), so the user's posts are refused for not being
		// staff, not for a missing token.
		c.Get(admin.Prefix).Expect(t, http.StatusForbidden)
		return c
	}
	return New(t, env)
}

// Refused checks the answer of a console action to a visitor who may not
// do it: signed-out visitors are sent to the sign-in form, signed-in
// non-staff get 403, and so do staff whom Casbin refuses.
func (r *Response) Refused(t testing.TB, kind string) {
	t.Helper()
	if kind == "signed-out" {
		if r.Status != http.StatusSeeOther || !strings.HasPrefix(r.Location, admin.Prefix+"/login") {
			t.Fatalf("signed out: %d to %q, want 303 to the sign-in form", r.Status, r.Location)
		}
		return
	}
	r.Expect(t, http.StatusForbidden)
}

// SignIn reads the sign-in form (for its CSRF cookie and field) and posts
// it.
func (c *Client) SignIn(email, password string) *Response {
	c.T.Helper()
	form := c.Get(admin.Prefix + "/login")
	if form.Status != http.StatusOK {
		c.T.Fatalf("sign-in form: %d", form.Status)
	}
	return c.Post(admin.Prefix+"/login", url.Values{"email": {email}, "password": {password}})
}

var csrfField = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

// Get reads a page and remembers its CSRF token.
func (c *Client) Get(path string) *Response {
	c.T.Helper()
	r := c.do(http.MethodGet, path, nil)
	if m := csrfField.FindStringSubmatch(r.Body); m != nil {
		c.CSRF = m[1]
	}
	return r
}

// Post submits a form with the remembered CSRF token (read a page first).
func (c *Client) Post(path string, form url.Values) *Response {
	c.T.Helper()
	f := url.Values{}
	for k, v := range form {
		f[k] = v
	}
	f.Set(admin.CSRFFieldName, c.CSRF)
	return c.do(http.MethodPost, path, f)
}

// PostNoCSRF submits a form without the token, as a forged request would.
func (c *Client) PostNoCSRF(path string, form url.Values) *Response {
	c.T.Helper()
	return c.do(http.MethodPost, path, form)
}

func (c *Client) do(method, path string, form url.Values) *Response {
	c.T.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, c.Env.URL+path, body)
	if err != nil {
		c.T.Fatalf("request: %v", err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		c.T.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		c.T.Fatalf("%s %s: read: %v", method, path, err)
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: string(data), Location: resp.Header.Get("Location")}
}

// Expect fails the test unless the status is want.
func (r *Response) Expect(t testing.TB, want int) *Response {
	t.Helper()
	if r.Status != want {
		body := r.Body
		if len(body) > 2000 {
			body = body[:2000] + "…"
		}
		t.Fatalf("status %d, want %d (location %q): %s", r.Status, want, r.Location, body)
	}
	return r
}

// Contains fails the test unless the body holds every one of texts.
func (r *Response) Contains(t testing.TB, texts ...string) *Response {
	t.Helper()
	for _, s := range texts {
		if !strings.Contains(r.Body, s) {
			t.Fatalf("page does not contain %q", s)
		}
	}
	return r
}

// Audit returns the audit entries matching q, newest first.
func Audit(t testing.TB, env *onairtest.Env, q admin.AuditQuery) []admin.Entry {
	t.Helper()
	q.Page.Number, q.Page.Size = 1, 1000
	list, _, err := admin.Entries(context.Background(), env.Core.DB, q)
	if err != nil {
		t.Fatalf("audit: %v", err)
	}
	return list
}

// LastAudit is the newest entry of the action on target; it fails the test
// when there is none.
func LastAudit(t testing.TB, env *onairtest.Env, action, target string) admin.Entry {
	t.Helper()
	list := Audit(t, env, admin.AuditQuery{Action: action, Target: target})
	if len(list) == 0 {
		t.Fatalf("no audit entry %s on %s", action, target)
	}
	return list[0]
}

// AuditCount is the number of entries of the action (any target).
func AuditCount(t testing.TB, env *onairtest.Env, action string) int {
	t.Helper()
	return len(Audit(t, env, admin.AuditQuery{Action: action}))
}

// Value is an entry's before or after JSON ("" for none).
func Value(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
