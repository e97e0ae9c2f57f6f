package csrf_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/internal/csrf"
)

const secret = "5ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75ec2"

// site is a Fiber app behind the guard: /session checks a session's
// secret, /form a signed-out browser's token, /token hands one out.
func site(t *testing.T, publicURL string) *fiber.App {
	t.Helper()
	g, err := csrf.New(publicURL)
	if err != nil {
		t.Fatal(err)
	}
	a := fiber.New()
	answer := func(c *fiber.Ctx, ok bool) error {
		if !ok {
			return c.SendStatus(http.StatusForbidden)
		}
		return c.SendStatus(http.StatusNoContent)
	}
	a.Post("/session", func(c *fiber.Ctx) error { return answer(c, g.Check(c, secret)) })
	a.Post("/form", func(c *fiber.Ctx) error { return answer(c, g.CheckForm(c)) })
	a.Get("/token", func(c *fiber.Ctx) error {
		tok, err := g.FormToken(c)
		if err != nil {
			return err
		}
		return c.SendString(tok)
	})
	return a
}

func TestCheck(t *testing.T) {
	a := site(t, "https://onair.example")
	tests := []struct {
		name   string
		host   string // Host header (default: the public one)
		token  string // form field
		header map[string]string
		want   int
	}{
		{"right token, no origin headers (curl)", "", secret, nil, 204},
		{"no token", "", "", nil, 403},
		{"wrong token", "", strings.Repeat("0", 64), nil, 403},
		{"a prefix of the token", "", secret[:32], nil, 403},
		{"token in the header", "", "", map[string]string{csrf.Header: secret}, 204},
		{"same origin (browser)", "", secret, map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "https://onair.example"}, 204},
		{"typed in the address bar", "", secret, map[string]string{"Sec-Fetch-Site": "none"}, 204},
		{"another site", "", secret, map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}, 403},
		{"a sibling subdomain", "", secret, map[string]string{"Sec-Fetch-Site": "same-site", "Origin": "https://evil.onair.example"}, 403},
		{"old browser, another origin", "", secret, map[string]string{"Origin": "https://evil.example"}, 403},
		{"old browser, same host", "", secret, map[string]string{"Origin": "https://onair.example"}, 204},
		{"behind a proxy that rewrites Host: the public origin", "10.0.0.5:8080", secret,
			map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://onair.example"}, 204},
		{"behind a proxy that rewrites Host: another origin", "10.0.0.5:8080", secret,
			map[string]string{"Origin": "https://evil.example"}, 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			form := url.Values{}
			if tt.token != "" {
				form.Set(csrf.Field, tt.token)
			}
			req := httptest.NewRequest("POST", "https://onair.example/session", strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			if tt.host != "" {
				req.Host = tt.host
			}
			for k, v := range tt.header {
				req.Header.Set(k, v)
			}
			resp, err := a.Test(req, -1)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.want)
			}
		})
	}
}

// A signed-out browser gets a token in an HttpOnly, SameSite=Lax cookie
// (Secure on an https site), keeps it, and its form must repeat it.
func TestFormToken(t *testing.T) {
	a := site(t, "https://onair.example")
	resp, err := a.Test(httptest.NewRequest("GET", "/token", nil), -1)
	if err != nil {
		t.Fatal(err)
	}
	cookies := resp.Cookies()
	if len(cookies) != 1 || cookies[0].Name != csrf.Cookie || !cookies[0].HttpOnly || !cookies[0].Secure ||
		cookies[0].SameSite != http.SameSiteLaxMode || len(cookies[0].Value) != 64 {
		t.Fatalf("cookies %+v", cookies)
	}
	token := cookies[0].Value

	get := func(cookie string) (*http.Response, string) {
		req := httptest.NewRequest("GET", "/token", nil)
		req.AddCookie(&http.Cookie{Name: csrf.Cookie, Value: cookie})
		resp, err := a.Test(req, -1)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	if resp, got := get(token); got != token || len(resp.Cookies()) != 0 {
		t.Fatalf("a browser with a token got %q and cookies %v", got, resp.Cookies())
	}
	if resp, got := get("not-hex-" + token[8:]); got == token || len(resp.Cookies()) != 1 {
		t.Fatalf("a malformed cookie was kept: %q", got)
	}

	post := func(cookie, field string) int {
		req := httptest.NewRequest("POST", "/form", strings.NewReader(url.Values{csrf.Field: {field}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if cookie != "" {
			req.AddCookie(&http.Cookie{Name: csrf.Cookie, Value: cookie})
		}
		resp, err := a.Test(req, -1)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode
	}
	for _, tc := range []struct {
		name          string
		cookie, field string
		want          int
	}{
		{"matching", token, token, 204},
		{"no cookie", "", token, 403},
		{"no field", token, "", 403},
		{"another browser's token", token, strings.Repeat("a", 64), 403},
		{"cookie and field both forged short", "x", "x", 403},
	} {
		if got := post(tc.cookie, tc.field); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestNewRefusesARelativeURL(t *testing.T) {
	if _, err := csrf.New("/relative"); err == nil {
		t.Fatal("no error")
	}
}
