package admin_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/admin"
	"github.com/onair/onair/admin/admintest"
	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/users"
)

// secretPages is a module of this test binary only: an admin-only page,
// to check that the console mounts any module's pages and hides those
// Casbin refuses.
type secretPages struct{}

func init() { app.Register(&secretPages{}) }

func (*secretPages) Name() string       { return "admin-test-secret" }
func (*secretPages) Policies() []string { return []string{"p, admin, secret, read"} }
func (*secretPages) AdminPages() []app.AdminPage {
	return []app.AdminPage{{Path: "/secret", Title: "Secret", Order: 99, Object: "secret", Action: "read",
		Mount: func(r fiber.Router) {
			r.Get("/", func(c *fiber.Ctx) error { return admin.Render(c, admin.Page("Secret")) })
		}}}
}

func TestSignedOutIsSentToSignIn(t *testing.T) {
	env := admintest.NewEnv(t, "sqlite")
	c := admintest.New(t, env)
	for _, path := range []string{"/admin", "/admin/", "/admin/shows?state=live", "/admin/users/1", "/admin/audit", "/admin/nope"} {
		r := c.Get(path).Expect(t, http.StatusSeeOther)
		if want := "/admin/login?next=" + url.QueryEscape(path); r.Location != want {
			t.Errorf("GET %s: to %q, want %q", path, r.Location, want)
		}
	}
	c.PostNoCSRF("/admin/logout", nil).Refused(t, "signed-out")
	c.Get("/admin/login").Expect(t, http.StatusOK).Contains(t, `name="email"`, `name="password"`, `name="csrf"`)
	if r := c.Get(admin.CSSPath).Expect(t, http.StatusOK); !strings.HasPrefix(r.Header.Get("Content-Type"), "text/css") {
		t.Errorf("stylesheet served as %q", r.Header.Get("Content-Type"))
	}
}

func TestSignIn(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env := admintest.NewEnv(t, backend)
		mod, _ := env.CreateUser("Mo", onairtest.Role("moderator"), onairtest.Password(admintest.Password))
		plain, _ := env.CreateUser("Pat", onairtest.Password(admintest.Password))

		t.Run("wrong password", func(t *testing.T) {
			c := admintest.New(t, env)
			c.SignIn(mod.Email, "not the password").Expect(t, http.StatusUnauthorized).Contains(t, "Wrong email or password")
			c.Get("/admin").Expect(t, http.StatusSeeOther)
		})
		t.Run("unknown email", func(t *testing.T) {
			admintest.New(t, env).SignIn("nobody@example.com", admintest.Password).Expect(t, http.StatusUnauthorized)
		})
		t.Run("not staff", func(t *testing.T) {
			c := admintest.New(t, env)
			c.SignIn(plain.Email, admintest.Password).Expect(t, http.StatusForbidden)
			// No session was started.
			c.Get("/admin").Expect(t, http.StatusSeeOther)
		})
		t.Run("moderator", func(t *testing.T) {
			c := admintest.New(t, env)
			r := c.SignIn(strings.ToUpper(mod.Email), admintest.Password).Expect(t, http.StatusSeeOther)
			if r.Location != "/admin" {
				t.Fatalf("to %q", r.Location)
			}
			cookie := sessionCookie(r)
			for _, attr := range []string{"HttpOnly", "SameSite=Lax", "path=/"} {
				if !strings.Contains(cookie, attr) {
					t.Errorf("session cookie %q lacks %s", cookie, attr)
				}
			}
			page := c.Get("/admin").Expect(t, http.StatusOK)
			page.Contains(t, "Dashboard", "Live now", "Shows today", "Users", "Chat messages today", "Mo")
			for _, h := range []string{"Cache-Control", "X-Frame-Options", "Content-Security-Policy"} {
				if page.Header.Get(h) == "" {
					t.Errorf("no %s header", h)
				}
			}
			// Signed in, the form sends staff on.
			c.Get("/admin/login").Expect(t, http.StatusSeeOther)
		})
		t.Run("next", func(t *testing.T) {
			for next, want := range map[string]string{
				"/admin/users?q=x":     "/admin/users?q=x",
				"//evil.example/":      "/admin",
				"https://evil.example": "/admin",
				"/admin/../x":          "/admin",
				"/adminx":              "/admin",
			} {
				c := admintest.New(t, env)
				c.Get("/admin/login?next="+url.QueryEscape(next)).Expect(t, http.StatusOK)
				r := c.Post("/admin/login", url.Values{"email": {mod.Email}, "password": {admintest.Password}, "next": {next}})
				if r.Status != http.StatusSeeOther || r.Location != want {
					t.Errorf("next %q: %d to %q, want %q", next, r.Status, r.Location, want)
				}
			}
		})
	})
}

func sessionCookie(r *admintest.Response) string {
	for _, c := range r.Header.Values("Set-Cookie") {
		if strings.HasPrefix(c, "onair_session=") && !strings.HasPrefix(c, "onair_session=;") {
			return c
		}
	}
	return ""
}

func TestSignedInNonStaffGets403(t *testing.T) {
	env := admintest.NewEnv(t, "sqlite")
	_, c := admintest.SignedInUser(t, env, "Pat")
	for _, path := range []string{"/admin", "/admin/shows", "/admin/audit"} {
		c.Get(path).Expect(t, http.StatusForbidden).Contains(t, "for staff", "Sign out")
	}
	c.Post("/admin/users", url.Values{"name": {"X"}, "email": {"x@example.com"}}).Expect(t, http.StatusForbidden)
	if n := admintest.AuditCount(t, env, "users.create"); n != 0 {
		t.Fatalf("%d audit entries", n)
	}
	// Signing out works for them too.
	c.Post("/admin/logout", nil).Expect(t, http.StatusSeeOther)
	c.Get("/admin").Expect(t, http.StatusSeeOther)
}

func TestCSRF(t *testing.T) {
	env := admintest.NewEnv(t, "sqlite")
	_, mod := admintest.Staff(t, env, "Mo", "moderator")
	target, _ := env.CreateUser("Target")

	t.Run("sign-in form", func(t *testing.T) {
		c := admintest.New(t, env)
		u, _ := env.CreateUser("Ann", onairtest.Role("admin"), onairtest.Password(admintest.Password))
		c.PostNoCSRF("/admin/login", url.Values{"email": {u.Email}, "password": {admintest.Password}}).Expect(t, http.StatusForbidden)
		c.Get("/admin/login")
		r := c.PostNoCSRF("/admin/login", url.Values{"email": {u.Email}, "password": {admintest.Password}, "csrf": {strings.Repeat("0", 64)}})
		r.Expect(t, http.StatusForbidden)
	})
	path := "/admin/users/" + strconv.FormatInt(target.ID, 10) + "/flags"
	t.Run("missing", func(t *testing.T) {
		mod.PostNoCSRF(path, url.Values{"dj": {"true"}}).Expect(t, http.StatusForbidden).Contains(t, "security token")
	})
	t.Run("wrong", func(t *testing.T) {
		mod.PostNoCSRF(path, url.Values{"dj": {"true"}, "csrf": {strings.Repeat("a", 64)}}).Expect(t, http.StatusForbidden)
	})
	t.Run("header", func(t *testing.T) {
		req, _ := http.NewRequest("POST", env.URL+"/admin/logout", nil)
		req.Header.Set("X-CSRF-Token", "nope")
		resp, err := mod.HTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})
	t.Run("another session's token", func(t *testing.T) {
		_, other := admintest.Staff(t, env, "Other Mo", "moderator")
		if other.CSRF == "" || other.CSRF == mod.CSRF {
			t.Fatalf("tokens %q and %q", other.CSRF, mod.CSRF)
		}
		mod.PostNoCSRF(path, url.Values{"dj": {"true"}, "csrf": {other.CSRF}}).Expect(t, http.StatusForbidden)
	})
	t.Run("another origin, with the right token", func(t *testing.T) {
		mod.Get("/admin/users/" + strconv.FormatInt(target.ID, 10))
		for name, h := range map[string][2]string{
			"Origin":         {"Origin", "https://evil.example"},
			"Sec-Fetch-Site": {"Sec-Fetch-Site", "cross-site"},
		} {
			form := url.Values{"dj": {"true"}, "csrf": {mod.CSRF}}
			req, _ := http.NewRequest("POST", env.URL+path, strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set(h[0], h[1])
			resp, err := mod.HTTP.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			// The console's own error page, not the API's JSON.
			if resp.StatusCode != http.StatusForbidden || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") ||
				!strings.Contains(string(body), "did not come from this site") {
				t.Errorf("%s: %d %s", name, resp.StatusCode, resp.Header.Get("Content-Type"))
			}
		}
	})
	u := getUser(t, env, target.ID)
	if u["dj"] != false {
		t.Fatal("a refused POST changed the user")
	}
	if n := admintest.AuditCount(t, env, "users.flags"); n != 0 {
		t.Fatalf("%d audit entries", n)
	}
	// With the token it goes through.
	mod.Get("/admin/users/" + strconv.FormatInt(target.ID, 10))
	mod.Post(path, url.Values{"dj": {"true"}}).Expect(t, http.StatusSeeOther)
}

func getUser(t *testing.T, env *onairtest.Env, id int64) map[string]any {
	t.Helper()
	_, tok := env.CreateUser("Reader")
	body := env.Do("GET", "/v1/users/"+strconv.FormatInt(id, 10), tok, nil).Expect(t, 200).JSON(t)
	return body["user"].(map[string]any)
}

func TestSignOut(t *testing.T) {
	env := admintest.NewEnv(t, "sqlite")
	_, c := admintest.Staff(t, env, "Mo", "moderator")
	old := c.HTTP.Jar.Cookies(mustURL(env.URL))
	r := c.Post("/admin/logout", nil).Expect(t, http.StatusSeeOther)
	if r.Location != "/admin/login" {
		t.Fatalf("to %q", r.Location)
	}
	if c := sessionCookie(r); c != "" {
		t.Fatalf("sign-out set a session cookie: %q", c)
	}
	c.Get("/admin").Expect(t, http.StatusSeeOther)
	c.Get("/admin/login").Expect(t, http.StatusOK).Contains(t, "Signed out.")
	// The old cookie, replayed, is dead.
	replay := admintest.New(t, env)
	replay.HTTP.Jar.SetCookies(mustURL(env.URL), old)
	replay.Get("/admin").Expect(t, http.StatusSeeOther)
}

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}

func TestLoginThrottle(t *testing.T) {
	run := func(t *testing.T, env *onairtest.Env) {
		u, _ := env.CreateUser("Mo", onairtest.Role("moderator"), onairtest.Password(admintest.Password))
		c := admintest.New(t, env)
		for i := 0; i < users.LoginAttempts; i++ {
			c.SignIn(u.Email, "wrong").Expect(t, http.StatusUnauthorized)
		}
		r := c.SignIn(u.Email, admintest.Password).Expect(t, http.StatusTooManyRequests)
		secs, err := strconv.Atoi(r.Header.Get("Retry-After"))
		if err != nil || secs < 1 || secs > int(users.LoginWindow.Seconds()) {
			t.Fatalf("Retry-After %q", r.Header.Get("Retry-After"))
		}
		r.Contains(t, "too many failed sign-ins")
		// The count is per email: another account from the same address
		// may still sign in.
		other, _ := env.CreateUser("Ann", onairtest.Role("admin"), onairtest.Password(admintest.Password))
		admintest.New(t, env).SignIn(other.Email, admintest.Password).Expect(t, http.StatusSeeOther)
	}
	t.Run("memory", func(t *testing.T) { run(t, admintest.NewEnv(t, "sqlite")) })
	t.Run("redis", func(t *testing.T) {
		onairtest.RequireRedis(t)
		run(t, onairtest.New(t, onairtest.Options{Redis: true}))
	})
	t.Run("success resets the count", func(t *testing.T) {
		env := admintest.NewEnv(t, "sqlite")
		u, _ := env.CreateUser("Mo", onairtest.Role("moderator"), onairtest.Password(admintest.Password))
		c := admintest.New(t, env)
		for i := 0; i < users.LoginAttempts-1; i++ {
			c.SignIn(u.Email, "wrong").Expect(t, http.StatusUnauthorized)
		}
		c.SignIn(u.Email, admintest.Password).Expect(t, http.StatusSeeOther)
		c2 := admintest.New(t, env)
		for i := 0; i < users.LoginAttempts; i++ {
			c2.SignIn(u.Email, "wrong").Expect(t, http.StatusUnauthorized)
		}
	})
}

func TestNavigationComesFromModules(t *testing.T) {
	env := admintest.NewEnv(t, "sqlite")
	_, adm := admintest.Staff(t, env, "Ann", "admin")
	_, mod := admintest.Staff(t, env, "Mo", "moderator")
	nav := []string{`href="/admin/shows"`, `href="/admin/chat"`, `href="/admin/radio"`, `href="/admin/users"`, `href="/admin/audit"`}
	adm.Get("/admin").Expect(t, http.StatusOK).Contains(t, nav...).Contains(t, `href="/admin/secret"`)
	page := mod.Get("/admin").Expect(t, http.StatusOK).Contains(t, nav...)
	if strings.Contains(page.Body, `href="/admin/secret"`) {
		t.Fatal("a moderator sees the admin-only page in the navigation")
	}
	adm.Get("/admin/secret").Expect(t, http.StatusOK)
	mod.Get("/admin/secret").Expect(t, http.StatusForbidden)
	mod.Get("/admin/shows").Expect(t, http.StatusOK).Contains(t, `aria-current="page">Shows`)
}

func TestAuditLog(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env := admintest.NewEnv(t, backend)
		ann, adm := admintest.Staff(t, env, "Ann", "admin")
		ctx := context.Background()
		type state struct {
			Featured bool `json:"featured"`
		}
		if err := admin.Audit(ctx, env.Core.DB, env.Core.Clock, ann.ID, "test.toggle", "thing:7", state{false}, state{true}); err != nil {
			t.Fatal(err)
		}
		if err := admin.Audit(ctx, env.Core.DB, env.Core.Clock, ann.ID, "test.create", "thing:8", nil, map[string]string{"name": "<b>x</b>"}); err != nil {
			t.Fatal(err)
		}
		e := admintest.LastAudit(t, env, "test.toggle", "thing:7")
		if e.ActorID != ann.ID || admintest.Value(e.Before) != `{"featured":false}` || admintest.Value(e.After) != `{"featured":true}` || e.CreatedAt.IsZero() {
			t.Fatalf("entry %+v", e)
		}
		if e := admintest.LastAudit(t, env, "test.create", "thing:8"); e.Before != nil {
			t.Fatalf("before of a create: %q", *e.Before)
		}
		page := adm.Get("/admin/audit").Expect(t, http.StatusOK)
		page.Contains(t, "test.toggle", "thing:7", `featured:</span> <code class="changed">false</code>`,
			`featured:</span> <code class="changed">true</code>`, "Ann", "&#34;&lt;b&gt;x&lt;/b&gt;&#34;")
		adm.Get("/admin/audit?target=thing%3A7").Expect(t, http.StatusOK).Contains(t, "test.toggle")
		if r := adm.Get("/admin/audit?target=thing%3A7"); strings.Contains(r.Body, "test.create") {
			t.Fatal("target filter ignored")
		}
		adm.Get("/admin/audit?action=test.").Expect(t, http.StatusOK).Contains(t, "test.toggle", "test.create")
		adm.Get("/admin/audit?actor="+url.QueryEscape(ann.Email)).Expect(t, http.StatusOK).Contains(t, "test.toggle")
		if r := adm.Get("/admin/audit?actor=nobody%40example.com"); strings.Contains(r.Body, "test.toggle") {
			t.Fatal("actor filter ignored")
		}
		// Moderators read it too.
		_, mod := admintest.Staff(t, env, "Mo", "moderator")
		mod.Get("/admin/audit").Expect(t, http.StatusOK).Contains(t, "test.toggle")
		// The dashboard counts today's staff actions.
		adm.Get("/admin").Contains(t, "Staff actions today")
	})
}

func TestErrorsAreHTML(t *testing.T) {
	env := admintest.NewEnv(t, "sqlite")
	_, adm := admintest.Staff(t, env, "Ann", "admin")
	r := adm.Get("/admin/shows/999999").Expect(t, http.StatusNotFound)
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("content type %q", r.Header.Get("Content-Type"))
	}
	r.Contains(t, "Not Found", `href="/admin/shows"`)
	adm.Post("/admin/users", url.Values{"name": {""}, "email": {"nope"}}).Expect(t, http.StatusUnprocessableEntity).Contains(t, "email", "name")
}
