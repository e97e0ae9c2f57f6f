package chat_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/chat"
)

// TestAnonymousViewersKeepTheirOwnIDs: the anonymous viewer id comes from
// a cookie, which Fiber lends out of a buffer it reuses for the next
// request. Viewers joining one after another, with other requests carrying
// other cookies in between, must each stay known by their own id (the one
// their cookie has in this room) in the room's list and in the presence
// events: nobody is shown under another viewer's id.
func TestAnonymousViewersKeepTheirOwnIDs(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{})
	mod, ok := onairtest.Module[*chat.Module](env)
	if !ok {
		t.Fatal("no chat module")
	}
	_, tok := env.CreateUser("Ana Host")
	showID := onairtest.CreateShow(t, env, tok, nil).ID
	host := dial(t, env.URL, showID, tok, "")

	// Viewers come and go one after another; after each leaves, requests
	// with other cookie values of the same length reuse the buffers the
	// viewer's cookie was read from, while the room still announces the
	// departure.
	const viewers = 8
	ids := make([]string, viewers)
	for i := range ids {
		cookie := chat.IssueViewerCookie(mod)
		ids[i] = chat.RoomViewerID(mod, cookie, showID)
		s := dial(t, env.URL, showID, "", cookie)
		if s.cookie != cookie {
			t.Fatalf("the server replaced the cookie it issued")
		}
		roomHas(t, env, tok, showID, ids[i])
		s.conn.Close()
		for j := 0; j < 8; j++ {
			env.DoWith("GET", fmt.Sprintf("/ws/shows/%d", showID), "", nil,
				http.Header{"Cookie": {"onair_viewer=" + chat.IssueViewerCookie(mod)}})
		}
	}

	// The host hears every viewer join and leave under the id that
	// viewer's own cookie carried, with the name made from it, and no
	// other id.
	joined, left := map[string]bool{}, map[string]bool{}
	for len(left) < viewers {
		ev := host.await("presence", nil)
		for key, set := range map[string]map[string]bool{"joined": joined, "left": left} {
			list, _ := ev[key].([]any)
			for _, e := range list {
				entry := e.(map[string]any)
				id, _ := entry["id"].(string)
				if entry["user_id"] != nil {
					continue
				}
				if !contains(ids, id) {
					t.Fatalf("presence event names a viewer id %q that no viewer has (event %v)", id, ev)
				}
				if name := entry["name"]; name != "Guest "+id[:4] {
					t.Errorf("viewer %s is named %v", id, name)
				}
				set[id] = true
			}
		}
	}
	if len(joined) != viewers {
		t.Errorf("joined %v, want all %d viewers", joined, viewers)
	}
	roomNames(t, env, tok, showID, []string{"Ana Host"})
}

// roomHas polls chat_users until it lists the anonymous viewer id.
func roomHas(t *testing.T, env *onairtest.Env, token string, showID int64, id string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		body := env.Do("GET", fmt.Sprintf("/v1/shows/%d/chat_users", showID), token, nil).Expect(t, http.StatusOK).JSON(t)
		for _, e := range body["chat_users"].([]any) {
			if e.(map[string]any)["id"] == id {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("chat_users never listed %s: %v", id, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
