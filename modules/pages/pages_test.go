package pages_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/shows"
	"github.com/onair/onair/modules/users"
)

// TestPageStatus: who gets which page. A private or off show is a 404 for
// everyone but its owner, exactly like a show that does not exist.
func TestPageStatus(t *testing.T) {
	t.Parallel()
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env := onairtest.New(t, onairtest.Options{Backend: backend})
		owner := newPerson(t, env, "Olive Owner")
		other := newPerson(t, env, "Otto Other")
		pubIDShow := onairtest.CreateShow(t, env, owner.token, map[string]any{"name": "Open Air", "start": time.Now().UTC().Add(time.Hour).Format("2006-01-02 15:04:05")})
		pubID, pub := pubIDShow.ID, pubIDShow.Path
		privIDShow := onairtest.CreateShow(t, env, owner.token, map[string]any{"name": "Secret Set", "private": true})
		privID, priv := privIDShow.ID, privIDShow.Path
		offIDShow := onairtest.CreateShow(t, env, owner.token, map[string]any{"name": "Gone Set"})
		offID, off := offIDShow.ID, offIDShow.Path
		takeOff(t, env, offID)

		visitors := map[string]*browserless{
			"anonymous": newVisitor(t, env),
			"owner":     owner.signedIn(t, env),
			"other":     other.signedIn(t, env),
		}
		ownerPage := "/" + owner.user.Slug
		for _, tc := range []struct {
			who, path string
			status    int
			contains  string
		}{
			{"anonymous", "/", 200, "Open Air"},
			{"anonymous", ownerPage, 200, "Olive Owner"},
			{"anonymous", pub, 200, "Open Air"},
			{"anonymous", pub + "?listen=1", 200, "<audio"},
			{"anonymous", path("/embed/%d", pubID), 200, "<video"},
			{"anonymous", path("/embed/%d?chat=1", pubID), 200, `id="chat"`},
			{"anonymous", priv, 404, "nothing here"},
			{"other", priv, 404, "nothing here"},
			{"owner", priv, 200, "Secret Set"},
			{"anonymous", off, 404, ""},
			{"other", off, 404, ""},
			{"owner", off, 200, "Gone Set"},
			{"anonymous", path("/embed/%d", privID), 404, ""},
			{"other", path("/embed/%d", offID), 404, ""},
			{"anonymous", path("/chat/%d/replay", privID), 404, ""},
			{"anonymous", ownerPage + "/no-such-show", 404, ""},
			{"anonymous", "/no-such-user", 404, "nothing here"},
			{"anonymous", "/no-such-user/no-such-show", 404, ""},
			{"anonymous", "/embed/abc", 404, ""},
			{"anonymous", "/account", 303, ""},
			{"owner", "/account", 200, "Open Air"},
			{"anonymous", "/signin", 200, "Sign in"},
			{"anonymous", "/signup", 200, "Create account"},
			{"owner", "/signup", 303, ""},
		} {
			p := visitors[tc.who].get(tc.path)
			if p.status != tc.status {
				t.Errorf("%s GET %s: %d, want %d", tc.who, tc.path, p.status, tc.status)
				continue
			}
			if tc.status != 303 && !strings.Contains(p.header.Get("Content-Type"), "text/html") && !strings.HasPrefix(tc.path, "/chat/") {
				t.Errorf("%s GET %s: Content-Type %q, want HTML", tc.who, tc.path, p.header.Get("Content-Type"))
			}
			if tc.contains != "" && !strings.Contains(p.body, tc.contains) {
				t.Errorf("%s GET %s: the page lacks %q", tc.who, tc.path, tc.contains)
			}
		}
		// Lists never show others' private or off shows.
		for _, path := range []string{"/", ownerPage} {
			p := visitors["other"].get(path)
			if strings.Contains(p.body, "Secret Set") || strings.Contains(p.body, "Gone Set") {
				t.Errorf("%s shows a hidden show to another user", path)
			}
		}
		if a := visitors["owner"].get("/account"); !strings.Contains(a.body, "Secret Set") || !strings.Contains(a.body, "Gone Set") {
			t.Errorf("the owner's account page does not list their private and off shows")
		}
	})
}

// TestEmbedHeaders: the embed page may be framed by any site; every other
// page only by ours.
func TestEmbedHeaders(t *testing.T) {
	t.Parallel()
	env := onairtest.New(t, onairtest.Options{})
	owner := newPerson(t, env, "Frame Maker")
	created := onairtest.CreateShow(t, env, owner.token, map[string]any{"name": "Framed"})
	id, showPath := created.ID, created.Path
	anon := newVisitor(t, env)
	embed := anon.get(path("/embed/%d", id))
	if embed.header.Get("X-Frame-Options") != "" {
		t.Errorf("embed sends X-Frame-Options %q", embed.header.Get("X-Frame-Options"))
	}
	if csp := embed.header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors *") {
		t.Errorf("embed CSP %q lacks frame-ancestors *", csp)
	}
	for _, p := range []string{"/", showPath, "/signin"} {
		h := anon.get(p).header
		if h.Get("X-Frame-Options") != "SAMEORIGIN" || !strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'self'") {
			t.Errorf("%s may be framed by others: XFO %q CSP %q", p, h.Get("X-Frame-Options"), h.Get("Content-Security-Policy"))
		}
	}
	// A page with a chat gives the anonymous viewer an identity: a UUID
	// and the server's signature of it.
	show := newVisitor(t, env).get(showPath)
	if !regexp.MustCompile(`onair_viewer=[0-9a-f-]{36}\.[A-Za-z0-9_-]{22};`).MatchString(strings.Join(show.header.Values("Set-Cookie"), "\n")) {
		t.Errorf("the show page does not set onair_viewer: %v", show.header.Values("Set-Cookie"))
	}
}

// TestStreamKeys: a key appears only on the owner's account page, only when
// asked for; regenerating it makes the old one useless.
func TestStreamKeys(t *testing.T) {
	t.Parallel()
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env := onairtest.New(t, onairtest.Options{Backend: backend})
		owner := newPerson(t, env, "Kee Holder")
		other := newPerson(t, env, "Nosy Parker")
		created := onairtest.CreateShow(t, env, owner.token, map[string]any{"name": "Keyed"})
		id, showPath, key := created.ID, created.Path, created.Key
		anon, me, them := newVisitor(t, env), owner.signedIn(t, env), other.signedIn(t, env)

		for _, v := range []*browserless{anon, me, them} {
			for _, p := range []string{"/", "/" + owner.user.Slug, showPath, path("/embed/%d?chat=1", id), "/account"} {
				if page := v.get(p); strings.Contains(page.body, key) {
					t.Errorf("GET %s shows the stream key (status %d)", p, page.status)
				}
			}
		}
		reveal := path("/account/shows/%d/key", id)
		if p := them.post(reveal, url.Values{"csrf": {them.csrf}}); p.status != 404 || strings.Contains(p.body, key) {
			t.Errorf("another user revealing the key: %d", p.status)
		}
		p := me.post(reveal, url.Values{"csrf": {me.csrf}})
		if p.status != 200 || !strings.Contains(p.body, key) {
			t.Fatalf("the owner revealing the key: %d, key shown %v", p.status, strings.Contains(p.body, key))
		}
		if p.header.Get("Cache-Control") != "no-store" {
			t.Errorf("a page with a key is cacheable: %q", p.header.Get("Cache-Control"))
		}

		regen := reveal + "/regenerate"
		if p := them.post(regen, url.Values{"csrf": {them.csrf}}); p.status != 404 {
			t.Errorf("another user regenerating the key: %d", p.status)
		}
		p = me.post(regen, url.Values{"csrf": {me.csrf}})
		fresh := regexp.MustCompile(`sk_\d+_[0-9A-Za-z]{22}`).FindString(p.body)
		if p.status != 200 || fresh == "" || fresh == key {
			t.Fatalf("regenerate: %d, new key %q (old %q)", p.status, fresh, key)
		}
		svc := showService(env)
		if _, err := svc.Keys.Authorize(context.Background(), key); !errors.Is(err, shows.ErrRefused) {
			t.Errorf("the old key still authorizes: %v", err)
		}
		if sh, err := svc.Keys.Authorize(context.Background(), fresh); err != nil || sh.ID != id {
			t.Errorf("the new key does not authorize: %v", err)
		}
	})
}

// TestReservedRoutesNotShadowed: the catch-all user and show pages never
// answer the server's own paths, and no user can take one as a slug.
func TestReservedRoutesNotShadowed(t *testing.T) {
	t.Parallel()
	env := onairtest.New(t, onairtest.Options{})
	for _, name := range []string{"Admin", "Healthz", "V1", "Static", "Embed", "Media", "Metrics", "Ws"} {
		p := newPerson(t, env, name)
		if want := strings.ToLower(name) + "-2"; p.user.Slug != want {
			t.Errorf("user %q got slug %q, want %q", name, p.user.Slug, want)
		}
	}
	anon := newVisitor(t, env)
	for _, tc := range []struct {
		path        string
		status      int
		contentType string
	}{
		{"/healthz", 200, "application/json"},
		{"/readyz", 200, "application/json"},
		{"/metrics", 200, "text/plain"},
		{"/v1", 401, "application/json"},
		{"/v1/shows", 401, "application/json"},
		{"/v1/openapi.json", 200, "application/json"},
		{"/media/shows/1/placeholder.svg", 200, "image/svg+xml"},
		{"/ws/shows/1", 426, "application/json"},
		{"/static/onair.css", 200, "text/css"},
		{"/static/hls.light.min.js", 200, "text/javascript"},
		{"/embed/999999", 404, "text/html"},
	} {
		p := anon.get(tc.path)
		if p.status != tc.status || !strings.HasPrefix(p.header.Get("Content-Type"), tc.contentType) {
			t.Errorf("GET %s: %d %q, want %d %s", tc.path, p.status, p.header.Get("Content-Type"), tc.status, tc.contentType)
		}
	}
	for _, path := range []string{"/admin", "/admin/", "/static", "/media/shows", "/ws", "/embed"} {
		if p := anon.get(path); strings.Contains(p.body, `id="profile-name"`) || strings.Contains(p.body, `id="player"`) {
			t.Errorf("GET %s answered as a user or show page", path)
		}
	}
}

// TestCSRF: every form refuses a post without the right token, and a post
// from another origin even with it.
func TestCSRF(t *testing.T) {
	t.Parallel()
	env := onairtest.New(t, onairtest.Options{})
	owner := newPerson(t, env, "Cee Surf")
	id := onairtest.CreateShow(t, env, owner.token, map[string]any{"name": "Forms"}).ID
	me := owner.signedIn(t, env)
	other := newPerson(t, env, "Followed One")

	forms := []struct {
		path string
		form url.Values
	}{
		{"/account/tokens", url.Values{"label": {"x"}}},
		{path("/account/shows/%d/key", id), url.Values{}},
		{path("/account/shows/%d/key/regenerate", id), url.Values{}},
		{path("/follow/%d", other.user.ID), url.Values{"follow": {"1"}}},
		{path("/chat/%d", id), url.Values{"message": {"hi"}}},
		{"/signout", url.Values{}},
	}
	// Another browser's tokens: another user's session, and a signed-out
	// browser's form token.
	otherBrowser := other.signedIn(t, env)
	anonToken := formCSRF(t, newVisitor(t, env).get("/signin"))
	for _, f := range forms {
		for name, csrf := range map[string]string{"missing": "", "wrong": strings.Repeat("0", 64),
			"another session's": otherBrowser.csrf, "a signed-out form's": anonToken} {
			v := url.Values{}
			for k, vs := range f.form {
				v[k] = vs
			}
			if csrf != "" {
				v.Set("csrf", csrf)
			}
			if p := me.post(f.path, v); p.status != http.StatusForbidden {
				t.Errorf("POST %s with a %s token: %d, want 403", f.path, name, p.status)
			}
		}
		v := url.Values{"csrf": {me.csrf}}
		for k, vs := range f.form {
			v[k] = vs
		}
		for _, h := range []map[string]string{{"Origin": "http://evil.example"}, {"Sec-Fetch-Site": "cross-site"}} {
			if p := me.do("POST", f.path, v, h); p.status != http.StatusForbidden {
				t.Errorf("POST %s from another origin (%v): %d, want 403", f.path, h, p.status)
			}
		}
	}
	// A refused form gets the pages' own error page.
	if p := me.post("/account/tokens", url.Values{"csrf": {otherBrowser.csrf}}); p.status != http.StatusForbidden ||
		!strings.HasPrefix(p.header.Get("Content-Type"), "text/html") || !strings.Contains(p.body, "did not come from this site") {
		t.Errorf("refused form: %d %s", p.status, p.header.Get("Content-Type"))
	}
	// With the token they work.
	p := me.post("/account/tokens", url.Values{"csrf": {me.csrf}, "label": {"ok"}})
	if p.status != 200 || !strings.Contains(p.body, `id="new-token"`) {
		t.Errorf("create token with the token: %d", p.status)
	}
	p = me.do("POST", path("/chat/%d", id), url.Values{"message": {"hello"}}, map[string]string{"X-CSRF-Token": me.csrf, "Accept": "application/json"})
	var posted struct {
		Chat struct{ Message string }
	}
	if p.status != 201 || json.Unmarshal([]byte(p.body), &posted) != nil || posted.Chat.Message != "hello" {
		t.Errorf("chat post with the header: %d %s", p.status, p.body)
	}
	if p := me.post(path("/follow/%d", other.user.ID), url.Values{"csrf": {me.csrf}, "follow": {"1"}}); p.status != 303 {
		t.Errorf("follow: %d", p.status)
	}
	if p := me.get("/" + other.user.Slug); !strings.Contains(p.body, `aria-pressed="true"`) || !strings.Contains(p.body, `<span id="followers">1</span>`) {
		t.Errorf("after follow the user page does not say so")
	}

	// Signed-out forms use the double-submit cookie.
	anon := newVisitor(t, env)
	if p := anon.post("/signin", url.Values{"email": {owner.user.Email}, "password": {owner.password}}); p.status != 403 {
		t.Errorf("sign in without the form token: %d", p.status)
	}
	token := formCSRF(t, anon.get("/signup"))
	if p := anon.post("/signup", url.Values{"csrf": {strings.Repeat("1", 64)}, "name": {"X"}, "email": {"x@example.com"}, "password": {"long enough"}}); p.status != 403 {
		t.Errorf("sign up with a wrong form token: %d", p.status)
	}
	p = anon.post("/signup", url.Values{"csrf": {token}, "name": {"New Comer"}, "email": {"not an email"}, "password": {"long enough"}})
	if p.status != 422 || !strings.Contains(p.body, "valid email") {
		t.Errorf("sign up with a bad email: %d", p.status)
	}
	p = anon.post("/signup", url.Values{"csrf": {token}, "name": {"New Comer"}, "email": {"new@example.com"}, "password": {"long enough"}})
	if p.status != 303 || p.header.Get("Location") != "/account" {
		t.Errorf("sign up: %d %s", p.status, p.header.Get("Location"))
	}
	// Signed in now; sign out needs the session's token.
	anon.csrf = formCSRF(t, anon.get("/account"))
	if p := anon.post("/signout", url.Values{"csrf": {anon.csrf}}); p.status != 303 {
		t.Errorf("sign out: %d", p.status)
	}
	if p := anon.get("/account"); p.status != 303 {
		t.Errorf("after sign out /account: %d", p.status)
	}
}

// TestPageWeight: every page's HTML, CSS and JS before the player starts
// stays under 200 KB, and hls.js is never part of it (the script loads it
// after the page, only where HLS is not native).
func TestPageWeight(t *testing.T) {
	t.Parallel()
	env := onairtest.New(t, onairtest.Options{})
	owner := newPerson(t, env, "Light Weight")
	created := onairtest.CreateShow(t, env, owner.token, map[string]any{"name": "Heavy Set", "description": strings.Repeat("A long description. ", 240)})
	id, showPath := created.ID, created.Path
	me := owner.signedIn(t, env)
	// A few long chat messages (the one-per-second rate stops the rest).
	for i := 0; i < 50; i++ {
		p := me.do("POST", path("/chat/%d", id), url.Values{"message": {strings.Repeat("m", 500)}}, map[string]string{"X-CSRF-Token": me.csrf, "Accept": "application/json"})
		if p.status == 429 {
			break
		}
	}
	refs := regexp.MustCompile(`<(?:script[^>]*\ssrc|link[^>]*rel="stylesheet"[^>]*\shref)="([^"]+)"`)
	for _, p := range []string{"/", showPath, showPath + "?listen=1", "/" + owner.user.Slug, path("/embed/%d?chat=1", id), "/account", "/signin", "/signup"} {
		v := me
		if strings.HasPrefix(p, "/sign") {
			v = newVisitor(t, env)
		}
		page := v.get(p)
		if page.status != 200 {
			t.Fatalf("GET %s: %d", p, page.status)
		}
		total := len(page.body)
		for _, m := range refs.FindAllStringSubmatch(page.body, -1) {
			if strings.Contains(m[1], "hls") {
				t.Errorf("%s loads hls.js before the player starts", p)
			}
			total += len(me.get(strings.ReplaceAll(m[1], "&amp;", "&")).body)
		}
		t.Logf("%-40s %6d bytes", p, total)
		if total > 200<<10 {
			t.Errorf("%s weighs %d bytes before the player starts, over 200 KB", p, total)
		}
	}
}

// TestSignInGuards: the public sign-in form shares the console's throttle
// (so it is no way around it), and its redirect never leaves the site.
func TestSignInGuards(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{})
	env.CreateUser("Guarded Person", onairtest.Password("a long secret"))
	var email string
	if err := env.Core.DB.NewSelect().Table("users").Column("email").Where("name = ?", "Guarded Person").Scan(context.Background(), &email); err != nil {
		t.Fatal(err)
	}
	v := newVisitor(t, env)
	for _, next := range []string{"/\t/evil.example", "//evil.example", "/\\evil.example", "https://evil.example/"} {
		form := v.get("/signin?next=" + url.QueryEscape(next))
		r := v.post("/signin", url.Values{"csrf": {formCSRF(t, form)}, "email": {email}, "password": {"a long secret"}, "next": {next}})
		if r.status != http.StatusSeeOther || r.header.Get("Location") != "/" {
			t.Errorf("next %q: %d to %q, want 303 to /", next, r.status, r.header.Get("Location"))
		}
		v.post("/signout", url.Values{"csrf": {formCSRF(t, v.get("/account"))}})
	}

	attacker := newVisitor(t, env)
	statuses := []int{}
	for i := 0; i <= users.LoginAttempts; i++ {
		form := attacker.get("/signin")
		r := attacker.post("/signin", url.Values{"csrf": {formCSRF(t, form)}, "email": {email}, "password": {fmt.Sprint("guess ", i)}})
		statuses = append(statuses, r.status)
	}
	if last := statuses[len(statuses)-1]; last != http.StatusTooManyRequests {
		t.Fatalf("statuses %v: the sign-in form is not throttled", statuses)
	}
}
