package app_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
)

// echoInput answers what ReadInput made of the body: name, private, tags.
func echoInput(c *fiber.Ctx) error {
	in, err := app.ReadInput(c)
	if err != nil {
		return err
	}
	out := fiber.Map{}
	if name, ok, err := in.String("name"); err != nil {
		return err
	} else if ok {
		out["name"] = name
	}
	if b, ok, err := in.Bool("private"); err != nil {
		return err
	} else if ok {
		out["private"] = b
	}
	if tags, ok, err := in.Strings("tags"); err != nil {
		return err
	} else if ok {
		out["tags"] = tags
	}
	return c.JSON(out)
}

func multipartBody(t *testing.T, fields [][2]string) (string, []byte) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for _, f := range fields {
		if err := w.WriteField(f[0], f[1]); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	return w.FormDataContentType(), buf.Bytes()
}

func TestReadInput(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{Mount: func(a *fiber.App) { a.Post("/test/input", echoInput) }})
	mpType, mpBody := multipartBody(t, [][2]string{{"name", "Night Set"}, {"private", "1"}, {"tags", "house"}, {"tags", "techno"}})
	mpBrackets, mpBracketsBody := multipartBody(t, [][2]string{{"tags[]", "a"}, {"tags[]", "b"}})
	tests := []struct {
		name        string
		contentType string
		body        string
		status      int
		want        string // JSON the endpoint answers, or the error code
	}{
		{"json", "application/json", `{"name":"Night Set","private":true,"tags":["house","techno"]}`, 200, `{"name":"Night Set","private":true,"tags":["house","techno"]}`},
		{"json with charset", "application/json; charset=utf-8", `{"name":"x"}`, 200, `{"name":"x"}`},
		{"json tags as comma string", "application/json", `{"tags":"house, techno,,"}`, 200, `{"tags":["house","techno"]}`},
		{"json boolean false", "application/json", `{"private":false}`, 200, `{"private":false}`},
		{"json boolean 1", "application/json", `{"private":1}`, 200, `{"private":true}`},
		{"json boolean 0", "application/json", `{"private":0}`, 200, `{"private":false}`},
		{"json boolean as string", "application/json", `{"private":"true"}`, 200, `{"private":true}`},
		{"json boolean yes", "application/json", `{"private":"yes"}`, 400, "bad_request"},
		{"json boolean 2", "application/json", `{"private":2}`, 400, "bad_request"},
		{"json name not a string", "application/json", `{"name":5}`, 400, "bad_request"},
		{"json tags not strings", "application/json", `{"tags":[1,2]}`, 400, "bad_request"},
		{"bad json", "application/json", `{"name":`, 400, "bad_request"},
		{"json array body", "application/json", `["name"]`, 400, "bad_request"},
		{"json without content type", "", `{"name":"x"}`, 200, `{"name":"x"}`},
		{"empty body", "application/json", ``, 200, `{}`},
		{"form", "application/x-www-form-urlencoded", url.Values{"name": {"Night Set"}, "private": {"false"}}.Encode(), 200, `{"name":"Night Set","private":false}`},
		{"form repeated tags", "application/x-www-form-urlencoded", "tags=house&tags=techno", 200, `{"tags":["house","techno"]}`},
		{"form tags[]", "application/x-www-form-urlencoded", "tags%5B%5D=house&tags%5B%5D=techno", 200, `{"tags":["house","techno"]}`},
		{"form comma tags", "application/x-www-form-urlencoded", "tags=house%2Ctechno", 200, `{"tags":["house","techno"]}`},
		{"form boolean 0", "application/x-www-form-urlencoded", "private=0", 200, `{"private":false}`},
		{"form boolean on", "application/x-www-form-urlencoded", "private=on", 400, "bad_request"},
		{"multipart", mpType, string(mpBody), 200, `{"name":"Night Set","private":true,"tags":["house","techno"]}`},
		{"multipart tags[]", mpBrackets, string(mpBracketsBody), 200, `{"tags":["a","b"]}`},
		{"multipart without boundary", "multipart/form-data", "garbage", 400, "bad_request"},
		{"unknown content type", "text/plain", "name=x", 415, "unsupported_media_type"},
		{"xml", "application/xml", "<name>x</name>", 415, "unsupported_media_type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			if tt.contentType != "" {
				h.Set("Content-Type", tt.contentType)
			}
			r := env.DoWith("POST", "/test/input", "", []byte(tt.body), h).Expect(t, tt.status)
			if tt.status != 200 {
				if code := r.ErrorCode(t); code != tt.want {
					t.Fatalf("error code %q, want %q: %s", code, tt.want, r.Body)
				}
				return
			}
			var got, want any
			json.Unmarshal(r.Body, &got)
			json.Unmarshal([]byte(tt.want), &want)
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			if string(g) != string(w) {
				t.Fatalf("decoded %s, want %s", g, w)
			}
		})
	}
}

// A body over app.BodyLimit is refused with 413 in the error shape as soon
// as its Content-Length is read. The request goes over a raw connection:
// a client still writing megabytes would see the reset, not the answer.
func TestBodyTooLarge(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{Mount: func(a *fiber.App) { a.Post("/test/input", echoInput) }})
	_, tok := env.CreateUser("Big Body")
	for _, path := range []string{"/test/input", "/v1/users/me/follow"} {
		t.Run(path, func(t *testing.T) {
			conn, err := net.Dial("tcp", strings.TrimPrefix(env.URL, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{",
				path, tok, app.BodyLimit+1)
			conn.SetReadDeadline(time.Now().Add(testload.Patience))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), `"code":"body_too_large"`) {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
		})
	}
}

func TestInputHas(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{Mount: func(a *fiber.App) {
		a.Put("/test/has", func(c *fiber.Ctx) error {
			in, err := app.ReadInput(c)
			if err != nil {
				return err
			}
			return c.JSON(fiber.Map{"name": in.Has("name"), "description": in.Has("description")})
		})
	}})
	r := env.Do("PUT", "/test/has", "", map[string]any{"name": nil}).Expect(t, 200)
	if string(r.Body) != `{"description":false,"name":true}` {
		t.Fatalf("got %s: PUT must tell a sent null from an absent field", r.Body)
	}
}

func TestQueryBool(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{Mount: func(a *fiber.App) {
		a.Get("/test/bool", func(c *fiber.Ctx) error {
			b, err := app.QueryBool(c, "live")
			if err != nil {
				return err
			}
			return c.JSON(fiber.Map{"live": b})
		})
	}})
	tests := []struct {
		query  string
		status int
		want   string
	}{
		{"", 200, `{"live":null}`},
		{"live=true", 200, `{"live":true}`},
		{"live=false", 200, `{"live":false}`},
		{"live=1", 200, `{"live":true}`},
		{"live=0", 200, `{"live":false}`},
		{"live=yes", 400, ""},
		{"live=TRUE", 400, ""},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			r := env.Do("GET", "/test/bool?"+tt.query, "", nil).Expect(t, tt.status)
			if tt.want != "" && string(r.Body) != tt.want {
				t.Fatalf("got %s, want %s", r.Body, tt.want)
			}
			if tt.status == 400 && r.ErrorCode(t) != "bad_request" {
				t.Fatalf("body %s", r.Body)
			}
		})
	}
}
