package onairtest

import (
	"net/http"
	"strings"
	"testing"
)

// The validator Do runs on every /v1 response must really reject what the
// document does not allow, or the guarantee it gives is empty.
func TestOpenAPIValidatorRejects(t *testing.T) {
	env := New(t, Options{})
	v := env.openapi
	if v == nil {
		t.Fatal("validation is not on by default")
	}
	tests := []struct {
		name, method, path string
		status             int
		body               string
		wantErr            string
	}{
		{"good user", "GET", "/v1/users/1", 200, `{"user":{"id":1,"url":"http://x/a","object_url":"http://x/v1/users/1","slug":"a","name":"A","location":null,"description":null,"created_at":"2026-01-02 03:04:05","dj":false,"producer":false,"featured":false,"radio":false,"image_url":"http://x/i","cover_url":"http://x/c","tags":[]}}`, ""},
		{"missing fields", "GET", "/v1/users/1", 200, `{"user":{"id":1}}`, "required"},
		{"unknown field", "GET", "/v1/users/1", 200, `{"user":{"id":1,"url":"http://x/a","object_url":"http://x/v1/users/1","slug":"a","name":"A","location":null,"description":null,"created_at":"2026-01-02 03:04:05","dj":false,"producer":false,"featured":false,"image_url":"http://x/i","cover_url":"http://x/c","secret":1}}`, "secret"},
		{"bad timestamp", "GET", "/v1/users/1", 200, `{"user":{"id":1,"url":"http://x/a","object_url":"http://x/v1/users/1","slug":"a","name":"A","location":null,"description":null,"created_at":"2026-01-02T03:04:05Z","dj":false,"producer":false,"featured":false,"image_url":"http://x/i","cover_url":"http://x/c"}}`, "pattern"},
		{"undocumented status", "GET", "/v1/users/1", 418, `{"error":{"status":418,"code":"teapot","message":"x"}}`, "status"},
		{"error shape", "GET", "/v1/users/1", 404, `{"error":{"status":404}}`, "missing properties"},
		{"kernel 401 on every operation", "GET", "/v1/users", 401, `{"error":{"status":401,"code":"unauthorized","message":"x"}}`, ""},
		{"kernel 429 on every operation", "POST", "/v1/users/1/follow", 429, `{"error":{"status":429,"code":"rate_limited","message":"x"}}`, ""},
		{"unknown path is not checked", "GET", "/v1/nothing", 404, `nonsense`, ""},
		{"outside /v1 is not checked", "GET", "/healthz", 200, `nonsense`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, env.URL+tt.path, nil)
			resp := &http.Response{StatusCode: tt.status, Header: http.Header{"Content-Type": {"application/json"}}}
			err := v.check(req, resp, []byte(tt.body))
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("rejected: %v", err)
			case tt.wantErr != "" && err == nil:
				t.Fatal("accepted")
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Fatalf("error %v does not mention %q", err, tt.wantErr)
			}
		})
	}
}
