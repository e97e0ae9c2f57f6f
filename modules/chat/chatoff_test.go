package chat_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/onair/onair/internal/onairtest"
)

// TestChatOff: a show whose chat is off (chat_enabled=false) refuses every
// new message with 403 chat_disabled, to its owner and staff too, while
// its history stays readable; the room hears the switch on the show event,
// private show included, and the chat takes messages again once it is on.
func TestChatOff(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env := onairtest.New(t, onairtest.Options{Backend: backend})
		_, ownerTok := env.CreateUser("Quiet Owner")
		_, fanTok := env.CreateUser("Quiet Fan")
		_, modTok := env.CreateUser("Quiet Moderator", onairtest.Role("moderator"))
		showID := onairtest.CreateShow(t, env, ownerTok, map[string]any{"private": false}).ID
		env.Do("POST", chatPath(showID, "/chats"), fanTok, map[string]any{"message": "before the switch"}).Expect(t, http.StatusCreated)
		room := dial(t, env.URL, showID, ownerTok, "")

		// The updates' events (the "created" one may come late).
		updated := func(ev map[string]any) bool { return ev["state"] == "updated" }
		put := func(body map[string]any) {
			t.Helper()
			env.Do("PUT", fmt.Sprintf("/v1/shows/%d", showID), ownerTok, body).Expect(t, http.StatusOK)
		}
		put(map[string]any{"chat_enabled": false})
		if ev := room.await("show.updated", updated); ev["chat_enabled"] != false {
			t.Fatalf("the room was not told the chat is off: %v", ev)
		}
		for name, tok := range map[string]string{"fan": fanTok, "owner": ownerTok, "moderator": modTok} {
			r := env.Do("POST", chatPath(showID, "/chats"), tok, map[string]any{"message": "anyone?"})
			if r.Status != http.StatusForbidden || r.ErrorCode(t) != "chat_disabled" {
				t.Errorf("%s posted to a chat that is off: %d %s", name, r.Status, r.Body)
			}
		}
		list := env.Do("GET", chatPath(showID, "/chats"), fanTok, nil).Expect(t, http.StatusOK).JSON(t)
		if n := len(list["chats"].([]any)); n != 1 {
			t.Errorf("history while the chat is off: %d messages, want 1", n)
		}
		// A private show's event carries no show details, but the switch.
		put(map[string]any{"private": true, "chat_enabled": true})
		if ev := room.await("show.updated", updated); ev["show"] != nil || ev["chat_enabled"] != true {
			t.Fatalf("private show event: %v", ev)
		}
		env.Do("POST", chatPath(showID, "/chats"), ownerTok, map[string]any{"message": "back on"}).Expect(t, http.StatusCreated)
		if ev := room.await("chat.created", nil); ev["chat"].(map[string]any)["message"] != "back on" {
			t.Errorf("room got %v", ev)
		}
	})
}
