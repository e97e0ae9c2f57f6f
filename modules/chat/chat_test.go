package chat_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/chat"
)

var (
	positionRe  = regexp.MustCompile(`^[0-9]+\.[0-9]{5}$`)
	timestampRe = regexp.MustCompile(`^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$`)
)

func chatPath(showID int64, rest string) string { return fmt.Sprintf("/v1/shows/%d%s", showID, rest) }

func TestChatConformance(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env := onairtest.New(t, onairtest.Options{Backend: backend})
		owner, ownerTok := env.CreateUser("Olga Owner")
		_, fanTok := env.CreateUser("Fred Fan")
		_, otherTok := env.CreateUser("Otto Other")
		_, modTok := env.CreateUser("Mia Moderator", onairtest.Role("moderator"))
		showID := onairtest.CreateShow(t, env, ownerTok, nil).ID

		t.Run("post answers the message as sent", func(t *testing.T) {
			text := "<b>hello</b> & 'welcome' \"all\"\nsecond line ✓"
			r := env.Do("POST", chatPath(showID, "/chats"), fanTok, map[string]any{"message": text}).Expect(t, http.StatusCreated)
			c := r.JSON(t)["chat"].(map[string]any)
			if c["message"] != text {
				t.Errorf("message %q, want it stored as sent %q", c["message"], text)
			}
			id := onairtest.ID(c)
			if want := fmt.Sprintf("%s/v1/shows/%d/chats/%d", env.URL, showID, id); c["object_url"] != want {
				t.Errorf("object_url %v, want %s", c["object_url"], want)
			}
			if !positionRe.MatchString(c["position"].(string)) {
				t.Errorf("position %q is not a decimal with five digits", c["position"])
			}
			if !timestampRe.MatchString(c["created_at"].(string)) {
				t.Errorf("created_at %q", c["created_at"])
			}
			u := c["user"].(map[string]any)
			if _, ok := u["email"]; ok {
				t.Errorf("author carries email")
			}
			if _, ok := u["radio"]; !ok {
				t.Errorf("author lacks radio")
			}
			got := env.Do("GET", chatPath(showID, fmt.Sprintf("/chats/%d", id)), otherTok, nil).Expect(t, http.StatusOK).JSON(t)
			if got["chat"].(map[string]any)["message"] != text {
				t.Errorf("GET answers %v", got["chat"])
			}
		})

		t.Run("second post within a second is 429", func(t *testing.T) {
			env.Do("POST", chatPath(showID, "/chats"), otherTok, url.Values{"message": {"one"}}).Expect(t, http.StatusCreated)
			r := env.Do("POST", chatPath(showID, "/chats"), otherTok, url.Values{"message": {"two"}}).Expect(t, http.StatusTooManyRequests)
			if r.ErrorCode(t) != "rate_limited" || r.Header.Get("Retry-After") == "" {
				t.Errorf("429 without the error code or Retry-After: %v %s", r.Header, r.Body)
			}
		})

		t.Run("length limits", func(t *testing.T) {
			cases := []struct {
				name    string
				message any
				status  int
			}{
				{"empty", "", http.StatusUnprocessableEntity},
				{"blank", "   ", http.StatusUnprocessableEntity},
				{"missing", nil, http.StatusUnprocessableEntity},
				{"501 characters", strings.Repeat("é", 501), http.StatusUnprocessableEntity},
				{"not a string", 42, http.StatusBadRequest},
				{"500 characters", strings.Repeat("é", 500), http.StatusCreated},
			}
			for _, tc := range cases {
				_, tok := env.CreateUser("Len " + tc.name)
				body := map[string]any{}
				if tc.message != nil {
					body["message"] = tc.message
				}
				r := env.Do("POST", chatPath(showID, "/chats"), tok, body)
				if r.Status != tc.status {
					t.Errorf("%s: status %d, want %d: %s", tc.name, r.Status, tc.status, r.Body)
				}
			}
		})

		t.Run("404s", func(t *testing.T) {
			other := onairtest.CreateShow(t, env, ownerTok, nil).ID
			r := env.Do("POST", chatPath(other, "/chats"), ownerTok, map[string]any{"message": "elsewhere"}).Expect(t, http.StatusCreated)
			otherMsg := onairtest.ID(r.JSON(t)["chat"].(map[string]any))
			for _, path := range []string{
				chatPath(showID, fmt.Sprintf("/chats/%d", otherMsg)), // message of another show
				chatPath(showID, "/chats/999999"),
				chatPath(showID, "/chats/abc"),
				"/v1/shows/999999/chats",
				"/v1/shows/999999/chat_users",
			} {
				if r := env.Do("GET", path, fanTok, nil); r.Status != http.StatusNotFound || r.ErrorCode(t) != "not_found" {
					t.Errorf("GET %s: %d %s", path, r.Status, r.Body)
				}
			}
			private := onairtest.CreateShow(t, env, ownerTok, map[string]any{"private": true}).ID
			if r := env.Do("POST", chatPath(private, "/chats"), fanTok, map[string]any{"message": "hi"}); r.Status != http.StatusNotFound {
				t.Errorf("post to another user's private show: %d", r.Status)
			}
			if r := env.Do("GET", chatPath(private, "/chats"), fanTok, nil); r.Status != http.StatusNotFound {
				t.Errorf("list of another user's private show: %d", r.Status)
			}
			env.Do("POST", chatPath(private, "/chats"), ownerTok, map[string]any{"message": "my own"}).Expect(t, http.StatusCreated)
		})

		t.Run("position counts from the show's start", func(t *testing.T) {
			started := onairtest.CreateShow(t, env, ownerTok, nil).ID
			start := app.Now().Add(-125 * time.Second)
			if _, err := env.Core.DB.NewUpdate().Table("shows").Set("start = ?", start).Where("id = ?", started).Exec(context.Background()); err != nil {
				t.Fatal(err)
			}
			_, tok := env.CreateUser("Pos Tester")
			c := env.Do("POST", chatPath(started, "/chats"), tok, map[string]any{"message": "now"}).Expect(t, http.StatusCreated).JSON(t)["chat"].(map[string]any)
			pos, _ := strconv.ParseFloat(c["position"].(string), 64)
			if pos < 124 || pos > 130 {
				t.Errorf("position %v, want about 125", c["position"])
			}
			future := onairtest.CreateShow(t, env, ownerTok, map[string]any{"start": app.Now().Add(48 * time.Hour).Format(app.TimeLayout)}).ID
			c = env.Do("POST", chatPath(future, "/chats"), ownerTok, map[string]any{"message": "soon"}).Expect(t, http.StatusCreated).JSON(t)["chat"].(map[string]any)
			if c["position"] != "0.00000" {
				t.Errorf("position before the start %v, want 0.00000", c["position"])
			}
		})

		t.Run("pagination over 120 messages, newest first", func(t *testing.T) {
			show := onairtest.CreateShow(t, env, ownerTok, nil).ID
			base := app.Now().Add(-time.Hour)
			msgs := make([]chat.Message, 120)
			for i := range msgs {
				msgs[i] = chat.Message{ShowID: show, UserID: owner.ID, Body: fmt.Sprintf("m%03d", i), CreatedAt: base.Add(time.Duration(i) * time.Second)}
			}
			if _, err := env.Core.DB.NewInsert().Model(&msgs).Exec(context.Background()); err != nil {
				t.Fatal(err)
			}
			var seen []string
			next := chatPath(show, "/chats")
			for page := 1; next != ""; page++ {
				body := env.Do("GET", next, fanTok, nil).Expect(t, http.StatusOK).JSON(t)
				if int(body["page"].(float64)) != page || int(body["pages"].(float64)) != 3 || int(body["count"].(float64)) != 120 {
					t.Fatalf("page %d envelope: %v %v %v", page, body["page"], body["pages"], body["count"])
				}
				for _, c := range body["chats"].([]any) {
					seen = append(seen, c.(map[string]any)["message"].(string))
				}
				prev, _ := body["prev_url"].(string)
				if (page == 1) != (body["prev_url"] == nil) || (page > 1 && !strings.HasPrefix(prev, env.URL)) {
					t.Errorf("page %d prev_url %v", page, body["prev_url"])
				}
				next, _ = body["next_url"].(string)
				if next != "" && !strings.HasPrefix(next, env.URL+"/v1/shows/") {
					t.Errorf("next_url %q is not absolute", next)
				}
			}
			if len(seen) != 120 || seen[0] != "m119" || seen[119] != "m000" {
				t.Fatalf("saw %d messages, first %q last %q", len(seen), seen[0], seen[len(seen)-1])
			}
		})

		t.Run("moderation", func(t *testing.T) {
			show := onairtest.CreateShow(t, env, ownerTok, nil).ID
			_, authorTok := env.CreateUser("Ada Author")
			r := env.Do("POST", chatPath(show, "/chats"), authorTok, map[string]any{"message": "oops"}).Expect(t, http.StatusCreated)
			id := onairtest.ID(r.JSON(t)["chat"].(map[string]any))
			env.Do("DELETE", chatPath(show, fmt.Sprintf("/chats/%d", id)), fanTok, nil).Expect(t, http.StatusForbidden)
			env.Do("DELETE", chatPath(show, fmt.Sprintf("/chats/%d", id)), authorTok, nil).Expect(t, http.StatusOK)
			env.Do("GET", chatPath(show, fmt.Sprintf("/chats/%d", id)), fanTok, nil).Expect(t, http.StatusNotFound)

			time.Sleep(1100 * time.Millisecond)
			r = env.Do("POST", chatPath(show, "/chats"), authorTok, map[string]any{"message": "rude"}).Expect(t, http.StatusCreated)
			id = onairtest.ID(r.JSON(t)["chat"].(map[string]any))
			env.Do("DELETE", chatPath(show, fmt.Sprintf("/chats/%d", id)), modTok, nil).Expect(t, http.StatusOK)

			m, _ := onairtest.Module[*chat.Module](env)
			author := principal(t, env, authorTok)
			mod := principal(t, env, modTok)
			if _, err := m.Service.Ban(context.Background(), author.UserID, show, "spam", principal(t, env, fanTok)); err == nil {
				t.Errorf("a plain user could ban")
			}
			if _, err := m.Service.Ban(context.Background(), author.UserID, show, "spam", mod); err != nil {
				t.Fatal(err)
			}
			time.Sleep(1100 * time.Millisecond)
			env.Do("POST", chatPath(show, "/chats"), authorTok, map[string]any{"message": "let me in"}).Expect(t, http.StatusForbidden)
			if err := m.Service.Unban(context.Background(), author.UserID, show, mod); err != nil {
				t.Fatal(err)
			}
			env.Do("POST", chatPath(show, "/chats"), authorTok, map[string]any{"message": "sorry"}).Expect(t, http.StatusCreated)

			// A slow mode far longer than the pause, so that a loaded
			// machine cannot stretch the pause past it.
			if err := m.Service.SetSlowMode(context.Background(), show, 30, mod); err != nil {
				t.Fatal(err)
			}
			env.Do("POST", chatPath(show, "/chats"), fanTok, map[string]any{"message": "a"}).Expect(t, http.StatusCreated)
			time.Sleep(1100 * time.Millisecond) // past the one-second default window
			r = env.Do("POST", chatPath(show, "/chats"), fanTok, map[string]any{"message": "b"}).Expect(t, http.StatusTooManyRequests)
			if ra, _ := strconv.Atoi(r.Header.Get("Retry-After")); ra < 2 || ra > 29 {
				t.Errorf("Retry-After %q under a 30 s slow mode after at least 1.1 s", r.Header.Get("Retry-After"))
			}
		})

		t.Run("deleting the show removes its messages", func(t *testing.T) {
			show := onairtest.CreateShow(t, env, ownerTok, nil).ID
			env.Do("POST", chatPath(show, "/chats"), ownerTok, map[string]any{"message": "bye"}).Expect(t, http.StatusCreated)
			env.Do("DELETE", fmt.Sprintf("/v1/shows/%d", show), ownerTok, nil).Expect(t, http.StatusOK)
			n, err := env.Core.DB.NewSelect().Model((*chat.Message)(nil)).Where("show_id = ?", show).Count(context.Background())
			if err != nil || n != 0 {
				t.Errorf("%d messages of a deleted show remain (%v)", n, err)
			}
			env.Do("GET", chatPath(show, "/chats"), ownerTok, nil).Expect(t, http.StatusNotFound)
		})

		t.Run("comments_count counts the messages", func(t *testing.T) {
			show := onairtest.CreateShow(t, env, ownerTok, nil).ID
			for i, tok := range []string{ownerTok, fanTok} {
				env.Do("POST", chatPath(show, "/chats"), tok, map[string]any{"message": fmt.Sprint("c", i)}).Expect(t, http.StatusCreated)
			}
			s := env.Do("GET", fmt.Sprintf("/v1/shows/%d", show), fanTok, nil).Expect(t, http.StatusOK).JSON(t)["show"].(map[string]any)
			if s["comments_count"].(float64) != 2 {
				t.Errorf("comments_count %v, want 2", s["comments_count"])
			}
		})
	})
}

func principal(t *testing.T, env *onairtest.Env, token string) *app.Principal {
	t.Helper()
	p, err := env.Core.Auth.Authenticate(context.Background(), token)
	if err != nil || p == nil {
		t.Fatalf("authenticate: %v", err)
	}
	return p
}
