package shows_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"mime/multipart"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/miniotest"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/store"
	"github.com/onair/onair/modules/users"
)

// pngOf is a w×h PNG in one colour.
func pngOf(t *testing.T, w, h int, c color.RGBA) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, c)
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// imageBody is a multipart body of fields and the file image (none when
// nil).
func imageBody(t *testing.T, img []byte, kv ...string) (string, http.Header) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for i := 0; i+1 < len(kv); i += 2 {
		w.WriteField(kv[i], kv[i+1])
	}
	if img != nil {
		part, err := w.CreateFormFile("image", "cover.png")
		if err != nil {
			t.Fatal(err)
		}
		part.Write(img)
	}
	w.Close()
	return b.String(), http.Header{"Content-Type": {w.FormDataContentType()}}
}

// TestShowImage: a show's image uploaded with POST and PUT is re-encoded
// to a 16:9 JPEG, stored, served, and is the show's image_url in reads,
// lists and the show page's og:image; a new one replaces and deletes the
// old; a private show's is signed; refusals are the profile images' 4xx
// naming the field image and save nothing; deleting the show deletes it.
// On each database with the local store, and on SQLite with an S3 bucket
// (MinIO).
func TestShowImage(t *testing.T) {
	t.Parallel()
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		t.Parallel()
		showImage(t, backend, "")
	})
	t.Run("s3", func(t *testing.T) {
		t.Parallel()
		srv := miniotest.Start(t)
		showImage(t, "sqlite", srv.URL("media"))
	})
}

func showImage(t *testing.T, backend, storageURL string) {
	env := onairtest.New(t, onairtest.Options{Backend: backend, Configure: func(c *app.Config) {
		c.Set(users.SettingImageMaxBytes, 300<<10)
		if storageURL != "" {
			c.StorageURL = storageURL
		}
	}})
	ctx := context.Background()
	_, token := env.CreateUser("Pic Tured")
	_, other := env.CreateUser("Some One Else")
	imageURL := regexp.MustCompile(`^` + regexp.QuoteMeta(env.URL) + `/media/shows/(\d+)/(image-[0-9a-f]{16}\.jpg)$`)
	keyOf := func(link string) string {
		m := imageURL.FindStringSubmatch(link)
		if m == nil {
			t.Fatalf("image_url %q is not an uploaded image", link)
		}
		return "shows/" + m[1] + "/" + m[2]
	}
	stored := func(key string) bool {
		_, err := env.Core.Store.Stat(ctx, key)
		if err != nil && !errors.Is(err, store.ErrNotExist) {
			t.Fatal(err)
		}
		return err == nil
	}
	served := func(link string, w, h int) {
		t.Helper()
		r := env.Do("GET", link, "", nil).Expect(t, http.StatusOK)
		if ct := r.Header.Get("Content-Type"); ct != "image/jpeg" {
			t.Errorf("%s served as %q", link, ct)
		}
		img, err := jpeg.Decode(bytes.NewReader(r.Body))
		if err != nil {
			t.Fatalf("%s is not a JPEG: %v", link, err)
		}
		if b := img.Bounds(); b.Dx() != w || b.Dy() != h {
			t.Errorf("%s is %dx%d, want %dx%d", link, b.Dx(), b.Dy(), w, h)
		}
	}
	red, blue := color.RGBA{200, 0, 0, 255}, color.RGBA{0, 0, 200, 255}

	// Create with an image: 1600×1200 is cropped to 16:9 and scaled
	// to 1280×720.
	body, h := imageBody(t, pngOf(t, 1600, 1200, red), "name", "With A Picture", "description", "Look at it.")
	sh := showOf(t, env.DoWith("POST", "/v1/shows", token, body, h).Expect(t, http.StatusCreated))
	link := sh["image_url"].(string)
	first := keyOf(link)
	served(link, 1280, 720)
	if got := showOf(t, env.Do("GET", fmt.Sprintf("/v1/shows/%d", id(sh)), other, nil).Expect(t, http.StatusOK))["image_url"]; got != link {
		t.Errorf("GET answers image_url %v, want %s", got, link)
	}
	list := env.Do("GET", "/v1/shows?filter=picture", other, nil).Expect(t, http.StatusOK).JSON(t)["shows"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["image_url"] != link {
		t.Errorf("the list answers %v, want image_url %s", list, link)
	}
	page := env.Do("GET", strings.TrimPrefix(sh["url"].(string), env.URL), "", nil).Expect(t, http.StatusOK)
	if !strings.Contains(string(page.Body), `<meta property="og:image" content="`+link+`">`) {
		t.Errorf("the show page has no og:image of %s", link)
	}

	// Replace: a new URL, the old file gone. 640×480 becomes 640×360
	// (never scaled up).
	body, h = imageBody(t, pngOf(t, 640, 480, blue))
	sh = showOf(t, env.DoWith("PUT", fmt.Sprintf("/v1/shows/%d", id(sh)), token, body, h).Expect(t, http.StatusOK))
	link = sh["image_url"].(string)
	second := keyOf(link)
	if second == first || stored(first) {
		t.Errorf("after a new image: key %s (was %s), the old still stored: %v", second, first, stored(first))
	}
	served(link, 640, 360)
	// The same picture again keeps it (same key), and a PUT without
	// a file, or with an empty file input, leaves it.
	body, h = imageBody(t, pngOf(t, 640, 480, blue), "name", "With A Picture Again")
	env.DoWith("PUT", fmt.Sprintf("/v1/shows/%d", id(sh)), token, body, h).Expect(t, http.StatusOK)
	body, h = imageBody(t, nil, "description", "Still that picture.")
	sh = showOf(t, env.DoWith("PUT", fmt.Sprintf("/v1/shows/%d", id(sh)), token, body, h).Expect(t, http.StatusOK))
	if sh["image_url"] != link || !stored(second) {
		t.Errorf("the same image again or none: image_url %v (want %s), stored %v", sh["image_url"], link, stored(second))
	}

	// Refusals: the profile images' errors on the field image, with
	// the other fields' problems; nothing saved.
	big := make([]byte, 301<<10)
	copy(big, pngOf(t, 10, 10, red))
	count := func() int64 {
		n, err := env.Core.DB.NewSelect().Table("shows").Count(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := count()
	for _, tc := range []struct {
		name, method, path, token string
		img                       []byte
		kv                        []string
		status                    int
		fields                    []string
	}{
		{"not an image", "POST", "/v1/shows", token, []byte("this is not an image at all"), []string{"name", "Nope", "description", "x"}, 422, []string{"image"}},
		{"not an image and no description", "POST", "/v1/shows", token, []byte("GIF89a but not really"), []string{"name", "Nope"}, 422, []string{"image", "description"}},
		{"over the limit", "POST", "/v1/shows", token, big, []string{"name", "Nope", "description", "x"}, 413, []string{"image"}},
		{"over the limit on PUT", "PUT", fmt.Sprintf("/v1/shows/%d", id(sh)), token, big, []string{"name", "Nope"}, 413, []string{"image"}},
		{"not an image on PUT", "PUT", fmt.Sprintf("/v1/shows/%d", id(sh)), token, []byte("<svg></svg>"), []string{"name", "Nope"}, 422, []string{"image"}},
		{"someone else's show", "PUT", fmt.Sprintf("/v1/shows/%d", id(sh)), other, pngOf(t, 64, 64, red), []string{"name", "Nope"}, 403, nil},
		{"someone else's show, a bad image", "PUT", fmt.Sprintf("/v1/shows/%d", id(sh)), other, []byte("junk"), nil, 403, nil},
	} {
		body, h := imageBody(t, tc.img, tc.kv...)
		r := env.DoWith(tc.method, tc.path, tc.token, body, h)
		e := expectError(t, r, tc.status)
		fields, _ := e["fields"].(map[string]any)
		for _, f := range tc.fields {
			if _, ok := fields[f]; !ok {
				t.Errorf("%s: no problem on %s: %s", tc.name, f, r.Body)
			}
		}
	}
	after := showOf(t, env.Do("GET", fmt.Sprintf("/v1/shows/%d", id(sh)), token, nil).Expect(t, http.StatusOK))
	if n := count(); n != before || after["image_url"] != link || after["name"] != "With A Picture Again" {
		t.Errorf("refused requests changed something: %d shows (were %d), %v", n, before, after)
	}
	files, err := env.Core.Store.List(ctx, fmt.Sprintf("shows/%d/", id(sh)))
	if err != nil || len(files) != 1 {
		t.Errorf("the show's stored files after the refusals: %v (%v), want its one image", files, err)
	}

	// A private show's image is signed, like its media.
	sh = showOf(t, env.Do("PUT", fmt.Sprintf("/v1/shows/%d", id(sh)), token, map[string]any{"private": true}).Expect(t, http.StatusOK))
	signed := sh["image_url"].(string)
	if !strings.Contains(signed, "/t/") || !strings.HasSuffix(signed, second[strings.LastIndex(second, "/"):]) {
		t.Errorf("a private show's image_url is %q, want a signed link to its image", signed)
	}
	served(signed, 640, 360)
	env.Do("GET", link, "", nil).Expect(t, http.StatusNotFound)

	// Deleting the show deletes its image.
	env.Do("DELETE", fmt.Sprintf("/v1/shows/%d", id(sh)), token, nil).Expect(t, http.StatusOK)
	if stored(second) {
		t.Error("the image is still stored after the show was deleted")
	}
	env.Do("GET", signed, "", nil).Expect(t, http.StatusNotFound)
}

// TestShowImageMigration upgrades a database from before the show images:
// migration shows:0024 adds image_key, the shows there were keep their
// placeholder image_url, and take an upload from then on.
func TestShowImageMigration(t *testing.T) {
	t.Parallel()
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		env := onairtest.New(t, onairtest.Options{Backend: backend})
		_, token := env.CreateUser("Old Shows")
		sh := showOf(t, env.Do("POST", "/v1/shows", token, map[string]any{"name": "Before the images", "description": "d"}).Expect(t, http.StatusCreated))
		for _, q := range []string{
			"ALTER TABLE shows DROP COLUMN image_key",
			"DELETE FROM onair_migrations WHERE id = 'shows:0024_image_key'",
		} {
			if _, err := env.Core.DB.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		if err := env.Shutdown(); err != nil {
			t.Fatal(err)
		}
		env2 := onairtest.New(t, onairtest.Options{DatabaseURL: env.Core.Config.DatabaseURL})
		path := fmt.Sprintf("/v1/shows/%d", id(sh))
		if got := showOf(t, env2.Do("GET", path, token, nil).Expect(t, http.StatusOK))["image_url"]; got != fmt.Sprintf("%s/media/shows/%d/placeholder.svg", env2.URL, id(sh)) {
			t.Errorf("an older show's image_url after the migration: %v, want its placeholder", got)
		}
		body, h := imageBody(t, pngOf(t, 320, 180, color.RGBA{0, 120, 0, 255}))
		got := showOf(t, env2.DoWith("PUT", path, token, body, h).Expect(t, http.StatusOK))["image_url"].(string)
		if !strings.Contains(got, "/image-") {
			t.Errorf("an older show after an upload: image_url %q", got)
		}
	})
}
