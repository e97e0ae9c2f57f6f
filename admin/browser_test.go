package admin_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/onair/onair/admin"
	"github.com/onair/onair/admin/admintest"
	"github.com/onair/onair/internal/browsertest"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
)

// The browser test drives the console in real headless Chromium, as a
// moderator would, and checks the outcome through /v1. It is skipped only
// when Chromium is not on the PATH.

func TestBrowserModeration(t *testing.T) {
	browsertest.Path(t) // skips without a browser
	dir := browsertest.ArtifactDir(t, "admin")
	env := admintest.NewEnv(t, "sqlite")
	// Started after the server, so it is stopped first (cleanups run in
	// reverse): its open connections would hold the server's shutdown.
	ctx := browsertest.Start(t)

	mod, _ := env.CreateUser("Mona Moderator", onairtest.Role("moderator"), onairtest.Password(admintest.Password))
	_, ownerTok := env.CreateUser("Olga Owner")
	_, viewerTok := env.CreateUser("Vic Viewer")
	requester, requesterTok := env.CreateUser("Rudi Radio")
	env.Do("POST", "/v1/users/me/radio_request", requesterTok, nil).Expect(t, http.StatusOK)
	create := func(name string) int64 {
		body := env.Do("POST", "/v1/shows", ownerTok, map[string]any{"name": name, "description": "A show."}).Expect(t, http.StatusCreated).JSON(t)
		return onairtest.ID(body["show"].(map[string]any))
	}
	older := create("Old Favourite")
	featureAsStaff(t, env, older)
	time.Sleep(1100 * time.Millisecond) // start has whole seconds: keep the order plain
	feature := create("Sunday Session")
	takeOff := create("Dubious Broadcast")
	env.Do("POST", fmt.Sprintf("/v1/shows/%d/chats", feature), viewerTok, map[string]any{"message": "great set!"}).Expect(t, http.StatusCreated)

	run := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		c, cancel := context.WithTimeout(ctx, testload.Patience)
		defer cancel()
		if err := chromedp.Do(c, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	// submit clicks a form's button and waits for the page it leads to.
	submit := func(what, selector string, wantStatus int64) {
		t.Helper()
		c, cancel := context.WithTimeout(ctx, testload.Patience)
		defer cancel()
		resp, err := chromedp.RunResponse(c, chromedp.Click(chromedp.CSS(selector)))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if resp.Status != wantStatus {
			t.Fatalf("%s: status %d, want %d", what, resp.Status, wantStatus)
		}
	}
	text := func(selector string) string {
		t.Helper()
		c, cancel := context.WithTimeout(ctx, testload.Patience)
		defer cancel()
		s, err := chromedp.Run(c, chromedp.Text(chromedp.CSS(selector)))
		if err != nil {
			t.Fatalf("text of %s: %v", selector, err)
		}
		return s
	}
	shoot := func(name string) {
		t.Helper()
		for _, size := range []struct {
			suffix string
			w, h   int64
			mobile bool
		}{{"desktop", 1280, 800, false}, {"phone", 390, 844, true}} {
			opts := []chromedp.EmulateViewportOption{}
			if size.mobile {
				opts = append(opts, chromedp.EmulateMobile, chromedp.EmulatePortrait)
			}
			c, cancel := context.WithTimeout(ctx, testload.Patience)
			err := chromedp.Do(c, chromedp.EmulateViewport(size.w, size.h, opts...))
			var png []byte
			if err == nil {
				png, err = chromedp.Run(c, chromedp.FullScreenshot(100))
			}
			cancel()
			if err != nil {
				t.Fatalf("screenshot %s: %v", name, err)
			}
			if err := os.WriteFile(filepath.Join(dir, name+"-"+size.suffix+".png"), png, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		run("back to desktop", chromedp.EmulateViewport(1280, 800))
	}
	visit := func(path, heading, name string) {
		t.Helper()
		run("open "+path, chromedp.Navigate(env.URL+path), chromedp.WaitVisible(chromedp.CSS("h1")))
		if h := text("h1"); !strings.Contains(h, heading) {
			t.Fatalf("%s: heading %q, want %q", path, h, heading)
		}
		shoot(name)
	}

	// Signed out, the console sends the browser to the sign-in form.
	run("open the console", chromedp.Navigate(env.URL+"/admin/radio"), chromedp.WaitVisible(chromedp.ID("email")))
	shoot("01-login")
	run("fill in the form",
		chromedp.SendKeys(chromedp.ID("email"), mod.Email),
		chromedp.SendKeys(chromedp.ID("password"), admintest.Password))
	submit("sign in", "form.panel button[type=submit]", 200)
	if h := text("h1"); h != "Radio approvals" {
		t.Fatalf("after sign-in the page is %q, want the page asked for", h)
	}

	// Approve the radio request.
	shoot("02-radio")
	submit("approve", fmt.Sprintf(`form[action="/admin/radio/%d/approve"] button`, requester.ID), 200)
	if f := text(".flash"); !strings.Contains(f, "may now run radio shows") {
		t.Fatalf("flash %q", f)
	}

	visit("/admin", "Dashboard", "03-dashboard")
	visit("/admin/shows", "Shows", "04-shows")

	// Feature one show.
	visit(fmt.Sprintf("/admin/shows/%d", feature), "Sunday Session", "05-show")
	submit("feature", fmt.Sprintf(`form[action="/admin/shows/%d/feature"] button`, feature), 200)
	if f := text(".flash"); !strings.Contains(f, "Featured") {
		t.Fatalf("flash %q", f)
	}

	// A form whose CSRF field is gone is refused (a forged request).
	run("open the show", chromedp.Navigate(fmt.Sprintf("%s/admin/shows/%d", env.URL, takeOff)), chromedp.WaitVisible(chromedp.CSS("h1")))
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(
		`(document.querySelector('form[action="/admin/shows/%d/feature"] input[name=csrf]').remove(), true)`, takeOff))); err != nil {
		t.Fatalf("drop the token: %v", err)
	}
	submit("feature without a token", fmt.Sprintf(`form[action="/admin/shows/%d/feature"] button`, takeOff), 403)
	shoot("06-csrf-refused")

	// Take another show off.
	run("open the show", chromedp.Navigate(fmt.Sprintf("%s/admin/shows/%d", env.URL, takeOff)), chromedp.WaitVisible(chromedp.CSS("h1")))
	submit("take off", fmt.Sprintf(`form[action="/admin/shows/%d/off"] button`, takeOff), 200)
	if f := text(".flash"); !strings.Contains(f, "Took off") {
		t.Fatalf("flash %q", f)
	}

	visit("/admin/users", "Users", "07-users")
	visit(fmt.Sprintf("/admin/users/%d", requester.ID), "Rudi Radio", "08-user")
	visit("/admin/chat", "Chat", "09-chat")
	visit("/admin/audit", "Audit log", "10-audit")
	for _, want := range []string{"users.radio_approve", "shows.feature", "shows.off", "Mona Moderator"} {
		if !strings.Contains(text("table"), want) {
			t.Errorf("the audit page lacks %q", want)
		}
	}

	// Sign out.
	submit("sign out", `form[action="/admin/logout"] button`, 200)
	if h := text("h1"); !strings.Contains(h, "console") {
		t.Fatalf("after sign-out: %q", h)
	}

	// What /v1 says, at once, to other users.
	var featured struct {
		Shows []struct {
			ID int64 `json:"id"`
		} `json:"shows"`
	}
	env.Do("GET", "/v1/shows?featured=true", viewerTok, nil).Expect(t, http.StatusOK).Decode(t, &featured)
	if len(featured.Shows) != 2 || featured.Shows[0].ID != feature || featured.Shows[1].ID != older {
		t.Errorf("featured shows %+v, want %d first, then %d", featured.Shows, feature, older)
	}
	var all struct {
		Shows []struct {
			ID int64 `json:"id"`
		} `json:"shows"`
	}
	env.Do("GET", "/v1/shows", viewerTok, nil).Expect(t, http.StatusOK).Decode(t, &all)
	for _, s := range all.Shows {
		if s.ID == takeOff {
			t.Error("the off show is still listed for other users")
		}
	}
	env.Do("GET", fmt.Sprintf("/v1/shows/%d", takeOff), viewerTok, nil).Expect(t, http.StatusNotFound)
	if sh := env.Do("GET", fmt.Sprintf("/v1/shows/%d", takeOff), ownerTok, nil).Expect(t, http.StatusOK).JSON(t)["show"].(map[string]any); sh["off"] != true {
		t.Errorf("owner sees off=%v", sh["off"])
	}
	if me := env.Do("GET", "/v1/users/me", requesterTok, nil).Expect(t, http.StatusOK).JSON(t)["user"].(map[string]any); me["radio"] != true {
		t.Errorf("the approved user has radio=%v", me["radio"])
	}
	env.Do("POST", "/v1/shows", requesterTok, map[string]any{"name": "24h", "description": "radio", "radio": true}).Expect(t, http.StatusCreated)
	for _, action := range []string{"users.radio_approve", "shows.feature", "shows.off"} {
		list := admintest.Audit(t, env, admin.AuditQuery{Action: action, ActorID: mod.ID})
		if len(list) != 1 {
			t.Errorf("%d %s entries by the moderator, want 1", len(list), action)
		}
	}
	if n := len(admintest.Audit(t, env, admin.AuditQuery{Target: admin.Target("show", takeOff), Action: "shows.feature"})); n != 0 {
		t.Errorf("the refused feature was recorded (%d entries)", n)
	}
	t.Logf("screenshots in %s", dir)
}

// featureAsStaff features a show through the console (test setup).
func featureAsStaff(t *testing.T, env *onairtest.Env, id int64) {
	t.Helper()
	_, c := admintest.Staff(t, env, "Setup Admin", "admin")
	c.Post(fmt.Sprintf("/admin/shows/%d/feature", id), map[string][]string{"featured": {"true"}}).Expect(t, http.StatusSeeOther)
}
