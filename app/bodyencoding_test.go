package app_test

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/onair/onair/admin"
	"github.com/onair/onair/admin/admintest"
	"github.com/onair/onair/internal/onairtest"
)

// gzipped compresses data.
func gzipped(t testing.TB, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	return buf.Bytes()
}

// gzipBomb is a small gzip body that inflates to size bytes: a JSON
// string of spaces, a valid document if it were ever read whole.
func gzipBomb(t testing.TB, size int) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Write([]byte(`{"name":"`))
	chunk := bytes.Repeat([]byte(" "), 1<<20)
	for n := 0; n < size; n += len(chunk) {
		zw.Write(chunk)
	}
	zw.Write([]byte(`"}`))
	zw.Close()
	return buf.Bytes()
}

// post sends body with Content-Encoding enc through client (a cookie
// jar's, for the pages and the console) and answers status and body.
func post(t *testing.T, client *http.Client, method, target, contentType, enc string, body []byte, token string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, target, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if enc != "" {
		req.Header.Set("Content-Encoding", enc)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(data)
}

var formToken = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

// TestCompressedBodies: on every kind of route that takes a body (the
// API's JSON and multipart, the webhooks API, a page's form, the
// console's form) a gzip body that inflates past the 4 MiB limit is
// refused with 413 before anything reads it, an encoding the server does
// not speak or a compressed body where none is taken is 415 with
// Accept-Encoding, and a small gzip or deflate body works as a plain one.
func TestCompressedBodies(t *testing.T) {
	t.Parallel()
	env := onairtest.New(t, onairtest.Options{})
	sender, token := env.CreateUser("Gzip Sender", onairtest.Password("secret-gzip-sender"))
	bomb := gzipBomb(t, 64<<20)
	if len(bomb) > 100<<10 {
		t.Fatalf("the bomb is %d bytes, meant to be small", len(bomb))
	}
	api := env.Client

	t.Run("API", func(t *testing.T) {
		status, _, body := post(t, api, "POST", env.URL+"/v1/shows", "application/json", "gzip", bomb, token)
		if status != http.StatusRequestEntityTooLarge || !strings.Contains(body, "body_too_large") {
			t.Fatalf("gzip bomb: %d %s, want 413 body_too_large", status, body)
		}
		status, _, body = post(t, api, "POST", env.URL+"/v1/shows", "application/json", "gzip", gzipped(t, []byte(`{"name":"Gzipped Set","description":"sent gzipped"}`)), token)
		if status != http.StatusCreated || !strings.Contains(body, "Gzipped Set") {
			t.Fatalf("small gzip body: %d %s, want 201", status, body)
		}
		var zbuf bytes.Buffer
		zw := zlib.NewWriter(&zbuf)
		zw.Write([]byte(`{"name":"Deflated Set","description":"sent deflated"}`))
		zw.Close()
		status, _, body = post(t, api, "POST", env.URL+"/v1/shows", "application/json", "deflate", zbuf.Bytes(), token)
		if status != http.StatusCreated || !strings.Contains(body, "Deflated Set") {
			t.Fatalf("small deflate body: %d %s, want 201", status, body)
		}
		status, _, body = post(t, api, "POST", env.URL+"/v1/shows", "application/json", "gzip", []byte("not gzip at all"), token)
		if status != http.StatusBadRequest {
			t.Fatalf("corrupt gzip body: %d %s, want 400", status, body)
		}
		for _, tc := range []struct{ name, method, path, enc string }{
			{"brotli", "POST", "/v1/shows", "br"},
			{"two layers", "POST", "/v1/shows", "gzip, gzip"},
			{"a GET takes no body", "GET", "/v1/shows", "gzip"},
			{"a DELETE takes no body", "DELETE", "/v1/shows/1", "gzip"},
		} {
			status, h, body := post(t, api, tc.method, env.URL+tc.path, "application/json", tc.enc, gzipped(t, []byte(`{}`)), token)
			if status != http.StatusUnsupportedMediaType || h.Get("Accept-Encoding") != "gzip, deflate" || !strings.Contains(body, "unsupported_media_type") {
				t.Errorf("%s: %d (Accept-Encoding %q) %s, want 415", tc.name, status, h.Get("Accept-Encoding"), body)
			}
		}
	})

	t.Run("API multipart", func(t *testing.T) {
		var form bytes.Buffer
		mw := multipart.NewWriter(&form)
		mw.WriteField("name", "Multipart")
		fw, _ := mw.CreateFormFile("avatar", "a.png")
		fw.Write(bytes.Repeat([]byte{0}, 8<<20))
		mw.Close()
		status, _, body := post(t, api, "PUT", env.URL+"/v1/users/me", mw.FormDataContentType(), "gzip", gzipped(t, form.Bytes()), token)
		if status != http.StatusRequestEntityTooLarge {
			t.Fatalf("gzip multipart past the limit: %d %s, want 413", status, body)
		}
	})

	t.Run("webhooks API", func(t *testing.T) {
		status, _, body := post(t, api, "POST", env.URL+"/v1/webhooks", "application/json", "gzip", bomb, token)
		if status != http.StatusRequestEntityTooLarge {
			t.Fatalf("gzip bomb: %d %s, want 413", status, body)
		}
		status, _, body = post(t, api, "POST", env.URL+"/v1/webhooks", "application/json", "gzip", gzipped(t, []byte(`{"url":"not a url"}`)), token)
		if status != http.StatusUnprocessableEntity {
			t.Fatalf("small gzip body: %d %s, want its fields checked (422)", status, body)
		}
	})

	// signInWith reads a sign-in form (its CSRF cookie and field) and
	// posts it gzipped.
	signInWith := func(t *testing.T, client *http.Client, formPath string, form url.Values, body []byte) (int, string) {
		t.Helper()
		resp, err := client.Get(env.URL + formPath)
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		m := formToken.FindSubmatch(page)
		if m == nil {
			t.Fatalf("no csrf field on %s (%d)", formPath, resp.StatusCode)
		}
		form.Set("csrf", string(m[1]))
		if body == nil {
			body = gzipped(t, []byte(form.Encode()))
		}
		status, h, text := post(t, client, "POST", env.URL+formPath, "application/x-www-form-urlencoded", "gzip", body, "")
		return status, h.Get("Location") + " " + text
	}
	browser := func() *http.Client {
		return admintest.New(t, env).HTTP // a cookie jar, no redirects followed
	}

	t.Run("page form", func(t *testing.T) {
		form := url.Values{"email": {sender.Email}, "password": {"secret-gzip-sender"}}
		if status, body := signInWith(t, browser(), "/signin", form, bomb); status != http.StatusRequestEntityTooLarge {
			t.Fatalf("gzip bomb: %d %s, want 413", status, body)
		}
		if status, body := signInWith(t, browser(), "/signin", form, nil); status != http.StatusSeeOther {
			t.Fatalf("small gzip form: %d %s, want 303 (signed in)", status, body)
		}
	})

	t.Run("console", func(t *testing.T) {
		staff, _ := env.CreateUser("Gzip Staff", onairtest.Role("admin"), onairtest.Password(admintest.Password))
		form := url.Values{"email": {staff.Email}, "password": {admintest.Password}}
		if status, body := signInWith(t, browser(), admin.Prefix+"/login", form, bomb); status != http.StatusRequestEntityTooLarge {
			t.Fatalf("gzip bomb: %d %s, want 413", status, body)
		}
		status, body := signInWith(t, browser(), admin.Prefix+"/login", form, nil)
		if status != http.StatusSeeOther || !strings.HasPrefix(body, admin.Prefix+" ") {
			t.Fatalf("small gzip form: %d %s, want 303 to the console", status, body)
		}
	})
}
