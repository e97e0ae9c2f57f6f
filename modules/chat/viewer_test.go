package chat_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/fasthttp/websocket"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
)

// TestViewerCookieChosenByClient: an anonymous viewer's identity is the
// server's to give. A web socket that brings an onair_viewer cookie the
// server did not issue (a bare UUID, a UUID with a made-up or another
// cookie's signature, upper case, garbage) gets a fresh cookie on its
// upgrade, and the value it chose shows up nowhere: not in chat_users, not
// in the room's presence events or messages, not in what the room stores
// (Redis's presence set, with ONAIR_TEST_REDIS_URL).
func TestViewerCookieChosenByClient(t *testing.T) {
	t.Run("local", func(t *testing.T) { viewerCookieChosenByClient(t, onairtest.Options{}) })
	t.Run("redis", func(t *testing.T) {
		if os.Getenv(onairtest.RedisEnv) == "" {
			testload.Skip(t, "needs %s (the README's test command sets it)", onairtest.RedisEnv)
		}
		viewerCookieChosenByClient(t, onairtest.Options{Redis: true})
	})
}

func viewerCookieChosenByClient(t *testing.T, opts onairtest.Options) {
	env := onairtest.New(t, opts)
	_, tok := env.CreateUser("Cookie Host")
	showID := onairtest.CreateShow(t, env, tok, nil).ID
	host := dial(t, env.URL, showID, tok, "")
	issued := dial(t, env.URL, showID, "", "") // a cookie the server gave out
	issued.conn.Close()
	issuedID, issuedSig, _ := strings.Cut(issued.cookie, ".")

	const chosen = "0badc0de-1111-4222-8333-444455556666"
	cases := map[string]string{
		"bare uuid":            chosen,
		"made-up signature":    chosen + ".AAAAAAAAAAAAAAAAAAAAAA",
		"another's signature":  chosen + "." + issuedSig,
		"upper case":           strings.ToUpper(chosen) + "." + issuedSig,
		"issued id, no sig":    issuedID,
		"issued id, wrong sig": issuedID + ".BBBBBBBBBBBBBBBBBBBBBB",
		"garbage":              "x" + chosen + "<script>",
	}
	for name, value := range cases {
		s := dial(t, env.URL, showID, "", value)
		if s.cookie == value || !strings.Contains(s.cookie, ".") {
			t.Errorf("%s: the upgrade kept the cookie %q (set %q)", name, value, s.cookie)
		}
		if strings.Contains(s.cookie, chosen) || strings.Contains(s.cookie, issuedID) {
			t.Errorf("%s: the fresh cookie %q reuses the chosen id", name, s.cookie)
		}
		id := roomAnonIDs(t, env, tok, showID, 1)[0]
		for _, bad := range []string{chosen, issuedID, strings.ToUpper(chosen)} {
			if strings.EqualFold(id, bad) {
				t.Errorf("%s: chat_users lists the viewer under the id %s of a cookie it did not issue", name, id)
			}
		}
		_, poster := env.CreateUser("Poster " + strings.ReplaceAll(name, "'", ""))
		env.Do("POST", fmt.Sprintf("/v1/shows/%d/chats", showID), poster, map[string]any{"message": "hello " + name}).Expect(t, http.StatusCreated)
		s.await("chat.created", nil)
		s.conn.Close()
		roomAnonIDs(t, env, tok, showID, 0)
	}

	// Everything the host heard (presence joins and leaves, messages, up
	// to the last viewer's leaving) and everything the API lists, as
	// text: neither chosen id anywhere.
	heard := strings.Builder{}
	for left := 0; left < len(cases)+1; { // the issued cookie's viewer too
		ev := host.await("", nil)
		b, _ := json.Marshal(ev)
		heard.Write(b)
		heard.WriteByte('\n')
		gone, _ := ev["left"].([]any)
		left += len(gone)
	}
	heard.Write(env.Do("GET", fmt.Sprintf("/v1/shows/%d/chats", showID), tok, nil).Expect(t, http.StatusOK).Body)
	for _, bad := range []string{chosen, issuedID} {
		if strings.Contains(strings.ToLower(heard.String()), bad) {
			t.Errorf("the room carried the cookie's id %s:\n%s", bad, heard.String())
		}
	}
	if env.Core.Redis != nil {
		dial(t, env.URL, showID, "", chosen)
		roomAnonIDs(t, env, tok, showID, 1)
		key := fmt.Sprintf("%schat:presence:%d", env.Core.Config.RedisPrefix, showID)
		members, err := env.Core.Redis.ZRange(context.Background(), key, 0, -1).Result()
		if err != nil || len(members) != 2 {
			t.Fatalf("presence set %s: %v %v", key, members, err)
		}
		if joined := strings.Join(members, " "); strings.Contains(joined, chosen) || strings.Contains(joined, issuedID) {
			t.Errorf("Redis keeps the cookie's id: %s", joined)
		}
	}
}

// TestViewerIDPerShow: one browser (one cookie the server issued) has a
// different id in each show's room, neither of them the cookie's, and the
// same id again when it comes back to a room, in chat_users and in the
// presence events alike.
func TestViewerIDPerShow(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{})
	_, tok := env.CreateUser("Two Rooms")
	showA := onairtest.CreateShow(t, env, tok, nil).ID
	showB := onairtest.CreateShow(t, env, tok, nil).ID
	hostA := dial(t, env.URL, showA, tok, "")

	a := dial(t, env.URL, showA, "", "")
	cookie := a.cookie
	cookieID, _, _ := strings.Cut(cookie, ".")
	idA := roomAnonIDs(t, env, tok, showA, 1)[0]
	joinedA := presenceID(t, hostA, "joined")
	b := dial(t, env.URL, showB, "", cookie)
	if b.cookie != cookie {
		t.Fatalf("the second room replaced the cookie the server issued (%q → %q)", cookie, b.cookie)
	}
	idB := roomAnonIDs(t, env, tok, showB, 1)[0]
	if idA == idB || idA == cookieID || idB == cookieID || joinedA != idA {
		t.Fatalf("cookie %s: id %s in show A (presence %s), %s in show B", cookieID, idA, joinedA, idB)
	}
	for _, id := range []string{idA, idB} {
		if !uuidV4.MatchString(id) {
			t.Errorf("id %q is not a UUID", id)
		}
	}

	a.conn.Close()
	if left := presenceID(t, hostA, "left"); left != idA {
		t.Errorf("show A's room heard %s leave, want %s", left, idA)
	}
	dial(t, env.URL, showA, "", cookie)
	if again := roomAnonIDs(t, env, tok, showA, 1)[0]; again != idA {
		t.Errorf("back in show A the viewer is %s, was %s", again, idA)
	}
	if joined := presenceID(t, hostA, "joined"); joined != idA {
		t.Errorf("show A's room heard %s come back, want %s", joined, idA)
	}
}

// TestViewerCookieAttributes: the cookie the upgrade sets is HttpOnly,
// SameSite=Lax, for the whole site, a year long, and Secure when the
// public URL is https.
func TestViewerCookieAttributes(t *testing.T) {
	for _, public := range []string{"", "https://onair.example"} {
		env := onairtest.New(t, onairtest.Options{Configure: func(c *app.Config) {
			if public != "" {
				c.PublicURL = public
			}
		}})
		_, tok := env.CreateUser("Attr Host")
		showID := onairtest.CreateShow(t, env, tok, nil).ID
		conn, resp, err := websocket.DefaultDialer.Dial(fmt.Sprintf("ws%s/ws/shows/%d", strings.TrimPrefix(env.URL, "http"), showID), nil)
		if err != nil {
			t.Fatal(err)
		}
		conn.Close()
		var set *http.Cookie
		for _, c := range resp.Cookies() {
			if c.Name == "onair_viewer" {
				set = c
			}
		}
		switch {
		case set == nil:
			t.Fatalf("%s: no onair_viewer cookie on the upgrade: %v", public, resp.Header)
		case !set.HttpOnly || set.SameSite != http.SameSiteLaxMode || set.Path != "/":
			t.Errorf("%s: cookie %s", public, set.Raw)
		case set.Secure != (public != ""):
			t.Errorf("%s: Secure is %v: %s", public, set.Secure, set.Raw)
		case set.Expires.IsZero():
			t.Errorf("%s: the cookie ends with the session: %s", public, set.Raw)
		}
	}
}

// roomAnonIDs polls chat_users until it lists want anonymous viewers (-1:
// any number) and returns their ids.
func roomAnonIDs(t *testing.T, env *onairtest.Env, token string, showID int64, want int) []string {
	t.Helper()
	var ids []string
	testload.Poll(t, fmt.Sprintf("%d anonymous viewers in chat_users", want), func() error {
		body := env.Do("GET", fmt.Sprintf("/v1/shows/%d/chat_users", showID), token, nil).Expect(t, http.StatusOK).JSON(t)
		ids = ids[:0]
		for _, e := range body["chat_users"].([]any) {
			if entry := e.(map[string]any); entry["registered"] == false {
				ids = append(ids, entry["id"].(string))
			}
		}
		if want >= 0 && len(ids) != want {
			return fmt.Errorf("ids %v", ids)
		}
		return nil
	})
	return ids
}

// presenceID waits for a presence event listing one anonymous viewer under
// key ("joined" or "left") and returns its id.
func presenceID(t *testing.T, s *socket, key string) string {
	t.Helper()
	var id string
	s.await("presence", func(ev map[string]any) bool {
		list, _ := ev[key].([]any)
		for _, e := range list {
			if entry := e.(map[string]any); entry["user_id"] == nil {
				id, _ = entry["id"].(string)
				return true
			}
		}
		return false
	})
	return id
}
