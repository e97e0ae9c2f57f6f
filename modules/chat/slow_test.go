package chat_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/chat"
)

// TestSlowViewerDropped: a viewer whose client stops reading falls behind
// while another keeps receiving every event at its own pace; once more
// than chat.ClientQueue buffers or chat.ClientQueueBytes wait for it, the
// room drops it: it reads
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
	showID := onairtest.CreateShow(t, env, tok, nil).ID
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
		fast.await("chat.created", func(ev map[string]any) bool { return onairtest.ID(ev["chat"].(map[string]any)) == int64(id) })
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
	// The frame that overflowed its queue, and what waited with it, were
	// never written to it.
	if next-1 >= published-1 {
		t.Errorf("the dropped socket got %d of %d events: what waited for it was not discarded", next-1, published)
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

// TestStoppedReadersMemoryBounded: real clients that stop reading while
// their room is flooded with 32 MiB of large events are each dropped and
// closed with 4008 ("too slow"), and hold a bounded share of the server's
// memory meanwhile: no socket is ever more than chat.ClientQueueBytes
// behind, and the server's live heap grows by about that much for all of
// them together (they hold the room's shared frames), not by what was
// sent.
func TestStoppedReadersMemoryBounded(t *testing.T) {
	const stopped = 8
	env := onairtest.New(t, onairtest.Options{})
	mod, ok := onairtest.Module[*chat.Module](env)
	if !ok {
		t.Fatal("no chat module")
	}
	chat.SetWriteWait(mod, testload.Patience)
	_, tok := env.CreateUser("Flood Host")
	showID := onairtest.CreateShow(t, env, tok, nil).ID
	fast := dial(t, env.URL, showID, "", "")
	d := websocket.Dialer{NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			err = c.(*net.TCPConn).SetReadBuffer(64 << 10)
		}
		return c, err
	}}
	target := fmt.Sprintf("ws%s/ws/shows/%d", strings.TrimPrefix(env.URL, "http"), showID)
	var slow []*websocket.Conn
	for range stopped {
		c, _, err := d.Dial(target, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		slow = append(slow, c) // not read until it is dropped
	}
	testload.Poll(t, "every socket in the room", func() error {
		if n := mod.Hub().Sockets(); n != stopped+1 {
			return fmt.Errorf("%d sockets", n)
		}
		return nil
	})
	chat.ShrinkSendBuffers(mod, 64<<10)

	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	base := heap()
	var peak uint64
	mostBehind, sent := 0, 0
	const size = 60 << 10
	dropped := func() int { return strings.Count(env.Logs(), "dropping slow socket") }
	// The flood goes on after the drops: the dropped sockets, whose
	// clients still do not read, hold nothing more.
	const flood = 32 << 20
	for id := 1; dropped() < stopped || sent < flood; id++ {
		// Far more than the queues and the kernel's buffers hold.
		if sent > flood+64*chat.ClientQueueBytes {
			t.Fatalf("%d MiB sent and %d of %d sockets that stopped reading were dropped", sent>>20, dropped(), stopped)
		}
		ev := chat.Event{Type: chat.EventChatCreated, Chat: &chat.View{ID: int64(id), Message: strings.Repeat("x", size)}}
		mod.Hub().Publish(context.Background(), showID, ev)
		sent += size
		fast.await("chat.created", func(ev map[string]any) bool { return onairtest.ID(ev["chat"].(map[string]any)) == int64(id) })
		mostBehind = max(mostBehind, chat.MostBehind(mod))
		if id%8 == 0 {
			peak = max(peak, heap())
		}
	}
	grew := int64(peak) - int64(base)
	t.Logf("%d sockets stopped reading; %.1f MiB sent to the room; most bytes one socket was behind: %d KiB; live heap grew by at most %.1f MiB",
		stopped, float64(sent)/(1<<20), mostBehind>>10, float64(grew)/(1<<20))
	if mostBehind > chat.ClientQueueBytes {
		t.Errorf("a socket was %d bytes behind, over the bound of %d", mostBehind, chat.ClientQueueBytes)
	}
	// The frames queued (shared), each writer's joining buffer, the fast
	// reader's own decoding, and the collector's slack.
	if limit := int64(2*chat.ClientQueueBytes + stopped*(64<<10) + 8<<20); grew > limit {
		t.Errorf("the live heap grew by %d bytes with %d sockets that stopped reading, over %d", grew, stopped, limit)
	}
	for i, c := range slow {
		c.SetReadDeadline(time.Now().Add(testload.Patience))
		for {
			if _, _, err := c.ReadMessage(); err != nil {
				var ce *websocket.CloseError
				if !errors.As(err, &ce) || ce.Code != chat.CloseTooSlow {
					t.Errorf("socket %d that stopped reading ended with %v, want close %d", i, err, chat.CloseTooSlow)
				}
				break
			}
		}
	}
}

// TestSilentReaderClosedTooSlow: in a quiet room a client that stops
// reading never answers the server's pings; once it has been silent for
// the pong wait (60 s; 1 s here) the server drops it with 4008 ("too
// slow"), which the client reads after what was sent before.
func TestSilentReaderClosedTooSlow(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{})
	mod, ok := onairtest.Module[*chat.Module](env)
	if !ok {
		t.Fatal("no chat module")
	}
	chat.SetPongWait(mod, time.Second)
	_, tok := env.CreateUser("Quiet Host")
	showID := onairtest.CreateShow(t, env, tok, nil).ID
	conn, _, err := websocket.DefaultDialer.Dial(fmt.Sprintf("ws%s/ws/shows/%d", strings.TrimPrefix(env.URL, "http"), showID), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	testload.Poll(t, "the silent socket gone from the room", func() error {
		if n := mod.Hub().Sockets(); n != 0 {
			return fmt.Errorf("%d sockets", n)
		}
		return nil
	})
	conn.SetReadDeadline(time.Now().Add(testload.Patience))
	for {
		if _, _, err := conn.ReadMessage(); err != nil {
			var ce *websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != chat.CloseTooSlow {
				t.Fatalf("the silent socket ended with %v, want close %d", err, chat.CloseTooSlow)
			}
			return
		}
	}
}
