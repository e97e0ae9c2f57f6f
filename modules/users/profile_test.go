package users_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"mime/multipart"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/users"
)

// pngOf is a w×h PNG, red on the left half.
func pngOf(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			c := color.RGBA{0, 0, 255, 255}
			if x < w/2 {
				c = color.RGBA{255, 0, 0, 255}
			}
			img.Set(x, y, c)
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// multipartBody builds a multipart body of fields and files.
func multipartBody(t *testing.T, fields map[string]string, files map[string][]byte) ([]byte, http.Header) {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for k, v := range fields {
		w.WriteField(k, v)
	}
	for k, data := range files {
		part, err := w.CreateFormFile(k, k+".png")
		if err != nil {
			t.Fatal(err)
		}
		part.Write(data)
	}
	w.Close()
	return buf.Bytes(), http.Header{"Content-Type": {w.FormDataContentType()}}
}

// TestProfileAPI: PUT /v1/users/me changes the caller's profile; images
// are re-encoded JPEGs of a known size, stored and served; bad input is a
// clear 4xx and changes nothing.
func TestProfileAPI(t *testing.T) {
	t.Parallel()
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env := onairtest.New(t, onairtest.Options{Backend: backend, Configure: func(c *app.Config) {
			c.Set(users.SettingImageMaxBytes, 300<<10)
		}})
		me, token := env.CreateUser("Pro File")
		_, otherToken := env.CreateUser("Some One Else")

		r := env.Do("PUT", "/v1/users/me", token, map[string]any{
			"name": "  Pro File Renamed ", "description": "I play records.", "location": "Lisbon", "website": "https://example.com/me", "tags": []string{"House", "Disco"},
		}).Expect(t, http.StatusOK).JSON(t)["user"].(map[string]any)
		if r["name"] != "Pro File Renamed" || r["description"] != "I play records." || r["location"] != "Lisbon" || len(r["tags"].([]any)) != 2 || r["slug"] != me.Slug {
			t.Errorf("after PUT: %v", r)
		}
		// The tags in the order given, House before Disco, here and on a
		// read.
		for name, user := range map[string]map[string]any{
			"PUT": r, "GET": env.Do("GET", fmt.Sprintf("/v1/users/%d", me.ID), token, nil).Expect(t, http.StatusOK).JSON(t)["user"].(map[string]any),
		} {
			var names []string
			for _, tg := range user["tags"].([]any) {
				names = append(names, tg.(map[string]any)["name"].(string))
			}
			if !slices.Equal(names, []string{"House", "Disco"}) {
				t.Errorf("%s: tags %v, want [House Disco] as given", name, names)
			}
		}
		um, _ := onairtest.Module[*users.Module](env)
		u, _ := um.Service.Get(context.Background(), me.ID)
		if u.Website == nil || *u.Website != "https://example.com/me" {
			t.Errorf("website not stored: %v", u.Website)
		}
		// Only the fields sent change; empty clears.
		r = env.Do("PUT", "/v1/users/me", token, url.Values{"location": {""}}).Expect(t, http.StatusOK).JSON(t)["user"].(map[string]any)
		if r["location"] != nil || r["description"] != "I play records." || r["name"] != "Pro File Renamed" {
			t.Errorf("after clearing location: %v", r)
		}

		// Images: a 800×600 avatar becomes a 512×512 JPEG, a 300×100 cover
		// a 300×75 one (cropped to 4:1, never scaled up).
		body, h := multipartBody(t, map[string]string{"name": "With Pictures"}, map[string][]byte{"avatar": pngOf(t, 800, 600), "cover": pngOf(t, 300, 100)})
		r = env.DoWith("PUT", "/v1/users/me", token, body, h).Expect(t, http.StatusOK).JSON(t)["user"].(map[string]any)
		if r["name"] != "With Pictures" {
			t.Errorf("multipart name: %v", r["name"])
		}
		imageURL := regexp.MustCompile(`^` + env.URL + `/media/users/\d+/avatar-[0-9a-f]{16}\.jpg$`)
		for _, tc := range []struct {
			field, kind string
			w, h        int
		}{{"image_url", "avatar", 512, 512}, {"cover_url", "cover", 300, 75}} {
			link, _ := r[tc.field].(string)
			if !strings.Contains(link, "/"+tc.kind+"-") || (tc.kind == "avatar" && !imageURL.MatchString(link)) {
				t.Errorf("%s = %q", tc.field, link)
				continue
			}
			resp := env.Do("GET", link, "", nil).Expect(t, http.StatusOK)
			if resp.Header.Get("Content-Type") != "image/jpeg" || !strings.Contains(resp.Header.Get("Cache-Control"), "immutable") {
				t.Errorf("%s served as %q, %q", tc.kind, resp.Header.Get("Content-Type"), resp.Header.Get("Cache-Control"))
			}
			img, err := jpeg.Decode(bytes.NewReader(resp.Body))
			if err != nil {
				t.Errorf("%s is not a JPEG: %v", tc.kind, err)
				continue
			}
			if b := img.Bounds(); b.Dx() != tc.w || b.Dy() != tc.h {
				t.Errorf("%s is %dx%d, want %dx%d", tc.kind, b.Dx(), b.Dy(), tc.w, tc.h)
			}
		}
		oldAvatar := r["image_url"].(string)
		body, h = multipartBody(t, nil, map[string][]byte{"avatar": pngOf(t, 64, 64)})
		r = env.DoWith("PUT", "/v1/users/me", token, body, h).Expect(t, http.StatusOK).JSON(t)["user"].(map[string]any)
		if r["image_url"] == oldAvatar {
			t.Error("a new avatar kept the old URL")
		}
		env.Do("GET", oldAvatar, "", nil).Expect(t, http.StatusNotFound)

		// Refusals: each a 4xx naming the field, nothing changed.
		big := make([]byte, 301<<10)
		copy(big, pngOf(t, 10, 10))
		notImage, _ := multipartBody(t, map[string]string{"name": "Should Not Stick"}, map[string][]byte{"avatar": []byte("this is not an image at all")})
		tooBig, _ := multipartBody(t, map[string]string{"name": "Should Not Stick"}, map[string][]byte{"cover": big})
		for _, tc := range []struct {
			name   string
			body   any
			header http.Header
			token  string
			path   string
			status int
			field  string
		}{
			{"not an image", notImage, h, token, "/v1/users/me", 422, "avatar"},
			{"an image over the limit", tooBig, h, token, "/v1/users/me", 413, "cover"},
			{"a website that is not http", map[string]any{"name": "Should Not Stick", "website": "javascript:alert(1)"}, nil, token, "/v1/users/me", 422, "website"},
			{"an empty name", map[string]any{"name": " "}, nil, token, "/v1/users/me", 422, "name"},
			{"a location too long", map[string]any{"location": strings.Repeat("x", 101)}, nil, token, "/v1/users/me", 422, "location"},
			{"too many tags", map[string]any{"tags": "a,b,c,d,e,f,g,h,i,j,k"}, nil, token, "/v1/users/me", 422, "tags"},
			{"a name that is not a string", map[string]any{"name": 5}, nil, token, "/v1/users/me", 400, ""},
			{"another user's profile", map[string]any{"name": "Hijack"}, nil, otherToken, "/v1/users/" + strconv.FormatInt(me.ID, 10), 403, ""},
			{"no token", map[string]any{"name": "Anon"}, nil, "", "/v1/users/me", 401, ""},
		} {
			hdr := tc.header
			if _, isBytes := tc.body.([]byte); !isBytes {
				hdr = nil
			}
			if b, ok := tc.body.([]byte); ok {
				// The boundary of each body is its own.
				hdr = http.Header{"Content-Type": {"multipart/form-data; boundary=" + boundaryOf(b)}}
			}
			resp := env.DoWith("PUT", tc.path, tc.token, tc.body, hdr)
			if resp.Status != tc.status {
				t.Errorf("%s: %d, want %d: %s", tc.name, resp.Status, tc.status, resp.Body)
				continue
			}
			if tc.field != "" && !strings.Contains(string(resp.Body), `"`+tc.field+`":`) {
				t.Errorf("%s: the error does not name %s: %s", tc.name, tc.field, resp.Body)
			}
		}
		after := env.Do("GET", "/v1/users/me", token, nil).Expect(t, http.StatusOK).JSON(t)["user"].(map[string]any)
		if after["name"] != "With Pictures" || after["image_url"] != r["image_url"] {
			t.Errorf("refused requests changed the profile: %v", after)
		}
	})
}

func boundaryOf(body []byte) string {
	line, _, _ := bytes.Cut(body, []byte("\r\n"))
	return strings.TrimPrefix(string(line), "--")
}
