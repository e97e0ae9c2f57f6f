package pages_test

import (
	"bytes"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"regexp"
	"strings"
	"testing"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/users"
)

// postEmptyFile posts fields with the file input image left empty, as a
// browser sends it (filename="", no bytes).
func (b *browserless) postEmptyFile(path string, fields map[string]string) page {
	b.t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for k, v := range fields {
		w.WriteField(k, v)
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="image"; filename=""`)
	h.Set("Content-Type", "application/octet-stream")
	if _, err := w.CreatePart(h); err != nil {
		b.t.Fatal(err)
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

// TestStudioImage: the studio's form uploads the show's image (multipart,
// no script needed); a refused image is a problem beside the field, with
// the other fields' problems, and saves nothing; a new image replaces
// the old; an empty file input keeps it.
func TestStudioImage(t *testing.T) {
	t.Parallel()
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env := onairtest.New(t, onairtest.Options{Backend: backend, Configure: func(c *app.Config) {
			c.Set(users.SettingImageMaxBytes, 300<<10)
		}})
		dj := newPerson(t, env, "Pic Ture")
		me := dj.signedIn(t, env)
		fields := func(kv ...string) map[string]string {
			f := map[string]string{}
			for k, v := range studioForm(me.csrf, kv...) {
				f[k] = v[0]
			}
			return f
		}
		if p := me.get("/studio/shows/new"); !strings.Contains(p.body, `enctype="multipart/form-data"`) || !strings.Contains(p.body, `name="image" type="file"`) {
			t.Fatal("the new show form has no image file input in a multipart form")
		}
		beside := func(p page, want string) {
			t.Helper()
			m := regexp.MustCompile(`id="err-image"[^>]*>([^<]*)<`).FindStringSubmatch(p.body)
			if p.status != http.StatusUnprocessableEntity || m == nil || !strings.Contains(m[1], want) {
				t.Errorf("%d, beside the image %v, want 422 and %q", p.status, m, want)
			}
		}
		big := make([]byte, 301<<10)
		copy(big, testPNG(t, 10, 10))
		beside(me.postMultipart("/studio/shows", fields(), map[string][]byte{"image": []byte("not a picture")}), "Image must be a JPEG, PNG, GIF or WebP image")
		beside(me.postMultipart("/studio/shows", fields(), map[string][]byte{"image": big}), "Image must be at most 300 KB")
		p := me.postMultipart("/studio/shows", fields("name", " "), map[string][]byte{"image": []byte("GIF89a...")})
		beside(p, "Image must be")
		if !strings.Contains(p.body, "Name is required") {
			t.Error("a bad image hides the other fields' problems")
		}
		if n := len(env.Do("GET", "/v1/users/me/shows?scheduled=true", dj.token, nil).Expect(t, 200).JSON(t)["shows"].([]any)); n != 0 {
			t.Fatalf("refused forms created %d shows", n)
		}

		// Created with an image: the studio shows it, the API has it.
		p = me.postMultipart("/studio/shows", fields("starts_at", ""), map[string][]byte{"image": testPNG(t, 1600, 900)})
		m := studioRedirect.FindStringSubmatch(p.header.Get("Location"))
		if p.status != http.StatusSeeOther || m == nil {
			t.Fatalf("create with an image: %d to %q\n%s", p.status, p.header.Get("Location"), p.body)
		}
		var id int64
		fmt.Sscan(m[1], &id)
		image := onairtest.GetShow(t, env, dj.token, id)["image_url"].(string)
		if !regexp.MustCompile(`/media/shows/\d+/image-[0-9a-f]{16}\.jpg$`).MatchString(image) {
			t.Fatalf("image_url after the form: %q", image)
		}
		show := path("/studio/shows/%d", id)
		if p := me.get(show); !strings.Contains(p.body, `id="show-image-preview"`) || !strings.Contains(p.body, `src="`+image+`"`) {
			t.Error("the studio page does not show the show's image")
		}
		env.Do("GET", image, "", nil).Expect(t, http.StatusOK)

		// An empty file input keeps it; a new one replaces it.
		if p := me.postEmptyFile(show, fields("name", "Kept Picture", "starts_at", "")); p.status != http.StatusSeeOther {
			t.Fatalf("edit with an empty file input: %d\n%s", p.status, p.body)
		}
		if sh := onairtest.GetShow(t, env, dj.token, id); sh["image_url"] != image || sh["name"] != "Kept Picture" {
			t.Errorf("after an edit without a file: %v, %v", sh["name"], sh["image_url"])
		}
		beside(me.postMultipart(show, fields("starts_at", ""), map[string][]byte{"image": []byte("nope")}), "Image must be")
		if p := me.postMultipart(show, fields("starts_at", ""), map[string][]byte{"image": testPNG(t, 320, 180)}); p.status != http.StatusSeeOther {
			t.Fatalf("edit with a new image: %d\n%s", p.status, p.body)
		}
		if now := onairtest.GetShow(t, env, dj.token, id)["image_url"]; now == image {
			t.Error("a new image kept the old URL")
		}
		env.Do("GET", image, "", nil).Expect(t, http.StatusNotFound)
	})
}
