package chat_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/chat"
)

// TestPostWhileCrowdStalled: a crowd of sockets stops reading until each
// has writes waiting for it (its kernel buffers full); a POST to the room
// then answers 201 and a viewer that reads gets the message, while the
// crowd's writes still wait: neither the request nor the room's other
// sockets wait for them. On one node, and through Redis when
// ONAIR_TEST_REDIS_URL is set.
func TestPostWhileCrowdStalled(t *testing.T) {
	t.Run("local", func(t *testing.T) { postWhileCrowdStalled(t, onairtest.Options{}) })
	t.Run("redis", func(t *testing.T) {
		if os.Getenv(onairtest.RedisEnv) == "" {
			testload.Skip(t, "needs %s (the README's test command sets it)", onairtest.RedisEnv)
		}
		postWhileCrowdStalled(t, onairtest.Options{Redis: true})
	})
}

func postWhileCrowdStalled(t *testing.T, opts onairtest.Options) {
	const crowd = 300 // more than one fan-out worker's stretch of sockets
	opts.Configure = func(c *app.Config) { c.Set(chat.SettingMaxSocketsPerIP, crowd+8) }
	env := onairtest.New(t, opts)
	mod, ok := onairtest.Module[*chat.Module](env)
	if !ok {
		t.Fatal("no chat module")
	}
	// The stalled writes outlast the test (10 s by default).
	chat.SetWriteWait(mod, testload.Patience)
	_, hostTok := env.CreateUser("Crowd Host")
	showID := onairtest.CreateShow(t, env, hostTok, nil).ID
	_, fanTok := env.CreateUser("Crowd Fan")

	d := websocket.Dialer{NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			err = c.(*net.TCPConn).SetReadBuffer(4 << 10)
		}
		return c, err
	}}
	target := fmt.Sprintf("ws%s/ws/shows/%d", strings.TrimPrefix(env.URL, "http"), showID)
	for i := range crowd {
		c, _, err := d.Dial(target, http.Header{"Cookie": {fmt.Sprintf("onair_viewer=00000000-0000-4000-8000-%012d", i)}})
		if err != nil {
			t.Fatalf("socket %d: %v", i, err)
		}
		defer c.Close() // never read
	}
	fast := dial(t, env.URL, showID, "", "")
	testload.Poll(t, "the crowd in the room", func() error {
		if n := mod.Hub().Sockets(); n != crowd+1 {
			return fmt.Errorf("%d sockets", n)
		}
		return nil
	})

	// Events of 16 KB until every socket of the crowd is behind (a few
	// fill its 4 KB receive buffer and a send buffer of 16 KB).
	if n := chat.ShrinkSendBuffers(mod, 16<<10); n != crowd+1 {
		t.Fatalf("%d of %d sockets written by the fan-out workers", n, crowd+1)
	}
	for id := 1; chat.Behind(mod) < crowd; id++ {
		if id > chat.ClientQueue/2 {
			t.Fatalf("%d events published and only %d of %d sockets are behind", id, chat.Behind(mod), crowd)
		}
		ev := chat.Event{Type: chat.EventChatCreated, Chat: &chat.View{ID: int64(-id), Message: strings.Repeat("x", 16<<10)}}
		mod.Hub().Publish(context.Background(), showID, ev)
		fast.await("chat.created", func(ev map[string]any) bool { return onairtest.ID(ev["chat"].(map[string]any)) == int64(-id) })
	}

	r := env.Do("POST", chatPath(showID, "/chats"), fanTok, map[string]any{"message": "heard over a stalled crowd"}).Expect(t, http.StatusCreated)
	id := onairtest.ID(r.JSON(t)["chat"].(map[string]any))
	fast.await("chat.created", func(ev map[string]any) bool { return onairtest.ID(ev["chat"].(map[string]any)) == id })
	if n := chat.Behind(mod); n != crowd {
		t.Errorf("%d sockets behind after the POST, want the crowd's %d (none dropped, none caught up)", n, crowd)
	}
	if n := mod.Hub().Sockets(); n != crowd+1 {
		t.Errorf("%d sockets in the room, want %d", n, crowd+1)
	}
}

// TestPingAndCloseAnswered: a client's ping is answered with a pong
// carrying its payload, and its close frame with the same close code,
// both written by the room's own writers (the library writes nothing
// itself, so nothing can land inside a frame half written).
func TestPingAndCloseAnswered(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{})
	_, tok := env.CreateUser("Ping Host")
	showID := onairtest.CreateShow(t, env, tok, nil).ID
	conn, _, err := websocket.DefaultDialer.Dial(fmt.Sprintf("ws%s/ws/shows/%d", strings.TrimPrefix(env.URL, "http"), showID),
		http.Header{"Cookie": {"onair_viewer=00000000-0000-4000-8000-0000000000aa"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	pong := make(chan string, 1)
	conn.SetPongHandler(func(data string) error { pong <- data; return nil })
	conn.SetReadDeadline(time.Now().Add(testload.Patience))
	if err := conn.WriteControl(websocket.PingMessage, []byte("are you there"), time.Now().Add(testload.Patience)); err != nil {
		t.Fatal(err)
	}
	for len(pong) == 0 {
		if _, _, err := conn.ReadMessage(); err != nil {
			t.Fatalf("no pong before %v", err)
		}
	}
	if got := <-pong; got != "are you there" {
		t.Errorf("pong %q", got)
	}
	if err := conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "bye"), time.Now().Add(testload.Patience)); err != nil {
		t.Fatal(err)
	}
	for {
		_, _, err := conn.ReadMessage()
		if err == nil {
			continue
		}
		var ce *websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != websocket.CloseNormalClosure {
			t.Fatalf("the socket ended with %v, want the close code %d echoed", err, websocket.CloseNormalClosure)
		}
		break
	}
}
