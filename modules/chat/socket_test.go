package chat_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
)

// socket is a test client of a room.
type socket struct {
	t      *testing.T
	conn   *websocket.Conn
	events chan map[string]any
	// cookie is an anonymous socket's onair_viewer cookie: the one the
	// server set on the upgrade, or else the one sent.
	cookie string
}

// dial opens a room socket: with a Bearer token on the /v1 route, or as an
// anonymous viewer on the public route, sending the onair_viewer cookie
// when one is given.
func dial(t *testing.T, base string, showID int64, token, cookie string) *socket {
	t.Helper()
	wsBase := "ws" + strings.TrimPrefix(base, "http")
	h := http.Header{}
	target := fmt.Sprintf("%s/v1/shows/%d/chat/socket", wsBase, showID)
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	} else {
		target = fmt.Sprintf("%s/ws/shows/%d", wsBase, showID)
		if cookie != "" {
			h.Set("Cookie", "onair_viewer="+cookie)
		}
	}
	conn, resp, err := websocket.DefaultDialer.Dial(target, h)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("dial %s: %v (status %d)", target, err, status)
	}
	s := &socket{t: t, conn: conn, events: make(chan map[string]any, 256), cookie: cookie}
	if token == "" {
		if set := setViewerCookie(resp); set != "" {
			s.cookie = set
		}
	}
	go func() {
		defer close(s.events)
		for {
			_, data, err := conn.ReadMessage()
			if err != nil {
				return
			}
			var ev map[string]any
			if json.Unmarshal(data, &ev) == nil {
				s.events <- ev
			}
		}
	}()
	t.Cleanup(func() { conn.Close() })
	// The room greets a socket that joined with a presence event: from
	// then on it hears everything posted to the room.
	s.await("presence", nil)
	return s
}

var (
	guestName = regexp.MustCompile(`^Guest [0-9a-f]{4}$`)
	uuidV4    = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
)

// await returns the first event of the type ("": any) that matches (testload.Patience
// bounds a hang).
func (s *socket) await(typ string, match func(map[string]any) bool) map[string]any {
	s.t.Helper()
	deadline := time.After(testload.Patience)
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				s.t.Fatalf("socket closed while waiting for %s", typ)
			}
			if (typ == "" || ev["type"] == typ) && (match == nil || match(ev)) {
				return ev
			}
		case <-deadline:
			s.t.Fatalf("no %s event within %s", typ, testload.Patience)
			return nil
		}
	}
}

// setViewerCookie is the onair_viewer value a response sets ("" if none).
func setViewerCookie(resp *http.Response) string {
	if resp == nil {
		return ""
	}
	for _, c := range resp.Cookies() {
		if c.Name == "onair_viewer" {
			return c.Value
		}
	}
	return ""
}

// roomNames polls chat_users until it lists exactly want (sorted names);
// "Guest *" in want stands for any anonymous viewer's name.
func roomNames(t *testing.T, env *onairtest.Env, token string, showID int64, want []string) map[string]any {
	t.Helper()
	var body map[string]any
	testload.Poll(t, fmt.Sprintf("chat_users %v", want), func() error {
		body = env.Do("GET", fmt.Sprintf("/v1/shows/%d/chat_users", showID), token, nil).Expect(t, http.StatusOK).JSON(t)
		var names []string
		for _, e := range body["chat_users"].([]any) {
			name := e.(map[string]any)["name"].(string)
			if contains(want, "Guest *") && guestName.MatchString(name) {
				name = "Guest *"
			}
			names = append(names, name)
		}
		sort.Strings(names)
		if strings.Join(names, "|") != strings.Join(want, "|") || int(body["count"].(float64)) != len(want) {
			return fmt.Errorf("chat_users %v (count %v)", names, body["count"])
		}
		return nil
	})
	return body
}

func TestRoomSockets(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{})
	_, ownerTok := env.CreateUser("Rita Radio")
	_, fanTok := env.CreateUser("Sam Listener")
	showID := onairtest.CreateShow(t, env, ownerTok, nil).ID

	a := dial(t, env.URL, showID, ownerTok, "")
	b := dial(t, env.URL, showID, fanTok, "")
	b2 := dial(t, env.URL, showID, fanTok, "") // a second tab of the same user
	anon := dial(t, env.URL, showID, "", "")

	body := roomNames(t, env, fanTok, showID, []string{"Guest *", "Rita Radio", "Sam Listener"})
	var guest string
	for _, e := range body["chat_users"].([]any) {
		entry := e.(map[string]any)
		switch entry["registered"] {
		case true:
			if _, ok := entry["followers_count"]; !ok {
				t.Errorf("registered entry without followers_count: %v", entry)
			}
			if _, ok := entry["email"]; ok {
				t.Errorf("chat user shows an email: %v", entry)
			}
		case false:
			id, _ := entry["id"].(string)
			if !uuidV4.MatchString(id) || entry["name"] != "Guest "+id[:4] || len(entry) != 3 || strings.Contains(anon.cookie, id) {
				t.Errorf("anonymous entry %v (cookie %s)", entry, anon.cookie)
			}
			guest, _ = entry["name"].(string)
		default:
			t.Errorf("entry without registered: %v", entry)
		}
	}

	env.Do("POST", fmt.Sprintf("/v1/shows/%d/chats", showID), fanTok, map[string]any{"message": "hello room"}).Expect(t, http.StatusCreated)
	for name, s := range map[string]*socket{"owner": a, "fan": b, "fan tab 2": b2, "anonymous": anon} {
		ev := s.await("chat.created", nil)
		c := ev["chat"].(map[string]any)
		if c["message"] != "hello room" || c["user"].(map[string]any)["name"] != "Sam Listener" {
			t.Errorf("%s got %v", name, ev)
		}
	}

	// Closing one of two tabs keeps the viewer; closing the anonymous one
	// removes it, and the room hears who left.
	b2.conn.Close()
	anon.conn.Close()
	roomNames(t, env, fanTok, showID, []string{"Rita Radio", "Sam Listener"})
	left := a.await("presence", func(ev map[string]any) bool { return ev["left"] != nil })
	if gone := left["left"].([]any); len(gone) != 1 || gone[0].(map[string]any)["name"] != guest || left["count"].(float64) != 2 {
		t.Errorf("left event %v", left)
	}

	// A socket needs a token on /v1, and a visible show.
	if _, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(env.URL, "http")+fmt.Sprintf("/v1/shows/%d/chat/socket", showID), nil); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("socket without a token was not refused with 401")
	}
	private := onairtest.CreateShow(t, env, ownerTok, map[string]any{"private": true}).ID
	h := http.Header{"Authorization": {"Bearer " + fanTok}}
	if _, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(env.URL, "http")+fmt.Sprintf("/v1/shows/%d/chat/socket", private), h); err == nil || resp == nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("socket to another user's private show was not refused with 404")
	}
}

// TestCrowdArrives: hundreds of viewers joining at once get coalesced
// presence events and none is dropped as a slow socket; a message then
// reaches every one of them.
func TestCrowdArrives(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{})
	_, tok := env.CreateUser("Crowd Host")
	showID := onairtest.CreateShow(t, env, tok, nil).ID
	const crowd = 300
	sockets := make([]*socket, crowd)
	for i := range sockets {
		sockets[i] = dial(t, env.URL, showID, "", "")
	}
	roomCount := func() int {
		body := env.Do("GET", fmt.Sprintf("/v1/shows/%d/chat_users", showID), tok, nil).Expect(t, http.StatusOK).JSON(t)
		return int(body["count"].(float64))
	}
	testload.Poll(t, fmt.Sprintf("chat_users counting %d", crowd), func() error {
		if n := roomCount(); n != crowd {
			return fmt.Errorf("chat_users counts %d", n)
		}
		return nil
	})
	// The first viewer hears the whole crowd in a few coalesced events.
	sockets[0].await("presence", func(ev map[string]any) bool { return ev["count"].(float64) == crowd })
	env.Do("POST", fmt.Sprintf("/v1/shows/%d/chats", showID), tok, map[string]any{"message": "welcome all"}).Expect(t, http.StatusCreated)
	for i, s := range sockets {
		if ev := s.await("chat.created", nil); ev["chat"].(map[string]any)["message"] != "welcome all" {
			t.Fatalf("socket %d got %v", i, ev)
		}
	}
	if strings.Contains(env.Logs(), "dropping slow socket") {
		t.Error("the server dropped sockets of an arriving crowd")
	}
}

// TestRoomFollowsVisibility: an anonymous socket cannot open a private or
// off show's room, and when a show goes private (or off, or away) every
// socket that may no longer see it is dropped; its owner stays.
func TestRoomFollowsVisibility(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{})
	_, ownerTok := env.CreateUser("Vis Owner")
	_, fanTok := env.CreateUser("Vis Fan")
	wsURL := "ws" + strings.TrimPrefix(env.URL, "http")

	private := onairtest.CreateShow(t, env, ownerTok, map[string]any{"private": true}).ID
	if _, resp, err := websocket.DefaultDialer.Dial(fmt.Sprintf("%s/ws/shows/%d", wsURL, private), nil); err == nil || resp == nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("an anonymous socket opened another user's private show")
	}

	showID := onairtest.CreateShow(t, env, ownerTok, nil).ID
	owner := dial(t, env.URL, showID, ownerTok, "")
	fan := dial(t, env.URL, showID, fanTok, "")
	anon := dial(t, env.URL, showID, "", "")
	roomNames(t, env, ownerTok, showID, []string{"Guest *", "Vis Fan", "Vis Owner"})

	env.Do("PUT", fmt.Sprintf("/v1/shows/%d", showID), ownerTok, map[string]any{"private": true}).Expect(t, http.StatusOK)
	// The update's event (the show's "created" one, delivered after its
	// commit, may reach the socket first).
	ev := owner.await("show.updated", func(ev map[string]any) bool { return ev["state"] == "updated" })
	if ev["show"] != nil {
		t.Errorf("a private show's details went to the room: %v", ev["show"])
	}
	for name, s := range map[string]*socket{"fan": fan, "anonymous": anon} {
		select {
		case <-drain(s):
		case <-time.After(testload.Patience):
			t.Errorf("%s socket still open %s after the show went private", name, testload.Patience)
		}
	}
	env.Do("POST", fmt.Sprintf("/v1/shows/%d/chats", showID), ownerTok, map[string]any{"message": "just us"}).Expect(t, http.StatusCreated)
	if ev := owner.await("chat.created", nil); ev["chat"].(map[string]any)["message"] != "just us" {
		t.Errorf("owner got %v", ev)
	}
}

// drain discards a socket's events and reports (by closing) when it ends.
func drain(s *socket) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		for range s.events {
		}
		close(done)
	}()
	return done
}

// TestWebSocketOrigin: the cookie-authenticated web socket opens only from
// this site's pages.
func TestWebSocketOrigin(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{})
	_, tok := env.CreateUser("Origin Owner")
	showID := onairtest.CreateShow(t, env, tok, nil).ID
	target := fmt.Sprintf("ws%s/ws/shows/%d", strings.TrimPrefix(env.URL, "http"), showID)
	for origin, want := range map[string]int{"https://evil.example": http.StatusForbidden, env.URL: http.StatusSwitchingProtocols} {
		conn, resp, err := websocket.DefaultDialer.Dial(target, http.Header{"Origin": {origin}})
		if conn != nil {
			conn.Close()
		}
		if resp == nil || resp.StatusCode != want {
			t.Errorf("origin %s: %v (err %v), want %d", origin, resp, err, want)
		}
	}
}
