package pages_test

import (
	"bytes"
	"image"
	"image/png"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/users"
)

// postMultipart posts fields and files as multipart/form-data.
func (b *browserless) postMultipart(path string, fields map[string]string, files map[string][]byte) page {
	b.t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for k, v := range fields {
		w.WriteField(k, v)
	}
	for k, data := range files {
		part, _ := w.CreateFormFile(k, k+".png")
		part.Write(data)
	}
	w.Close()
	req, err := http.NewRequest("POST", b.env.URL+path, &buf)
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Content-Type", w.FormDataContentType())
	resp, err := b.http.Do(req)
	if err != nil {
		b.t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return page{status: resp.StatusCode, header: resp.Header, body: string(data)}
}

func testPNG(t *testing.T, w, h int) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestProfilePage: /account/profile saves the profile and its images
// through users.Service (the API's rules), shows each problem beside its
// field, and the user's page shows the result; the password change asks
// for the current one and signs every other browser out; the radio
// request is a button.
func TestProfilePage(t *testing.T) {
	t.Parallel()
	env := onairtest.New(t, onairtest.Options{})
	dj := newPerson(t, env, "Pro Filer")
	fan := newPerson(t, env, "Fan Atic")
	me, elsewhere, anon := dj.signedIn(t, env), dj.signedIn(t, env), newVisitor(t, env)
	fan.signedIn(t, env).post(path("/follow/%d", dj.user.ID), url.Values{"csrf": {""}}) // refused: no token
	fb := fan.signedIn(t, env)
	fb.post(path("/follow/%d", dj.user.ID), url.Values{"csrf": {fb.csrf}, "follow": {"1"}})

	if p := anon.get("/account/profile"); p.status != 303 {
		t.Errorf("signed out /account/profile: %d", p.status)
	}
	if p := me.get("/account/profile"); p.status != 200 || !strings.Contains(p.body, `enctype="multipart/form-data"`) {
		t.Fatalf("/account/profile: %d", p.status)
	}
	good := map[string]string{"csrf": me.csrf, "name": "Pro Filer", "description": "Records since 1999.", "location": "Porto", "website": "https://pro.example/", "tags": "disco, funk"}
	with := func(kv ...string) map[string]string {
		f := map[string]string{}
		for k, v := range good {
			f[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			f[kv[i]] = kv[i+1]
		}
		return f
	}
	for _, tc := range []struct {
		name   string
		fields map[string]string
		files  map[string][]byte
		status int
		id     string
		want   string
	}{
		{"no form token", with("csrf", ""), nil, 403, "", ""},
		{"a website that is not http", with("website", "javascript:alert(1)"), nil, 422, "err-website", "must be an http or https address"},
		{"an empty name", with("name", ""), nil, 422, "err-name", "is required"},
		{"not an image", good, map[string][]byte{"avatar": []byte("hello, this is not an image")}, 422, "err-avatar", "must be a JPEG, PNG, GIF or WebP image"},
		{"an image over the limit", good, map[string][]byte{"cover": make([]byte, users.DefaultImageMaxBytes+1)}, 413, "err-cover", "must be at most 2048 KB"},
	} {
		p := me.postMultipart("/account/profile", tc.fields, tc.files)
		if p.status != tc.status {
			t.Errorf("%s: %d, want %d", tc.name, p.status, tc.status)
			continue
		}
		if tc.id != "" {
			m := regexp.MustCompile(`id="` + tc.id + `"[^>]*>([^<]*)<`).FindStringSubmatch(p.body)
			if m == nil || !strings.Contains(m[1], tc.want) {
				t.Errorf("%s: no %q beside the field: %v", tc.name, tc.want, m)
			}
		}
	}
	if p := anon.get("/" + dj.user.Slug); strings.Contains(p.body, "Records since") {
		t.Fatal("a refused form saved the profile")
	}

	p := me.postMultipart("/account/profile", good, map[string][]byte{"avatar": testPNG(t, 300, 300), "cover": testPNG(t, 800, 200)})
	if p.status != 303 || p.header.Get("Location") != "/account/profile?saved=1" {
		t.Fatalf("save: %d %q\n%s", p.status, p.header.Get("Location"), p.body)
	}
	page := anon.get("/" + dj.user.Slug)
	for _, want := range []string{"Records since 1999.", "Porto", `href="https://pro.example/" rel="nofollow ugc noopener"`, `/avatar-`, `class="cover-image"`} {
		if !strings.Contains(page.body, want) {
			t.Errorf("the user page lacks %q", want)
		}
	}

	if !regexp.MustCompile(`<span id="followers">1</span> follower\b[^s]`).MatchString(page.body) {
		t.Error(`the user page does not say "1 follower"`)
	}

	// Password: the current one is required; other browsers are signed out.
	for _, tc := range []struct {
		name, current, next, confirm, id string
	}{
		{"wrong current password", "not it", "a new long secret", "a new long secret", "err-current_password"},
		{"confirmation differs", dj.password, "a new long secret", "another secret", "err-password_confirm"},
		{"too short", dj.password, "short", "short", "err-password"},
	} {
		p := me.post("/account/password", url.Values{"csrf": {me.csrf}, "current_password": {tc.current}, "password": {tc.next}, "password_confirm": {tc.confirm}})
		if p.status != 422 || !strings.Contains(p.body, `id="`+tc.id+`"`) {
			t.Errorf("%s: %d, error beside the field: %v", tc.name, p.status, strings.Contains(p.body, `id="`+tc.id+`"`))
		}
	}
	if p := me.post("/account/password", url.Values{"current_password": {dj.password}, "password": {"x-new-secret"}, "password_confirm": {"x-new-secret"}}); p.status != 403 {
		t.Errorf("password change without the form token: %d", p.status)
	}
	p = me.post("/account/password", url.Values{"csrf": {me.csrf}, "current_password": {dj.password}, "password": {"a new long secret"}, "password_confirm": {"a new long secret"}})
	if p.status != 303 {
		t.Fatalf("change password: %d\n%s", p.status, p.body)
	}
	if p := me.get("/account"); p.status != 200 {
		t.Errorf("the browser that changed the password was signed out: %d", p.status)
	}
	if p := elsewhere.get("/account"); p.status != 303 {
		t.Errorf("another browser of the user is still signed in: %d", p.status)
	}
	again := newVisitor(t, env)
	again.signIn(dj.user.Email, "a new long secret")

	// Radio access, asked for from the account page.
	if p := me.post("/account/radio", url.Values{"csrf": {me.csrf}}); p.status != 303 {
		t.Errorf("radio request: %d", p.status)
	}
	if p := me.get("/account"); !strings.Contains(p.body, "You asked for radio access") || strings.Contains(p.body, `id="request-radio"`) {
		t.Error("the account page does not show the radio request as sent")
	}
}
