package shows_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/onair/onair/internal/onairtest"
)

// TestMalformed sends bad values for every parameter, in the query and in
// JSON, urlencoded and multipart bodies: each answer must be a 4xx in the
// error shape, never a 500.
func TestMalformed(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		f := newFixture(t, backend)
		_, tok := f.user("Malformed Tester")
		sh := onairtest.CreateShow(t, f.env, tok, map[string]any{"name": "Target", "description": "d"}).Object
		showPath := fmt.Sprintf("/v1/shows/%d", id(sh))

		// Query parameters of both lists.
		bad := map[string][]string{
			"page":      {"0", "-1", "abc", "1.5", "1e3", "99999999999999999999", " 1", "0x10"},
			"scheduled": {"maybe", "TRUE", "yes", "2", "-1", "t"},
			"live":      {"maybe", "False", "on", "10"},
			"archive":   {"maybe", "null"},
			"featured":  {"maybe", "[]"},
			"radio":     {"maybe", "y"},
			"filter":    {"\xff\xfe", "a\x00b", strings.Repeat("x", 201)},
			"tag":       {"\xc3\x28", "\x01", strings.Repeat("t", 201)},
			"slug":      {"\xff", strings.Repeat("s", 201)},
			"from":      {"garbage", "2024-13-01", "2024-02-30", "-5", "100001", "2024-01-01 25:00", "1.5", "\xff"},
			"to":        {"tomorrow", "2024-1-1", "99999999999", "2024-01-01T99:00"},
		}
		for param, values := range bad {
			for _, v := range values {
				for _, base := range []string{"/v1/shows", "/v1/users/me/shows"} {
					if base != "/v1/shows" && (param == "slug" || param == "from" || param == "to") {
						continue // not offered there, ignored
					}
					path := base + "?" + param + "=" + url.QueryEscape(v)
					t.Run("query "+path, func(t *testing.T) {
						r := f.do(t, "GET", path, tok, nil)
						expect4xx(t, r, http.StatusBadRequest)
					})
				}
			}
		}
		// Odd but harmless query values are fine.
		for _, q := range []string{"filter=%25", "filter=_", "filter=%27%3B--", "tag=%F0%9F%8E%B5", "slug=..%2F..", "page=", "live=", "unknown=1", "from=0", "to=2099-12-31"} {
			f.do(t, "GET", "/v1/shows?"+q, tok, nil).Expect(t, http.StatusOK)
		}

		// Path ids.
		for _, p := range []string{"/v1/shows/abc", "/v1/shows/0", "/v1/shows/-1", "/v1/shows/1.5", "/v1/shows/99999999999999999999", "/v1/shows/%00"} {
			for _, m := range []string{"GET", "PUT", "DELETE"} {
				expect4xx(t, f.do(t, m, p, tok, map[string]any{"name": "x"}), http.StatusNotFound)
			}
			expect4xx(t, f.do(t, "POST", p+"/stop", tok, nil), http.StatusNotFound)
			expect4xx(t, f.do(t, "POST", p+"/favorite", tok, nil), http.StatusNotFound)
		}
		for _, p := range []string{"/v1/users/abc/shows", "/v1/users/0/shows", "/v1/users/-5/shows", "/v1/users/99999999999999999999/shows"} {
			expect4xx(t, f.do(t, "GET", p, tok, nil), http.StatusNotFound)
		}

		// Body fields: JSON values of the wrong type (400) or wrong value (422).
		jsonCases := []struct {
			field  string
			value  any
			status int
		}{
			{"name", 123, 400}, {"name", true, 400}, {"name", []string{"a"}, 400}, {"name", map[string]any{"a": 1}, 400},
			{"name", nil, 422}, {"name", "", 422}, {"name", strings.Repeat("n", 101), 422}, {"name", "tab\there", 422},
			{"description", 5, 400}, {"description", false, 400}, {"description", nil, 422}, {"description", strings.Repeat("d", 5001), 422},
			{"start", 123, 400}, {"start", []any{}, 400}, {"start", "not a date", 422}, {"start", "2000-01-01 00:00:00", 422},
			{"start", "2099-02-30 10:00:00", 422}, {"start", "2099-01-01", 422}, {"start", "99999-01-01 00:00:00", 422},
			{"private", "maybe", 400}, {"private", 2, 400}, {"private", nil, 400}, {"private", []any{}, 400}, {"private", "yes", 400},
			{"headline", "maybe", 400}, {"headline", 0.5, 400}, {"headline", map[string]any{}, 400},
			{"radio", "maybe", 400}, {"radio", -1, 400},
			{"tags", 5, 400}, {"tags", []any{1, 2}, 400}, {"tags", map[string]any{"a": "b"}, 400}, {"tags", true, 400},
			{"tags", []string{"a\x00b"}, 422}, {"tags", []string{strings.Repeat("t", 31)}, 422}, {"tags", strings.Split("1,2,3,4,5,6,7,8,9,10,11", ","), 422},
			{"tags", []string{"!!!"}, 422},
		}
		for _, tc := range jsonCases {
			for _, method := range []string{"POST", "PUT"} {
				path := "/v1/shows"
				body := map[string]any{"name": "ok", "description": "ok", tc.field: tc.value}
				if method == "PUT" {
					path, body = showPath, map[string]any{tc.field: tc.value}
				}
				t.Run(fmt.Sprintf("json %s %s=%.30v", method, tc.field, tc.value), func(t *testing.T) {
					expect4xx(t, f.do(t, method, path, tok, body), tc.status)
				})
			}
		}

		// Form and multipart bodies: text that is not UTF-8, bad booleans.
		formCases := []struct {
			kv     []string
			status int
		}{
			{[]string{"name", "\xff\xfe", "description", "d"}, 422},
			{[]string{"name", "n", "description", "\xc3\x28"}, 422},
			{[]string{"name", "n", "description", "d", "tags", "\xff"}, 422},
			{[]string{"name", "n", "description", "d", "private", "maybe"}, 400},
			{[]string{"name", "n", "description", "d", "radio", ""}, 400},
			{[]string{"name", "n", "description", "d", "headline", "TRUE"}, 400},
			{[]string{"name", "n", "description", "d", "start", "\x00"}, 422},
			{[]string{"name", "n", "description", "d", "start", "2000-01-01 00:00:00"}, 422},
			{[]string{"name", "n", "description", "d", "tags", "t1,t2,t3,t4,t5,t6,t7,t8,t9,t10,t11"}, 422},
			{[]string{"description", "d"}, 422},
		}
		for i, tc := range formCases {
			t.Run(fmt.Sprintf("form %d", i), func(t *testing.T) {
				expect4xx(t, f.do(t, "POST", "/v1/shows", tok, form(tc.kv...)), tc.status)
				expect4xx(t, f.doMultipart(t, "POST", "/v1/shows", tok, tc.kv...), tc.status)
			})
		}

		// Bodies that are not what they claim.
		raw := []struct {
			name, body, contentType string
			status                  int
		}{
			{"broken JSON", `{"name": "x",`, "application/json", 400},
			{"JSON array", `["name"]`, "application/json", 400},
			{"JSON string", `"name"`, "application/json", 400},
			{"JSON null", `null`, "application/json", 400},
			{"JSON with trailing junk", `{"name":"x","description":"d"} junk`, "application/json", 400},
			{"text/plain", "name=x", "text/plain", 415},
			{"xml", "<show/>", "application/xml", 415},
			{"multipart without boundary", "--x\r\n", "multipart/form-data", 400},
			{"multipart with a bad body", "garbage", "multipart/form-data; boundary=zzz", 400},
			// fasthttp keeps bad escapes literally: accepted, never a 500.
			{"form with bad escapes", "name=%zz&description=%", "application/x-www-form-urlencoded", 0},
		}
		for _, tc := range raw {
			for _, method := range []string{"POST", "PUT"} {
				path := "/v1/shows"
				if method == "PUT" {
					path = showPath
				}
				t.Run(method+" "+tc.name, func(t *testing.T) {
					r := f.env.DoWith(method, path, tok, tc.body, http.Header{"Content-Type": {tc.contentType}})
					if tc.status == 0 {
						if r.Status >= 500 {
							t.Fatalf("status %d: %s", r.Status, r.Body)
						}
						return
					}
					expect4xx(t, r, tc.status)
				})
			}
		}
		// (A body over app.BodyLimit is the kernel's 413; the server closes
		// the connection mid-upload, so it is tested there, not here.)
	})
}

// expect4xx asserts the status and the error shape.
func expect4xx(t *testing.T, r *onairtest.Response, status int) {
	t.Helper()
	if r.Status >= 500 {
		t.Fatalf("server error %d: %s", r.Status, r.Body)
	}
	expectError(t, r, status)
}
