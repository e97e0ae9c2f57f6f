package app_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
)

// jukebox is a module of this test binary only, with one public route:
// booting with it must reserve its first segment, /jukebox.
type jukebox struct{}

func init() { app.Register(&jukebox{}) }

func (*jukebox) Name() string { return "jukebox" }

func (*jukebox) PublicRoutes(r fiber.Router) {
	r.Get("/jukebox/:id", func(c *fiber.Ctx) error { return c.SendString("now playing") })
}

var _ app.PublicRouter = (*jukebox)(nil)

// Every path the running server routes, the kernel's and every module's
// (the test module's too), is reserved by its first segment; users given
// one of those names, through the CLI, the sign-up form or a service, get
// the next free slug.
func TestRoutesReserveSlugs(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{})
	literal := regexp.MustCompile(`^/([^/:*+?]+)`)
	seen := 0
	for _, r := range env.Server.App.GetRoutes() {
		m := literal.FindStringSubmatch(r.Path)
		if m == nil {
			continue
		}
		seen++
		if !env.Core.ReservedSlug(m[1]) {
			t.Errorf("%s %s is routed, but %q is not reserved", r.Method, r.Path, m[1])
		}
	}
	if seen < 10 {
		t.Fatalf("only %d routes looked at", seen)
	}
	for slug, want := range map[string]bool{"jukebox": true, "Admin": true, "studio": true, "www": true, "api": true, "dj-nova": false, "jukebox-2": false} {
		if got := env.Core.ReservedSlug(slug); got != want {
			t.Errorf("ReservedSlug(%q) = %v, want %v", slug, got, want)
		}
	}

	t.Run("a service", func(t *testing.T) {
		for name, want := range map[string]string{"Jukebox": "jukebox-2", "Admin": "admin-2", "Studio": "studio-2", "Healthz": "healthz-2"} {
			if u, _ := env.CreateUser(name); u.Slug != want {
				t.Errorf("%s got the slug %q, want %q", name, u.Slug, want)
			}
		}
	})

	t.Run("the CLI", func(t *testing.T) {
		settings, _ := cliSettings(t, "sqlite")
		r := cli(settings, "users", "create", "--name", "Jukebox", "--email", "jukebox@example.com")
		var out struct {
			User struct{ Slug string } `json:"user"`
		}
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &out) != nil || out.User.Slug != "jukebox-2" {
			t.Fatalf("users create: %+v", r)
		}
	})

	t.Run("the sign-up form", func(t *testing.T) {
		jar, _ := cookiejar.New(nil)
		client := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := client.Get(env.URL + "/signup")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		token := regexp.MustCompile(`name="csrf" value="([0-9a-f]{64})"`).FindSubmatch(body)
		if token == nil {
			t.Fatalf("no form token on /signup (%d)", resp.StatusCode)
		}
		form := url.Values{"csrf": {string(token[1])}, "name": {"Jukebox"}, "email": {"signup-jukebox@example.com"}, "password": {"long enough"}}
		resp, err = client.PostForm(env.URL+"/signup", form)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("sign up: %d", resp.StatusCode)
		}
		var slug string
		if err := env.Core.DB.NewSelect().Table("users").Column("slug").Where("email = ?", "signup-jukebox@example.com").Scan(t.Context(), &slug); err != nil || !strings.HasPrefix(slug, "jukebox-") {
			t.Fatalf("signed up with the slug %q (%v)", slug, err)
		}
	})

	// The module's own path is still its own, not a user page.
	if r := env.Do("GET", "/jukebox/1", "", nil); r.Status != 200 || string(r.Body) != "now playing" {
		t.Fatalf("GET /jukebox/1: %d %s", r.Status, r.Body)
	}
}
