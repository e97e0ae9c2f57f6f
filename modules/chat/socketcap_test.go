package chat_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/chat"
)

// tryDial opens a room socket like dial, but returns the refusal instead
// of failing the test.
func tryDial(base string, showID int64, token, anonID string) (*websocket.Conn, *http.Response, error) {
	wsBase := "ws" + strings.TrimPrefix(base, "http")
	h := http.Header{}
	target := fmt.Sprintf("%s/v1/shows/%d/chat/socket", wsBase, showID)
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	} else {
		target = fmt.Sprintf("%s/ws/shows/%d", wsBase, showID)
		h.Set("Cookie", "onair_viewer="+anonID)
	}
	return websocket.DefaultDialer.Dial(target, h)
}

// ONAIR_MAX_SOCKETS_PER_IP: one address holds that many chat sockets,
// /v1 and web ones alike; the next upgrade answers 429
// too_many_connections in the API's error shape and is counted in
// /metrics; once a socket closes, the address may open another.
func TestSocketsPerAddressCapped(t *testing.T) {
	const limit = 3
	env := onairtest.New(t, onairtest.Options{Configure: func(c *app.Config) { c.Set(chat.SettingMaxSocketsPerIP, limit) }})
	_, tok := env.CreateUser("Cap Host")
	showID := onairtest.CreateShow(t, env, tok, nil).ID
	first := dial(t, env.URL, showID, tok, "")
	for i := 1; i < limit; i++ {
		dial(t, env.URL, showID, "", "")
	}
	for _, token := range []string{"", tok} {
		conn, resp, err := tryDial(env.URL, showID, token, "00000000-0000-4000-8000-000000000099")
		if err == nil {
			conn.Close()
			t.Fatalf("socket %d over the cap opened", limit+1)
		}
		if resp == nil || resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("socket over the cap: %v %v", resp, err)
		}
		body, _ := io.ReadAll(resp.Body)
		var e struct {
			Error struct {
				Status int
				Code   string
			}
		}
		if json.Unmarshal(body, &e) != nil || e.Error.Code != "too_many_connections" || e.Error.Status != 429 || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("refusal %s %v", body, resp.Header)
		}
	}
	text := string(env.Do("GET", "/metrics", "", nil).Expect(t, http.StatusOK).Body)
	if !strings.Contains(text, "onair_chat_sockets_refused_total 2\n") {
		t.Fatalf("no refusals counted:\n%s", grep(text, "onair_chat_sockets"))
	}
	// Another address is not affected: other APIs keep working meanwhile.
	env.Do("GET", fmt.Sprintf("/v1/shows/%d/chat_users", showID), tok, nil).Expect(t, http.StatusOK)

	first.conn.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		conn, _, err := tryDial(env.URL, showID, tok, "")
		if err == nil {
			conn.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no socket after one closed: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Behind a trusted proxy (whose own connections are not capped per
// address), each chat socket also takes a place of the client the proxy
// forwards under ONAIR_MAX_CONNS_PER_IP, for as long as it is open: the
// socket over it is refused with 429 too_many_connections, another
// client's is not, and a closed socket gives its place back.
func TestSocketsCountPerClientBehindProxy(t *testing.T) {
	const limit = 2
	_, loopback, _ := net.ParseCIDR("127.0.0.0/8")
	env := onairtest.New(t, onairtest.Options{Configure: func(c *app.Config) {
		c.MaxConnsPerIP = limit
		c.TrustedProxies = []*net.IPNet{loopback}
	}})
	_, tok := env.CreateUser("Proxy Host")
	showID := onairtest.CreateShow(t, env, tok, nil).ID
	target := fmt.Sprintf("ws%s/ws/shows/%d", strings.TrimPrefix(env.URL, "http"), showID)
	open := func(from string) (*websocket.Conn, *http.Response, error) {
		return websocket.DefaultDialer.Dial(target, http.Header{"X-Forwarded-For": {from}})
	}
	const a, b = "203.0.113.7", "198.51.100.9"
	var held []*websocket.Conn
	for i := range limit {
		conn, _, err := open(a)
		if err != nil {
			t.Fatalf("socket %d of %d from one client: %v", i+1, limit, err)
		}
		defer conn.Close()
		held = append(held, conn)
	}
	conn, resp, err := open(a)
	if err == nil {
		conn.Close()
		t.Fatalf("socket %d from one client opened", limit+1)
	}
	var e struct {
		Error struct{ Code, Message string }
	}
	if resp == nil || resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" ||
		json.NewDecoder(resp.Body).Decode(&e) != nil || e.Error.Code != "too_many_connections" ||
		e.Error.Message != fmt.Sprintf("at most %d connections per client address", limit) {
		t.Fatalf("socket over the cap: %v %+v", resp, e)
	}
	other, _, err := open(b)
	if err != nil {
		t.Fatalf("another client's socket: %v", err)
	}
	other.Close()
	held[0].Close()
	testload.Poll(t, "a place for the client again", func() error {
		conn, _, err := open(a)
		if err != nil {
			return err
		}
		return conn.Close()
	})
}

// A chat socket lives far beyond ONAIR_REQUEST_TIMEOUT: the request
// deadline bounds the upgrade, not the socket.
func TestSocketOutlivesRequestTimeout(t *testing.T) {
	const timeout = 200 * time.Millisecond
	env := onairtest.New(t, onairtest.Options{Configure: func(c *app.Config) { c.RequestTimeout = timeout }})
	_, tok := env.CreateUser("Long Lived")
	showID := onairtest.CreateShow(t, env, tok, nil).ID
	s := dial(t, env.URL, showID, tok, "")
	time.Sleep(5 * timeout) // the point of the test: time passes beyond the deadline
	env.Do("POST", fmt.Sprintf("/v1/shows/%d/chats", showID), tok, map[string]any{"message": "still here"}).Expect(t, http.StatusCreated)
	if ev := s.await("chat.created", nil); ev["chat"].(map[string]any)["message"] != "still here" {
		t.Fatalf("got %v", ev)
	}
}

func grep(text, prefix string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
