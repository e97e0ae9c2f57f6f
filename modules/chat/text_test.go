package chat_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"testing"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/chat"
	"github.com/onair/onair/modules/users"
)

// TestMessageTextRule: a message with a NUL or bytes that are not UTF-8 is
// a 422 on message, through the API (JSON, form) and through the service
// the web pages call, on both databases; nothing is stored. A ban reason
// follows the same rule.
func TestMessageTextRule(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env := onairtest.New(t, onairtest.Options{Backend: backend})
		fan, fanTok := env.CreateUser("Nul Sender")
		mod, _ := env.CreateUser("Nul Moderator", onairtest.Role("moderator"))
		showID := onairtest.CreateShow(t, env, fanTok, nil).ID
		path := chatPath(showID, "/chats")
		for name, body := range map[string]any{
			"JSON NUL":            map[string]any{"message": "hi\x00there"},
			"form NUL":            url.Values{"message": {"hi\x00there"}},
			"form invalid UTF-8":  url.Values{"message": {"hi\xff\xfe"}},
			"JSON only a NUL":     map[string]any{"message": "\x00"},
			"form ends with NUL":  url.Values{"message": {"bye\x00"}},
			"JSON body not UTF-8": "{\"message\": \"\xff\"}",
		} {
			t.Run(name, func(t *testing.T) {
				var r *onairtest.Response
				if s, ok := body.(string); ok {
					r = env.DoWith("POST", path, fanTok, s, http.Header{"Content-Type": {"application/json"}})
				} else {
					r = env.Do("POST", path, fanTok, body)
				}
				if r.Status >= 500 {
					t.Fatalf("server error: %d %s", r.Status, r.Body)
				}
				// A JSON string holding bytes that are not UTF-8 is refused
				// on its field like any other (docs/api.md, "Text").
				r.Expect(t, http.StatusUnprocessableEntity)
			})
		}
		m, _ := onairtest.Module[*chat.Module](env)
		by := users.PrincipalOf(fan, 0)
		_, err := m.Service.Post(context.Background(), showID, by, "pages \x00 form")
		var apiErr *app.Error
		if !errors.As(err, &apiErr) || apiErr.Status != http.StatusUnprocessableEntity || apiErr.Fields["message"] == "" {
			t.Errorf("service post with a NUL: %v, want a 422 on message", err)
		}
		_, err = m.Service.Ban(context.Background(), fan.ID, showID, "re\x00ason", users.PrincipalOf(mod, 0))
		if !errors.As(err, &apiErr) || apiErr.Status != http.StatusUnprocessableEntity || apiErr.Fields["reason"] == "" {
			t.Errorf("ban with a NUL reason: %v, want a 422 on reason", err)
		}
		var list struct {
			Count int `json:"count"`
		}
		env.Do("GET", path, fanTok, nil).Expect(t, http.StatusOK).Decode(t, &list)
		if list.Count != 0 {
			t.Errorf("%d messages stored, want none", list.Count)
		}
		// A message that keeps other control characters is stored as sent.
		r := env.Do("POST", path, fanTok, map[string]any{"message": "tab\there\nnext"}).Expect(t, http.StatusCreated)
		if got := r.JSON(t)["chat"].(map[string]any)["message"]; got != "tab\there\nnext" {
			t.Errorf("message %q, want it as sent", got)
		}
	})
}
