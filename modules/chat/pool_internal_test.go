package chat

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/onair/onair/internal/testload"
)

// readFrame reads one unmasked server frame: its first byte (FIN and
// opcode) and payload.
func readFrame(r *bufio.Reader) (byte, []byte, error) {
	var head [2]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return 0, nil, err
	}
	n := uint64(head[1] & 0x7f)
	switch n {
	case 126:
		var l [2]byte
		if _, err := io.ReadFull(r, l[:]); err != nil {
			return 0, nil, err
		}
		n = uint64(binary.BigEndian.Uint16(l[:]))
	case 127:
		var l [8]byte
		if _, err := io.ReadFull(r, l[:]); err != nil {
			return 0, nil, err
		}
		n = binary.BigEndian.Uint64(l[:])
	}
	payload := make([]byte, n)
	_, err := io.ReadFull(r, payload)
	return head[0], payload, err
}

// readEvents sends the n of each test event read from conn to got until
// conn ends.
func readEvents(conn io.Reader, got chan<- int) {
	br := bufio.NewReader(conn)
	for {
		_, payload, err := readFrame(br)
		if err != nil {
			return
		}
		if n, ok := eventNumber(payload); ok {
			got <- n
		}
	}
}

// fanOutFrames runs one flush of frames (a room's log holding only them)
// to sockets, as if none had been given a frame before.
func fanOutFrames(h *Hub, sockets []*client, frames []byte) {
	for _, c := range sockets {
		c.sent = 0
	}
	h.fanOut(&room{log: frames}, sockets, flushOp{})
}

// eventNumber is the n of a test event {"type":"chat.created","n":N,...}.
func eventNumber(payload []byte) (int, bool) {
	s, ok := strings.CutPrefix(string(payload), `{"type":"chat.created","n":`)
	if !ok {
		return 0, false
	}
	s, _, _ = strings.Cut(s, ",")
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// TestFanOutPoolSlowReader: a room large enough for several fan-out
// workers, written through real loopback sockets, where one client stops
// reading (small kernel buffers on both sides). Its socket falls behind
// and, once more than ClientQueue flushes wait for it, is dropped: it
// then reads the events that were written, whole and in order, and the
// close code 4008. Every other socket receives every event in order,
// before and after the drop.
func TestFanOutPoolSlowReader(t *testing.T) {
	const sockets = 3*fanStretch + 1
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	h := NewLocalHub(slog.New(slog.DiscardHandler))
	const showID = 1
	r := &room{clients: map[*client]struct{}{}, viewers: map[string]int{}}
	h.rooms[showID] = r

	type fastPeer struct{ got chan int }
	var fast []fastPeer
	var slowPeer net.Conn
	var slowClient *client
	for i := range sockets {
		peer, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer peer.Close()
		server, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		c := newClient(Viewer{AnonID: fmt.Sprint(i)}, nil, server, testload.Patience)
		if c.raw == nil {
			t.Fatal("a TCP socket is written through the library's path")
		}
		defer c.drop(nil)
		r.clients[c] = struct{}{}
		if i == sockets/2 {
			// Small buffers, so a few events fill them.
			server.(*net.TCPConn).SetWriteBuffer(4 << 10)
			peer.(*net.TCPConn).SetReadBuffer(4 << 10)
			slowPeer, slowClient = peer, c
			continue
		}
		p := fastPeer{got: make(chan int, 4*ClientQueue)}
		fast = append(fast, p)
		go func() {
			defer close(p.got)
			br := bufio.NewReader(peer)
			for {
				op, payload, err := readFrame(br)
				if err != nil || op != 0x81 {
					return
				}
				if n, ok := eventNumber(payload); ok {
					p.got <- n
				}
			}
		}()
	}

	padding := strings.Repeat("x", 1000)
	published := 0
	publish := func() {
		published++
		h.deliver(showID, fmt.Appendf(nil, `{"type":"chat.created","n":%d,"pad":%q}`, published, padding))
		for i, p := range fast {
			select {
			case n, ok := <-p.got:
				if !ok {
					t.Fatalf("socket %d closed at event %d", i, published)
				}
				if n != published {
					t.Fatalf("socket %d got event %d where %d was next", i, n, published)
				}
			case <-time.After(testload.Patience):
				t.Fatalf("socket %d did not get event %d", i, published)
			}
		}
	}
	ending := func() bool {
		slowClient.mu.Lock()
		defer slowClient.mu.Unlock()
		return slowClient.ending
	}
	for !ending() {
		if published > 20*ClientQueue {
			t.Fatalf("%d events published and the socket that stopped reading is still in the room", published)
		}
		publish()
	}
	dropped := published
	for range 3 {
		publish() // the room goes on
	}

	// The dropped socket reads what was written, in order, then 4008.
	br := bufio.NewReader(slowPeer)
	next := 1
	for {
		op, payload, err := readFrame(br)
		if err != nil {
			t.Fatalf("the dropped socket's stream ended after event %d without a close frame: %v", next-1, err)
		}
		if op == 0x88 {
			if code := binary.BigEndian.Uint16(payload); code != CloseTooSlow || string(payload[2:]) != "too slow" {
				t.Fatalf("close %d %q, want %d \"too slow\"", code, payload[2:], CloseTooSlow)
			}
			break
		}
		n, ok := eventNumber(payload)
		if !ok {
			t.Fatalf("a frame (op %#x) of %d bytes is no test event", op, len(payload))
		}
		if n != next {
			t.Fatalf("the dropped socket read event %d where %d was next", n, next)
		}
		next++
	}
	if next-1 > dropped-ClientQueue {
		t.Errorf("the dropped socket got %d of %d events: its queue was not bounded at %d", next-1, dropped, ClientQueue)
	}
	if _, err := slowPeer.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("after the close frame: %v, want the end of the connection", err)
	}
}

// TestCaughtUpSocketWrittenAgain: a socket that fell behind (its writer
// goroutine wrote with a deadline) and caught up is written by the
// fan-out workers again after that deadline has passed, not dropped by it.
func TestCaughtUpSocketWrittenAgain(t *testing.T) {
	const wait = time.Second
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	peer, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	h := NewLocalHub(slog.New(slog.DiscardHandler))
	c := newClient(Viewer{AnonID: "late"}, nil, server, wait)
	defer c.drop(nil)
	sockets := []*client{c}
	state := func() (behind, ending bool) {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.writing, c.ending
	}

	big := textFrame([]byte(`{"type":"chat.created","n":1,"pad":"` + strings.Repeat("x", 32<<20) + `"}`))
	fanOutFrames(h, sockets, big)
	if behind, _ := state(); !behind {
		t.Fatal("a 32 MB frame went whole into the kernel's buffers")
	}
	got := make(chan int, 2)
	go readEvents(peer, got)
	select {
	case n := <-got:
		if n != 1 {
			t.Fatalf("event %d", n)
		}
	case <-time.After(testload.Patience):
		b, e := state()
		t.Fatalf("the big event never arrived (behind %v, ending %v)", b, e)
	}
	testload.Poll(t, "the socket caught up", func() error {
		if behind, ending := state(); behind || ending {
			return fmt.Errorf("behind %v, ending %v", behind, ending)
		}
		return nil
	})
	<-time.After(wait) // the behind write's deadline passes

	fanOutFrames(h, sockets, textFrame([]byte(`{"type":"chat.created","n":2,"pad":""}`)))
	select {
	case n := <-got:
		if n != 2 {
			t.Fatalf("event %d", n)
		}
	case <-time.After(testload.Patience):
		b, e := state()
		t.Fatalf("the caught-up socket did not get the next event (behind %v, ending %v)", b, e)
	}
	if _, ending := state(); ending {
		t.Fatal("the caught-up socket was dropped")
	}
}
