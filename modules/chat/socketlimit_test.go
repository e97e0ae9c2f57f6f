package chat_test

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
)

// TestSocketMessageLimits: a chat socket inflates nothing and reads
// little. A client that offers permessage-deflate gets no compression
// (so no frame can expand on the server), a frame that claims compression
// anyway closes the socket, and so does a message over 4 KB (1009).
func TestSocketMessageLimits(t *testing.T) {
	t.Parallel()
	env := onairtest.New(t, onairtest.Options{})
	_, token := env.CreateUser("Frame Sender")
	showID := onairtest.CreateShow(t, env, token, nil).ID
	target := fmt.Sprintf("ws%s/v1/shows/%d/chat/socket", strings.TrimPrefix(env.URL, "http"), showID)
	open := func(t *testing.T) *websocket.Conn {
		t.Helper()
		d := websocket.Dialer{EnableCompression: true, HandshakeTimeout: testload.Patience}
		conn, resp, err := d.Dial(target, http.Header{"Authorization": {"Bearer " + token}})
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		if ext := resp.Header.Get("Sec-WebSocket-Extensions"); ext != "" {
			t.Errorf("the server negotiated %q, want no compression", ext)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	}
	// closed reads until the server closes the socket and answers why.
	closed := func(t *testing.T, conn *websocket.Conn) error {
		t.Helper()
		conn.SetReadDeadline(time.Now().Add(testload.Patience))
		for {
			if _, _, err := conn.ReadMessage(); err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					t.Fatal("the server kept the socket open")
				}
				return err
			}
		}
	}

	t.Run("a message over 4 KB", func(t *testing.T) {
		conn := open(t)
		// Just over the limit, so the whole frame fits the socket's
		// buffers: the server closes as soon as it reads the header, and
		// a larger write could meet that close halfway (a reset).
		if err := conn.WriteMessage(websocket.TextMessage, bytes.Repeat([]byte("a"), 4<<10+1)); err != nil &&
			!errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE) {
			t.Fatal(err)
		}
		err := closed(t, conn)
		var ce *websocket.CloseError
		if errors.As(err, &ce) && ce.Code != websocket.CloseMessageTooBig {
			t.Fatalf("closed with %v, want 1009 (message too big)", err)
		}
	})

	t.Run("a frame that claims compression", func(t *testing.T) {
		conn := open(t)
		// A final text frame with RSV1 set, masked (client to server),
		// its payload a deflate stream: what permessage-deflate would send.
		payload := []byte{0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00}
		frame := []byte{0xc1, 0x80 | byte(len(payload)), 1, 2, 3, 4}
		for i, b := range payload {
			frame = append(frame, b^[]byte{1, 2, 3, 4}[i%4])
		}
		if _, err := conn.UnderlyingConn().Write(frame); err != nil {
			t.Fatal(err)
		}
		err := closed(t, conn)
		var ce *websocket.CloseError
		if errors.As(err, &ce) && ce.Code != websocket.CloseProtocolError {
			t.Fatalf("closed with %v, want 1002 (protocol error)", err)
		}
	})
}
