package chat_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/fasthttp/websocket"

	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/chat"
)

// TestSlowViewerDropped: a viewer whose client stops reading falls behind
// while another keeps receiving every event at its own pace; once more
// than chat.ClientQueue buffers wait for it, the room drops it: it reads
// what was under way, in order and whole, then the close code 4008 ("too
// slow"); the other viewer keeps receiving. Events of 100 B, 1 KB and
// 70 KB cover the three lengths of a frame header. On one node, and with
// the events carried by Redis when ONAIR_TEST_REDIS_URL is set.
func TestSlowViewerDropped(t *testing.T) {
	t.Run("local", func(t *testing.T) { slowViewerDropped(t, onairtest.Options{}) })
	t.Run("redis", func(t *testing.T) {
		if os.Getenv(onairtest.RedisEnv) == "" {
			testload.Skip(t, "needs %s (the README's test command sets it)", onairtest.RedisEnv)
		}
		slowViewerDropped(t, onairtest.Options{Redis: true})
	})
}

func slowViewerDropped(t *testing.T, opts onairtest.Options) {
	env := onairtest.New(t, opts)
	mod, ok := onairtest.Module[*chat.Module](env)
	if !ok {
		t.Fatal("no chat module")
	}
	// The write under way when the viewer is dropped waits for it to read
	// again, however loaded the machine (10 s by default).
	chat.SetWriteWait(mod, testload.Patience)
	_, tok := env.CreateUser("Slow Host")
	showID := createShow(t, env, tok, nil)
	fast := dial(t, env.URL, showID, "", "")

	// The slow viewer's socket has a fixed receive buffer (no growth) and
	// is not read until it is dropped.
	d := websocket.Dialer{NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			err = c.(*net.TCPConn).SetReadBuffer(256 << 10) // above loopback's 64 KB segments
		}
		return c, err
	}}
	slow, _, err := d.Dial(fmt.Sprintf("ws%s/ws/shows/%d", strings.TrimPrefix(env.URL, "http"), showID),
		http.Header{"Cookie": {"onair_viewer=00000000-0000-4000-8000-000000000005"}})
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	testload.Poll(t, "two sockets in the room", func() error {
		if n := mod.Hub().Sockets(); n != 2 {
			return fmt.Errorf("%d sockets", n)
		}
		return nil
	})

	sizes := []int{100, 1000, 70_000}
	publish := func(id int) {
		ev := chat.Event{Type: chat.EventChatCreated, Chat: &chat.View{ID: int64(id), Message: strings.Repeat("x", sizes[id%len(sizes)])}}
		mod.Hub().Publish(context.Background(), showID, ev)
		fast.await("chat.created", func(ev map[string]any) bool { return ev["chat"].(map[string]any)["id"].(float64) == float64(id) })
	}
	published := 0
	for !strings.Contains(env.Logs(), "dropping slow socket") {
		// Bounds a hang: far more than the kernel's buffers and the queue.
		if published > 20*chat.ClientQueue {
			t.Fatalf("%d events published and the viewer that stopped reading is still in the room", published)
		}
		published++
		publish(published)
	}
	published++
	publish(published) // the room goes on

	// The dropped viewer reads the events that were written, in order,
	// then the close frame.
	next := 1
	for {
		_, data, err := slow.ReadMessage()
		if err != nil {
			var ce *websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != chat.CloseTooSlow || ce.Text != "too slow" {
				t.Fatalf("the dropped socket ended with %v, want close %d \"too slow\"", err, chat.CloseTooSlow)
			}
			break
		}
		var ev struct {
			Type string
			Chat struct {
				ID      int
				Message string
			}
		}
		if err := json.Unmarshal(data, &ev); err != nil {
			t.Fatalf("a frame of %d bytes is no event: %v", len(data), err)
		}
		if ev.Type != chat.EventChatCreated {
			continue // its greeting
		}
		if ev.Chat.ID != next || len(ev.Chat.Message) != sizes[next%len(sizes)] {
			t.Fatalf("event %d (%d bytes) where %d was next", ev.Chat.ID, len(ev.Chat.Message), next)
		}
		next++
	}
	if next-1 >= published-chat.ClientQueue {
		t.Errorf("the dropped socket got %d of %d events: the queue was not bounded at %d", next-1, published, chat.ClientQueue)
	}
	testload.Poll(t, "the slow socket gone from the room", func() error {
		if n := mod.Hub().Sockets(); n != 1 {
			return fmt.Errorf("%d sockets", n)
		}
		return nil
	})
	published++
	publish(published)
}
