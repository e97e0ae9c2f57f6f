package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/onair/onair/internal/onairtest"
)

// publicV1 are the /v1 routes that need no token. The OpenAPI document is
// public on purpose: clients and tools fetch it before they hold a token,
// and it reveals nothing the project's source does not (docs/api.md).
var publicV1 = map[string]bool{"GET /v1/openapi.json": true}

type route struct{ Method, Path string }

// v1Routes lists every registered /v1 route of the running server (every
// module of the binary), HEAD twins and middleware left out.
func v1Routes(env *onairtest.Env) []route {
	seen := map[route]bool{}
	var out []route
	for _, r := range env.Server.App.GetRoutes(true) {
		if r.Method == http.MethodHead || !strings.HasPrefix(r.Path, "/v1/") {
			continue
		}
		rt := route{r.Method, r.Path}
		if !seen[rt] {
			seen[rt] = true
			out = append(out, rt)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path+out[i].Method < out[j].Path+out[j].Method })
	return out
}

var paramRE = regexp.MustCompile(`:[A-Za-z_][A-Za-z0-9_]*\??`)

// concrete substitutes 1 for every path parameter (and x for a wildcard).
func concrete(path string) string {
	return strings.ReplaceAll(paramRE.ReplaceAllString(path, "1"), "*", "x")
}

// Every /v1 route answers 401 with WWW-Authenticate: Bearer and the error
// body without a token, with a wrong one, and with another scheme.
func TestEveryV1RouteNeedsAToken(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{})
	routes := v1Routes(env)
	if len(routes) < 4 {
		t.Fatalf("only %d /v1 routes registered: %v", len(routes), routes)
	}
	credentials := []struct{ name, header string }{
		{"no token", ""},
		{"wrong token", "Bearer onair_0000000000000000000000000000000000000000000000000000000000000000"},
		{"not an onair token", "Bearer nonsense"},
		{"empty bearer", "Bearer "},
		{"basic auth", "Basic dXNlcjpwYXNz"},
	}
	for _, rt := range routes {
		if publicV1[rt.Method+" "+rt.Path] {
			continue
		}
		for _, cred := range credentials {
			t.Run(rt.Method+" "+rt.Path+"/"+cred.name, func(t *testing.T) {
				h := http.Header{}
				if cred.header != "" {
					h.Set("Authorization", cred.header)
				}
				body := ""
				if rt.Method == http.MethodPost || rt.Method == http.MethodPut {
					body = "{}"
					h.Set("Content-Type", "application/json")
				}
				var b any
				if body != "" {
					b = body
				}
				r := env.DoWith(rt.Method, concrete(rt.Path), "", b, h)
				r.Expect(t, http.StatusUnauthorized)
				if got := r.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
					t.Fatalf("WWW-Authenticate %q", got)
				}
				if code := r.ErrorCode(t); code != "unauthorized" {
					t.Fatalf("error code %q", code)
				}
			})
		}
	}
}

// A token passes the check; an unknown /v1 path then answers 404 JSON, and
// openapi.json needs no token at all.
func TestV1WithToken(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{})
	_, tok := env.CreateUser("Tess Token")
	tests := []struct {
		name, path, token string
		status            int
	}{
		{"valid token", "/v1/users/me", tok, 200},
		{"lowercase scheme", "/v1/users/me", "", 200},
		{"unknown path with token", "/v1/nothing-here", tok, 404},
		{"unknown path without token", "/v1/nothing-here", "", 401},
		{"openapi is public", "/v1/openapi.json", "", 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			if tt.name == "lowercase scheme" {
				h.Set("Authorization", "bearer "+tok)
			}
			r := env.DoWith("GET", tt.path, tt.token, nil, h).Expect(t, tt.status)
			if tt.status == 404 && r.ErrorCode(t) != "not_found" {
				t.Fatalf("body %s", r.Body)
			}
		})
	}
}

func TestOpenAPIDocument(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{})
	r := env.Do("GET", "/v1/openapi.json", "", nil).Expect(t, http.StatusOK)
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("content type %q", ct)
	}
	var head struct {
		OpenAPI string `json:"openapi"`
		Servers []struct {
			URL string `json:"url"`
		} `json:"servers"`
	}
	if err := json.Unmarshal(r.Body, &head); err != nil {
		t.Fatal(err)
	}
	if head.OpenAPI != "3.1.0" {
		t.Fatalf("openapi %q, want 3.1.0", head.OpenAPI)
	}
	if len(head.Servers) != 1 || head.Servers[0].URL != env.URL {
		t.Fatalf("servers %+v, want the public URL %s", head.Servers, env.URL)
	}
	doc, err := openapi3.NewLoader().LoadFromData(r.Body)
	if err != nil {
		t.Fatalf("kin-openapi cannot load the served document: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("the served document is not valid: %v", err)
	}

	t.Run("every registered /v1 route is documented", func(t *testing.T) {
		for _, rt := range v1Routes(env) {
			path := paramRE.ReplaceAllStringFunc(rt.Path, func(p string) string {
				return "{" + strings.TrimSuffix(p[1:], "?") + "}"
			})
			item := doc.Paths.Value(path)
			if item == nil || item.GetOperation(rt.Method) == nil {
				t.Errorf("%s %s is not in /v1/openapi.json (as %s)", rt.Method, rt.Path, path)
			}
		}
	})
	t.Run("every documented operation is a registered route", func(t *testing.T) {
		registered := map[string]bool{}
		for _, rt := range v1Routes(env) {
			registered[rt.Method+" "+paramRE.ReplaceAllString(rt.Path, "{}")] = true
		}
		braces := regexp.MustCompile(`\{[^}]+\}`)
		for path, item := range doc.Paths.Map() {
			for method := range item.Operations() {
				if !registered[method+" "+braces.ReplaceAllString(path, "{}")] {
					t.Errorf("%s %s is documented but no route serves it", method, path)
				}
			}
		}
	})
	t.Run("every operation documents the kernel's answers", func(t *testing.T) {
		for path, item := range doc.Paths.Map() {
			for method, op := range item.Operations() {
				if publicV1[method+" "+path] {
					continue
				}
				for _, code := range []int{401, 429, 500} {
					if op.Responses.Status(code) == nil {
						t.Errorf("%s %s does not document %d", method, path, code)
					}
				}
			}
		}
	})
}
