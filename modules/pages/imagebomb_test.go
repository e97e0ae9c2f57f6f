package pages_test

import (
	"bytes"
	"image"
	"image/png"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/users"
)

// TestImageDecodeBudgetEveryRoute: every route that takes an image (the
// API's profile and show, the account's profile form, the studio's show
// form) measures it before decoding: a small PNG whose pixels would not
// fit ONAIR_IMAGE_DECODE_MB is 422 on its field, and nothing is saved,
// while an image that fits is taken as before.
func TestImageDecodeBudgetEveryRoute(t *testing.T) {
	t.Parallel()
	env := onairtest.New(t, onairtest.Options{Configure: func(c *app.Config) {
		c.Set(users.SettingImageDecodeMB, 96) // a show image's scaling alone holds 77 MB
	}})
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewNRGBA64(image.Rect(0, 0, 3500, 3500))); err != nil { // 98 MB decoded
		t.Fatal(err)
	}
	bomb := buf.Bytes()
	dj := newPerson(t, env, "Budget Keeper")
	me := dj.signedIn(t, env)
	const refusal = "more than the 96 MB this server decodes at once"

	api := func(method, path string, fields map[string]string, field string, data []byte) *onairtest.Response {
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		for k, v := range fields {
			mw.WriteField(k, v)
		}
		fw, _ := mw.CreateFormFile(field, field+".png")
		fw.Write(data)
		mw.Close()
		return env.DoWith(method, path, dj.token, body.Bytes(), http.Header{"Content-Type": {mw.FormDataContentType()}})
	}
	show := map[string]string{"name": "Budget Set", "description": "measured first"}
	for _, tc := range []struct{ name, method, path, field string }{
		{"API profile avatar", "PUT", "/v1/users/me", "avatar"},
		{"API profile cover", "PUT", "/v1/users/me", "cover"},
		{"API new show", "POST", "/v1/shows", "image"},
	} {
		r := api(tc.method, tc.path, show, tc.field, bomb).Expect(t, http.StatusUnprocessableEntity)
		if !strings.Contains(string(r.Body), refusal) || !strings.Contains(string(r.Body), `"`+tc.field+`"`) {
			t.Errorf("%s: %s, want the refusal on %s", tc.name, r.Body, tc.field)
		}
	}
	id := onairtest.CreateShow(t, env, dj.token, map[string]any{"name": "Budget Edit", "description": "kept"}).ID
	showPath := path("/v1/shows/%d", id)
	if r := api("PUT", showPath, map[string]string{"name": "Renamed"}, "image", bomb).Expect(t, http.StatusUnprocessableEntity); !strings.Contains(string(r.Body), refusal) {
		t.Errorf("API show edit: %s", r.Body)
	}
	if sh := onairtest.GetShow(t, env, dj.token, id); sh["name"] != "Budget Edit" {
		t.Errorf("a refused image saved the show's other fields: %v", sh["name"])
	}

	profile := map[string]string{"csrf": me.csrf, "name": "Budget Keeper", "description": "bio"}
	if p := me.postMultipart("/account/profile", profile, map[string][]byte{"cover": bomb}); p.status != http.StatusUnprocessableEntity || !strings.Contains(p.body, refusal) {
		t.Errorf("profile form: %d, want 422 with %q beside the cover", p.status, refusal)
	}
	studio := map[string]string{}
	for k, v := range studioForm(me.csrf) {
		studio[k] = v[0]
	}
	if p := me.postMultipart("/studio/shows", studio, map[string][]byte{"image": bomb}); p.status != http.StatusUnprocessableEntity || !strings.Contains(p.body, refusal) {
		t.Errorf("studio form: %d, want 422 with %q beside the image", p.status, refusal)
	}

	// An image within the budget still works, on the API and the forms.
	api("PUT", "/v1/users/me", nil, "avatar", testPNG(t, 600, 600)).Expect(t, http.StatusOK)
	api("PUT", showPath, nil, "image", testPNG(t, 1600, 900)).Expect(t, http.StatusOK)
	if p := me.postMultipart("/account/profile", profile, map[string][]byte{"cover": testPNG(t, 1600, 400)}); p.status != http.StatusSeeOther {
		t.Errorf("profile form with a small cover: %d", p.status)
	}
}
