package app

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
)

// /readyz names each dependency that fails, answers 503, and does not wait
// on a hung one beyond its timeout. The error text goes to the log, never
// into the public answer.
func TestReadyHandler(t *testing.T) {
	t.Parallel()
	ok := func(context.Context) error { return nil }
	refused := func(context.Context) error { return errors.New("dial tcp 127.0.0.1:1: connect: connection refused") }
	hung := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	tests := []struct {
		name   string
		checks []readyCheck
		status int
		want   map[string]string
	}{
		{"all answer", []readyCheck{{"database", ok}, {"store", ok}, {"redis", ok}}, 200,
			map[string]string{"database": "ok", "store": "ok", "redis": "ok"}},
		{"redis refuses", []readyCheck{{"database", ok}, {"store", ok}, {"redis", refused}}, 503,
			map[string]string{"database": "ok", "store": "ok", "redis": "unavailable"}},
		{"the store hangs", []readyCheck{{"database", ok}, {"store", hung}}, 503,
			map[string]string{"database": "ok", "store": "no answer within 2s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			app := fiber.New()
			var logs strings.Builder
			app.Get("/readyz", readyHandler(tt.checks, slog.New(slog.NewTextHandler(&logs, nil))))
			start := time.Now()
			res, err := app.Test(httptest.NewRequest("GET", "/readyz", nil), int((readyTimeout + 10*time.Second).Milliseconds()))
			if err != nil {
				t.Fatal(err)
			}
			if took := time.Since(start); took > readyTimeout+5*time.Second {
				t.Errorf("readyz took %s", took)
			}
			raw, _ := io.ReadAll(res.Body)
			var body struct {
				Status string            `json:"status"`
				Checks map[string]string `json:"checks"`
			}
			if err := json.Unmarshal(raw, &body); err != nil {
				t.Fatalf("%s: %v", raw, err)
			}
			if res.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tt.status, raw)
			}
			for k, v := range tt.want {
				if body.Checks[k] != v {
					t.Errorf("check %s = %q, want %q", k, body.Checks[k], v)
				}
			}
			if tt.name == "redis refuses" {
				if strings.Contains(string(raw), "127.0.0.1") {
					t.Errorf("the answer shows the error: %s", raw)
				}
				if !strings.Contains(logs.String(), "connection refused") {
					t.Errorf("the error is not logged:\n%s", logs.String())
				}
			}
		})
	}
}
