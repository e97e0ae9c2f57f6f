package app_test

import (
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/onair/onair/internal/onairtest"
)

// badTexts break the text rule of docs/api.md: a NUL character, and bytes
// that are not UTF-8.
var badTexts = map[string]string{"NUL": "a\x00b", "invalid UTF-8": "a\xff\xfeb"}

// TestTextRuleOnEveryRoute walks every operation of /v1/openapi.json (so
// every /v1 route: TestOpenAPIDocument keeps the two in step) and sends a
// NUL and invalid UTF-8 in each query parameter and each body field, on
// both databases. A query parameter answers 400, a text body field 422
// naming the field, and so is a JSON string with raw bytes that are not
// UTF-8 or a lone surrogate escape ("\ud800"), never made U+FFFD; never a
// 5xx, always the error shape, and nothing is created.
func TestTextRuleOnEveryRoute(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env := onairtest.New(t, onairtest.Options{Backend: backend})
		_, tok := env.CreateUser("Text Walker")
		show := env.Do("POST", "/v1/shows", tok, map[string]any{"name": "Walked", "description": "d"}).
			Expect(t, http.StatusCreated).JSON(t)["show"].(map[string]any)
		showID := fmt.Sprint(show["id"])
		chat := env.Do("POST", "/v1/shows/"+showID+"/chats", tok, map[string]any{"message": "hello"}).
			Expect(t, http.StatusCreated).JSON(t)["chat"].(map[string]any)
		chatID := fmt.Sprint(chat["id"])

		doc, err := openapi3.NewLoader().LoadFromData(env.Do("GET", "/v1/openapi.json", "", nil).Expect(t, http.StatusOK).Body)
		if err != nil {
			t.Fatal(err)
		}
		// Concrete paths: the caller's own show and message, and "me".
		concretePath := func(path string) string {
			path = strings.Replace(path, "/users/{id}", "/users/me", 1)
			path = strings.Replace(path, "{show_id}", showID, 1)
			if strings.HasPrefix(path, "/v1/shows/"+showID+"/chats/{id}") {
				return strings.Replace(path, "{id}", chatID, 1)
			}
			return strings.Replace(path, "{id}", showID, 1)
		}
		expect := func(t *testing.T, r *onairtest.Response, status int, field string) {
			t.Helper()
			if r.Status != status {
				t.Fatalf("status %d, want %d: %s", r.Status, status, r.Body)
			}
			var body struct {
				Error struct {
					Status int               `json:"status"`
					Code   string            `json:"code"`
					Fields map[string]string `json:"fields"`
				} `json:"error"`
			}
			r.Decode(t, &body)
			if body.Error.Status != status || body.Error.Code == "" {
				t.Fatalf("not the error shape: %s", r.Body)
			}
			if field != "" && body.Error.Fields[field] == "" {
				t.Fatalf("no problem named on %s: %s", field, r.Body)
			}
		}

		paths := doc.Paths.InMatchingOrder()
		sort.Strings(paths)
		walked := 0
		for _, path := range paths {
			if path == "/v1/openapi.json" {
				continue
			}
			for method, op := range doc.Paths.Value(path).Operations() {
				target := concretePath(path)
				for _, p := range op.Parameters {
					if p.Value == nil || p.Value.In != "query" {
						continue
					}
					for what, bad := range badTexts {
						walked++
						t.Run(fmt.Sprintf("%s %s ?%s %s", method, path, p.Value.Name, what), func(t *testing.T) {
							q := url.Values{p.Value.Name: {bad}}
							expect(t, env.Do(method, target+"?"+q.Encode(), tok, nil), http.StatusBadRequest, "")
						})
					}
				}
				if op.RequestBody == nil || op.RequestBody.Value == nil {
					continue
				}
				content := op.RequestBody.Value.Content
				if mt := content.Get("application/json"); mt != nil {
					walked++
					t.Run(fmt.Sprintf("%s %s JSON body not UTF-8", method, path), func(t *testing.T) {
						r := env.DoWith(method, target, tok, "{\"x\": \"\xff\"}", http.Header{"Content-Type": {"application/json"}})
						expect(t, r, http.StatusUnprocessableEntity, "x")
					})
				}
				for name, prop := range bodyFields(content) {
					text := prop.Type.Includes("string") || prop.Type.Is("array") || len(prop.OneOf) > 0
					want, field := http.StatusBadRequest, ""
					if text {
						want, field = http.StatusUnprocessableEntity, name
					}
					for what, bad := range badTexts {
						walked++
						t.Run(fmt.Sprintf("%s %s form %s %s", method, path, name, what), func(t *testing.T) {
							expect(t, env.Do(method, target, tok, url.Values{name: {bad}}), want, field)
						})
						if what == "NUL" {
							// JSON carries a NUL as \u0000; it cannot carry bytes
							// that are not UTF-8 (the raw case above).
							var value any = bad
							if prop.Type.Is("array") {
								value = []string{"ok", bad}
							}
							t.Run(fmt.Sprintf("%s %s JSON %s NUL", method, path, name), func(t *testing.T) {
								expect(t, env.Do(method, target, tok, map[string]any{name: value}), want, field)
							})
							// Whatever the field's type: the string is refused
							// before it is read.
							walked++
							t.Run(fmt.Sprintf("%s %s JSON %s lone surrogate", method, path, name), func(t *testing.T) {
								for _, body := range []string{`{"` + name + `": "a\ud800b"}`, `{"` + name + `": ["ok", "\udc00"]}`, "{\"" + name + "\": \"a\xffb\"}"} {
									r := env.DoWith(method, target, tok, body, http.Header{"Content-Type": {"application/json"}})
									expect(t, r, http.StatusUnprocessableEntity, name)
								}
							})
						}
					}
				}
			}
		}
		if walked < 30 {
			t.Fatalf("only %d cases walked: is the document loaded?", walked)
		}
		// Nothing was created by the requests that were refused.
		for path, want := range map[string]float64{"/v1/shows": 1, "/v1/shows/" + showID + "/chats": 1} {
			if got := env.Do("GET", path, tok, nil).Expect(t, http.StatusOK).JSON(t)["count"]; got != want {
				t.Errorf("%s: count %v, want %v", path, got, want)
			}
		}
	})
}

// bodyFields are the properties of a request body's schemas, whatever its
// media type.
func bodyFields(content openapi3.Content) map[string]*openapi3.Schema {
	out := map[string]*openapi3.Schema{}
	for _, mt := range content {
		if mt.Schema == nil || mt.Schema.Value == nil {
			continue
		}
		for name, ref := range mt.Schema.Value.Properties {
			if ref.Value != nil {
				out[name] = ref.Value
			}
		}
	}
	return out
}

// TestNamesRefuseSpoofing: a show's name, a tag and a user's name refuse
// bidi controls and invisible characters (docs/api.md, "Text") with a 422
// on the field, on both databases; an emoji sequence joined by U+200D is a
// name, and a lone surrogate is refused, never stored as U+FFFD.
func TestNamesRefuseSpoofing(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env := onairtest.New(t, onairtest.Options{Backend: backend})
		_, tok := env.CreateUser("Name Keeper")
		expectField := func(t *testing.T, r *onairtest.Response, field string) {
			t.Helper()
			var body struct {
				Error struct {
					Code   string            `json:"code"`
					Fields map[string]string `json:"fields"`
				} `json:"error"`
			}
			if r.Status != http.StatusUnprocessableEntity {
				t.Fatalf("status %d, want 422: %s", r.Status, r.Body)
			}
			if r.Decode(t, &body); body.Error.Code != "validation_failed" || body.Error.Fields[field] == "" {
				t.Fatalf("no problem named on %s: %s", field, r.Body)
			}
		}
		for _, bad := range []string{"evil\u202Egnp.exe", "a\u202Ab", "a\u2066b\u2069", "Ro\u200Bck", "Ro\u200Cck", "Ro\u2060ck", "\uFEFFRock", "Ro\u200Dck", "🌙\u200D"} {
			t.Run(fmt.Sprintf("%q", bad), func(t *testing.T) {
				expectField(t, env.Do("POST", "/v1/shows", tok, map[string]any{"name": bad, "description": "d"}), "name")
				expectField(t, env.Do("POST", "/v1/shows", tok, map[string]any{"name": "ok", "description": "d", "tags": []string{"Rock", bad}}), "tags")
				expectField(t, env.Do("PUT", "/v1/users/me", tok, map[string]any{"name": bad}), "name")
				expectField(t, env.Do("PUT", "/v1/users/me", tok, map[string]any{"tags": []string{bad}}), "tags")
				expectField(t, env.Do("POST", "/v1/shows", tok, url.Values{"name": {bad}, "description": {"d"}}), "name")
			})
		}
		for _, body := range []string{`{"name": "\ud800", "description": "d"}`, `{"name": "ok", "description": "d", "tags": ["\ud800"]}`} {
			r := env.DoWith("POST", "/v1/shows", tok, body, http.Header{"Content-Type": {"application/json"}})
			field := "name"
			if strings.Contains(body, "tags") {
				field = "tags"
			}
			expectField(t, r, field)
		}
		if got := env.Do("GET", "/v1/shows", tok, nil).Expect(t, http.StatusOK).JSON(t)["count"]; got != float64(0) {
			t.Fatalf("%v shows stored from refused names", got)
		}
		// Emoji sequences keep their joiners; a pair of surrogates is text.
		sh := env.DoWith("POST", "/v1/shows", tok, `{"name": "Coders \ud83d\udc69\u200d\ud83d\udcbb", "description": "d", "tags": ["Pride 🏳️\u200d🌈"]}`,
			http.Header{"Content-Type": {"application/json"}}).Expect(t, http.StatusCreated).JSON(t)["show"].(map[string]any)
		if sh["name"] != "Coders 👩\u200d💻" || sh["tags"].([]any)[0].(map[string]any)["name"] != "Pride 🏳️\u200d🌈" {
			t.Fatalf("emoji name %q, tags %v", sh["name"], sh["tags"])
		}
	})
}
