package ping_test

import (
	"bytes"
	"context"
	"flag"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onair/onair/admin/admintest"
	"github.com/onair/onair/app"
	"github.com/onair/onair/docs/example/ping"
	"github.com/onair/onair/internal/onairtest"
)

// The API, against a whole running OnAir on SQLite and (with
// ONAIR_TEST_MYSQL_DSN) MySQL; every answer is checked against
// /v1/openapi.json, which carries the module's fragment.
func TestPing(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env := onairtest.New(t, onairtest.Options{Backend: backend})
		_, tok := env.CreateUser("Pat Pinger")
		env.Do("POST", "/v1/pings", tok, map[string]any{"note": "hello"}).Expect(t, 200)
		body := env.Do("GET", "/v1/pings", tok, nil).Expect(t, 200).JSON(t)
		if body["count"] != float64(1) {
			t.Fatalf("count %v", body["count"])
		}
		env.Do("POST", "/v1/pings", tok, map[string]any{"note": strings.Repeat("n", 101)}).Expect(t, 422)
		env.Do("GET", "/v1/pings", "", nil).Expect(t, 401)
	})
}

// The setting is read, validated and documented by the kernel like its own.
func TestRetentionSetting(t *testing.T) {
	load := func(env map[string]string, args ...string) (*app.Config, error) {
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		return app.LoadConfig(fs, args, func(k string) string { return env[k] })
	}
	c, err := load(nil)
	if err != nil || app.Get[time.Duration](c, ping.SettingRetention) != 168*time.Hour {
		t.Fatalf("default: %v", err)
	}
	if c, err := load(nil, "-ping-retention", "36h"); err != nil || app.Get[time.Duration](c, ping.SettingRetention) != 36*time.Hour {
		t.Fatalf("flag: %v", err)
	}
	for _, tc := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{map[string]string{ping.SettingRetention: "10m"}, nil, ping.SettingRetention},
		{map[string]string{ping.SettingRetention: "a week"}, nil, ping.SettingRetention},
		{nil, []string{"-ping-retention", "0s"}, "-ping-retention"},
	} {
		if _, err := load(tc.env, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v %v: error %v does not name %s", tc.env, tc.args, err, tc.want)
		}
	}
	if !strings.Contains(app.SettingsHelp(), ping.SettingRetention) {
		t.Error("onair help does not list the setting")
	}
}

// insertPing stores a ping created age ago.
func insertPing(t *testing.T, env *onairtest.Env, userID int64, note string, age time.Duration) {
	t.Helper()
	p := &ping.Ping{UserID: userID, Note: note, CreatedAt: app.Now().Add(-age)}
	if _, err := env.Core.DB.NewInsert().Model(p).Exec(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// The console page: in the navigation, listing pings, purging those older
// than the retention (a setting changed for the test), audited, and
// refusing a form without its token.
func TestConsolePage(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{Configure: func(c *app.Config) { c.Set(ping.SettingRetention, 2*time.Hour) }})
	u, _ := env.CreateUser("Pat Pinger")
	insertPing(t, env, u.ID, "an old ping", 3*time.Hour)
	insertPing(t, env, u.ID, "a fresh ping", time.Minute)
	_, mod := admintest.Staff(t, env, "Mo", "moderator")

	mod.Get("/admin").Expect(t, http.StatusOK).Contains(t, `href="/admin/pings"`)
	mod.Get("/admin/pings").Expect(t, http.StatusOK).Contains(t, "an old ping", "a fresh ping", "kept for 2h0m0s")
	mod.PostNoCSRF("/admin/pings/purge", nil).Expect(t, http.StatusForbidden)
	r := mod.Post("/admin/pings/purge", nil).Expect(t, http.StatusSeeOther)
	if r.Location != "/admin/pings" {
		t.Fatalf("purge went on to %q", r.Location)
	}
	page := mod.Get("/admin/pings").Expect(t, http.StatusOK).Contains(t, "1 pings purged.", "a fresh ping")
	if strings.Contains(page.Body, "an old ping") {
		t.Fatal("the old ping is still listed")
	}
	if n := admintest.AuditCount(t, env, "pings.purge"); n != 1 {
		t.Fatalf("%d audit entries", n)
	}
}

// The public page: the site's host (modules/pages) mounts it with no line
// naming the module, draws it in the site's layout with the visitor's
// session, keeps its first segment from user slugs, and its form needs
// the session's token.
func TestPublicPage(t *testing.T) {
	env := admintest.NewEnv(t, "sqlite")
	if !env.Core.ReservedSlug("pings") {
		t.Fatal("/pings is not reserved")
	}
	anon := admintest.New(t, env)
	r := anon.Get("/pings").Expect(t, http.StatusOK).
		Contains(t, "<title>Pings · OnAir</title>", `<header class="site">`, `<footer class="site">`, "0 pings so far.",
			`href="/signin?next=%2Fpings"`, "to ping.")
	if csp := r.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
		t.Fatalf("no Content-Security-Policy of the site: %q", csp)
	}
	anon.PostNoCSRF("/pings", url.Values{"note": {"hi"}}).Expect(t, http.StatusUnauthorized).Contains(t, `<header class="site">`)

	u, b := admintest.SignedInUser(t, env, "Pat Pinger")
	b.Get("/pings").Expect(t, http.StatusOK).Contains(t, ">"+u.Name+"</a>", `action="/signout"`, `name="note"`)
	b.PostNoCSRF("/pings", url.Values{"note": {"forged"}}).Expect(t, http.StatusForbidden).Contains(t, "<h1>Forbidden</h1>")
	b.Post("/pings", url.Values{"note": {strings.Repeat("n", 101)}}).Expect(t, http.StatusUnprocessableEntity).
		Contains(t, "note must be at most 100 characters")
	if r := b.Post("/pings", url.Values{"note": {"from the page"}}).Expect(t, http.StatusSeeOther); r.Location != "/pings" {
		t.Fatalf("the form went on to %q", r.Location)
	}
	b.Get("/pings").Expect(t, http.StatusOK).Contains(t, "1 pings so far.", "from the page")
	anon.Get("/pings").Expect(t, http.StatusOK).Contains(t, "1 pings so far.")
	if strings.Contains(anon.Get("/pings").Body, "from the page") {
		t.Fatal("a signed-out visitor sees someone's pings")
	}
	// A path that merely starts with the page's is not the page's.
	anon.Get("/pingsxyz").Expect(t, http.StatusNotFound).Contains(t, "There is nothing here.")
}

// onair pings purge, on a database of its own.
func TestPurgeCommand(t *testing.T) {
	dir := t.TempDir()
	settings := map[string]string{"ONAIR_DATA_DIR": dir}
	run := func(args ...string) string {
		var out, errb bytes.Buffer
		if code := app.Run(context.Background(), args, &out, &errb, func(k string) string { return settings[k] }); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errb.String())
		}
		return out.String()
	}
	if got := run("pings", "purge"); got != "0 pings purged\n" {
		t.Fatalf("empty: %q", got)
	}
	db, err := app.OpenDB(context.Background(), "sqlite://"+filepath.Join(dir, "onair.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, age := range []time.Duration{3 * time.Hour, time.Minute} {
		if _, err := db.NewInsert().Model(&ping.Ping{UserID: 1, Note: "x", CreatedAt: app.Now().Add(-age)}).Exec(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if got := run("pings", "purge", "--older-than", "1h"); got != "1 pings purged\n" {
		t.Fatalf("with one old ping: %q", got)
	}
}

// docs/modules.md quotes this package's files whole, so the example there
// is the code compiled and tested here.
func TestDocsQuoteTheExample(t *testing.T) {
	doc, err := os.ReadFile("../../modules.md")
	if err != nil {
		t.Fatal(err)
	}
	for file, lang := range map[string]string{"module.go": "go", "admin.go": "go", "admin.templ": "templ", "page.go": "go", "page.templ": "templ"} {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(doc, []byte("```"+lang+"\n"+string(src)+"```\n")) {
			t.Errorf("docs/modules.md does not quote docs/example/ping/%s as it is", file)
		}
	}
	// And this file's TestPing.
	src, err := os.ReadFile("ping_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fn := src[bytes.Index(src, []byte("func TestPing(")):]
	fn = fn[:bytes.Index(fn, []byte("\n}\n"))+3]
	if !bytes.Contains(doc, fn) {
		t.Error("docs/modules.md does not quote TestPing as it is")
	}
}
