package app

import (
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
)

// TestLogPathRedactsSecretParams: the access log writes a request's path
// with the values of the parameters named as secrets replaced, however
// the path is spelt, and every other path as it is.
func TestLogPathRedactsSecretParams(t *testing.T) {
	const tok = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	var logs strings.Builder
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	a := fiber.New()
	a.Use(accessLog(log, &pathRedactor{}))
	ok := func(c *fiber.Ctx) error { return c.SendString(LogPath(c)) }
	a.Get("/reset/:token", ok)
	a.Get("/media/shows/:id/t/:token/:file", ok)
	a.Get("/admin/users/:id/tokens/:token_id/revoke", ok)
	a.Get("/:user/:show", ok)
	for _, tc := range []struct{ path, want string }{
		{"/reset/" + tok, "/reset/REDACTED"},
		{"/reset/" + tok + "/", "/reset/REDACTED"},
		{"/RESET/" + tok, "/RESET/REDACTED"},
		{"//reset//" + tok, "/reset/REDACTED"},
		{"/r%65set/" + tok, "/r%65set/REDACTED"},
		{"/reset/" + tok + "/more", "/reset/REDACTED/more"},
		{"/media/shows/7/t/1767225600." + tok[:32] + "/index.m3u8", "/media/shows/7/t/REDACTED/index.m3u8"},
		{"/media/shows/7/t/1767225600." + tok[:32], "/media/shows/7/t/REDACTED"},
		{"/media/shows/7/index.m3u8", "/media/shows/7/index.m3u8"},
		{"/admin/users/3/tokens/9/revoke", "/admin/users/3/tokens/9/revoke"},
		{"/alice/reset", "/alice/reset"},
		{"/reset", "/reset"},
	} {
		logs.Reset()
		resp, err := a.Test(httptest.NewRequest("GET", tc.path+"?token="+tok, nil))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode == fiber.StatusOK && string(body) != tc.want {
			t.Errorf("%s: LogPath %q, want %q", tc.path, body, tc.want)
		}
		if !strings.Contains(logs.String(), `"path":"`+tc.want+`"`) {
			t.Errorf("%s: logged %s, want path %q", tc.path, logs.String(), tc.want)
		}
		if strings.Contains(logs.String(), tok[:32]) {
			t.Errorf("%s: the secret is in the log: %s", tc.path, logs.String())
		}
	}
}

func BenchmarkLogPath(b *testing.B) {
	r := &pathRedactor{}
	for _, p := range []string{"/reset/:token", "/media/shows/:id/t/:token/:file"} {
		sr, _ := parseSecretRoute(p)
		r.routes = append(r.routes, sr)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = r.redact("/v1/shows/1234/chats")
	}
}
