package rtmp

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// dialFrom is dialClient from a chosen loopback address (127.0.0.0/8 is
// all loopback on Linux), so tests can play several client addresses.
func dialFrom(t *testing.T, addr, local string) *testClient {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	br := bufio.NewReader(nc)
	bw := bufio.NewWriter(nc)
	if err := clientHandshake(br, bw); err != nil {
		t.Fatalf("handshake from %s: %v", local, err)
	}
	return &testClient{t: t, nc: nc, cr: NewChunkReader(br, Limits{}), cw: NewChunkWriter(bw), bw: bw}
}

// idleSocket opens a TCP connection that never sends a byte.
func idleSocket(t *testing.T, addr, local string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return nc
}

// closedWithin reports whether the server closes nc within d.
func closedWithin(nc net.Conn, d time.Duration) bool {
	nc.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, nc)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

// publishStatus runs connect, createStream and publish and returns the
// onStatus object the server answers with.
func (c *testClient) publishStatus(key string) map[string]any {
	c.t.Helper()
	c.call(0, "connect", 1, map[string]any{"app": "live", "tcUrl": "rtmp://127.0.0.1/live"})
	if vals, err := c.expect("_result"); err != nil || statusCode(vals) != "NetConnection.Connect.Success" {
		c.t.Fatalf("connect: %v %v", vals, err)
	}
	c.call(0, "createStream", 2, nil)
	if _, err := c.expect("_result"); err != nil {
		c.t.Fatalf("createStream: %v", err)
	}
	c.call(1, "publish", 3, nil, key, "live")
	vals, err := c.expect("onStatus")
	if err != nil || len(vals) < 4 {
		c.t.Fatalf("publish: %v %v", vals, err)
	}
	m, _ := vals[3].(map[string]any)
	return m
}

// countingHandler is testHandler counting its calls.
type countingHandler struct {
	testHandler
	mu    sync.Mutex
	calls int
}

func (h *countingHandler) Publish(ctx context.Context, req PublishRequest) (Sink, error) {
	h.mu.Lock()
	h.calls++
	h.mu.Unlock()
	return h.testHandler.Publish(ctx, req)
}

func (h *countingHandler) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls
}

// A connection that does not publish within the admission deadline is
// closed and its slot is free again; the deadline covers the handshake,
// connect and publish alike.
func TestAdmissionDeadlineFreesSlot(t *testing.T) {
	h := &testHandler{}
	s, addr := startServer(t, h, func(s *Server) {
		s.AdmissionTimeout = time.Second
		s.MaxConnections = 1
	})
	start := time.Now()
	idle := idleSocket(t, addr, "127.0.0.1")
	if !closedWithin(idle, 15*time.Second) {
		t.Fatal("an idle socket is still open 15 s after a 1 s admission deadline")
	}
	if el := time.Since(start); el < 900*time.Millisecond {
		t.Fatalf("idle socket closed after %v, before the deadline", el)
	}
	// Connected but never publishing: the same deadline.
	c := dialClient(t, addr)
	c.call(0, "connect", 1, map[string]any{"app": "live"})
	if _, err := c.expect("_result"); err != nil {
		t.Fatal(err)
	}
	if !closedWithin(c.nc, 15*time.Second) {
		t.Fatal("a connection that never publishes is still open 15 s after the deadline")
	}
	st := s.Stats()
	if st.TimedOut != 2 || st.Evicted != 0 {
		t.Fatalf("stats %+v, want 2 timed out and none evicted", st)
	}
	// The slot is free: with MaxConnections 1 a publisher gets in, without
	// evicting anybody, and keeps publishing past the deadline.
	p := dialClient(t, addr)
	if code := p.publish("live", "good"); code != "NetStream.Publish.Start" {
		t.Fatal(code)
	}
	_, sink := h.last()
	deadline := time.Now().Add(2 * time.Second)
	for i := uint32(0); time.Now().Before(deadline); i++ {
		p.media(TypeAudio, i*23, []byte{0xAF, 1, 2})
		time.Sleep(50 * time.Millisecond)
	}
	select {
	case err := <-sink.closed:
		t.Fatalf("publisher cut off by the admission deadline: %v", err)
	default:
	}
	if st := s.Stats(); st.Evicted != 0 || st.TimedOut != 2 {
		t.Fatalf("stats %+v", st)
	}
}

// 300 idle sockets from one address cannot keep a publisher from that
// address (nor from another) out: each newcomer drops the oldest pending
// connection of its address.
func TestIdleSocketsDoNotLockOut(t *testing.T) {
	h := &testHandler{}
	s, addr := startServer(t, h, func(s *Server) { s.AdmissionTimeout = time.Minute })
	for range 300 {
		idleSocket(t, addr, "127.0.0.1")
	}
	for _, local := range []string{"127.0.0.1", "127.0.0.2"} {
		c := dialFrom(t, addr, local)
		if code := c.publish("live", "good"); code != "NetStream.Publish.Start" {
			t.Fatalf("publisher from %s behind 300 idle sockets: %s", local, code)
		}
	}
	st := s.Stats()
	if st.Evicted < 300-DefaultMaxPendingPerAddr || st.RefusedFull != 0 {
		t.Fatalf("stats %+v", st)
	}
	// What the server holds is bounded by the per-address pool, not by
	// how many sockets were opened.
	deadline := time.Now().Add(15 * time.Second)
	for s.Conns() > DefaultMaxPendingPerAddr+2 {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections still held", s.Conns())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// An authenticated publisher is never dropped to admit anyone; when every
// slot holds a publisher, newcomers are closed at once.
func TestPublisherNeverEvicted(t *testing.T) {
	h := &testHandler{}
	s, addr := startServer(t, h, func(s *Server) {
		s.AdmissionTimeout = time.Minute
		s.MaxConnections = 3
		s.MaxPending = 2
	})
	p1 := dialFrom(t, addr, "127.0.0.1")
	if code := p1.publish("live", "good"); code != "NetStream.Publish.Start" {
		t.Fatal(code)
	}
	_, sink1 := h.last()
	for i := range 50 {
		idleSocket(t, addr, []string{"127.0.0.1", "127.0.0.5", "127.0.0.6"}[i%3])
	}
	p2 := dialFrom(t, addr, "127.0.0.2")
	if code := p2.publish("live", "good"); code != "NetStream.Publish.Start" {
		t.Fatal(code)
	}
	p3 := dialFrom(t, addr, "127.0.0.3")
	if code := p3.publish("live", "good"); code != "NetStream.Publish.Start" {
		t.Fatal(code)
	}
	// Three publishers hold the three slots: a newcomer is closed at once.
	late := idleSocket(t, addr, "127.0.0.4")
	if !closedWithin(late, 10*time.Second) {
		t.Fatal("a connection beyond MaxConnections of publishers was kept")
	}
	if st := s.Stats(); st.RefusedFull != 1 || st.Evicted < 48 {
		t.Fatalf("stats %+v", st)
	}
	p1.media(TypeAudio, 0, []byte{0xAF, 1, 2})
	p1.call(0, "sync", 9, nil)
	if _, err := p1.expect("_error"); err != nil {
		t.Fatalf("the first publisher was cut off: %v", err)
	}
	sink1.mu.Lock()
	n := len(sink1.audio)
	sink1.mu.Unlock()
	if n != 1 {
		t.Fatalf("first publisher's sink got %d audio messages", n)
	}
}

// A stream key refused three times from one address is refused there
// without asking the handler until the window passes; other keys and
// other addresses are not affected.
func TestKeyThrottle(t *testing.T) {
	h := &countingHandler{}
	s, addr := startServer(t, h, func(s *Server) { s.KeyThrottle = 2 * time.Second })
	for i := range 3 {
		st := dialFrom(t, addr, "127.0.0.1").publishStatus("bad")
		if st["code"] != "NetStream.Publish.Unauthorized" || h.count() != i+1 {
			t.Fatalf("attempt %d: %v, handler called %d times", i+1, st, h.count())
		}
	}
	st := dialFrom(t, addr, "127.0.0.1").publishStatus("bad")
	desc, _ := st["description"].(string)
	if st["code"] != "NetStream.Publish.Unauthorized" || !strings.Contains(desc, "Too many refused attempts") {
		t.Fatalf("throttled attempt: %v", st)
	}
	if h.count() != 3 || s.Stats().Throttled != 1 {
		t.Fatalf("throttled attempt asked the handler (%d calls), stats %+v", h.count(), s.Stats())
	}
	if st := dialFrom(t, addr, "127.0.0.2").publishStatus("bad"); st["code"] != "NetStream.Publish.Unauthorized" || h.count() != 4 {
		t.Fatalf("another address: %v, %d calls", st, h.count())
	}
	if code := dialFrom(t, addr, "127.0.0.1").publish("live", "good"); code != "NetStream.Publish.Start" {
		t.Fatalf("another key from the throttled address: %s", code)
	}
	// Once the window has passed, the key is checked again.
	deadline := time.Now().Add(30 * time.Second)
	for h.count() < 6 {
		if time.Now().After(deadline) {
			t.Fatal("key still throttled 30 s after a 2 s window")
		}
		dialFrom(t, addr, "127.0.0.1").publishStatus("bad")
		time.Sleep(200 * time.Millisecond)
	}
}

// An address may hold MaxPublishersPerAddr publishers; one more is
// refused with a reason, other addresses are not affected, and the slot
// comes back when a publisher leaves.
func TestPublishersPerAddress(t *testing.T) {
	h := &testHandler{}
	s, addr := startServer(t, h, func(s *Server) { s.MaxPublishersPerAddr = 1 })
	first := dialFrom(t, addr, "127.0.0.1")
	if code := first.publish("live", "good"); code != "NetStream.Publish.Start" {
		t.Fatal(code)
	}
	st := dialFrom(t, addr, "127.0.0.1").publishStatus("good")
	if st["code"] != "NetStream.Publish.Rejected" || st["description"] != "Too many publishers from your address." {
		t.Fatalf("second publisher from one address: %v", st)
	}
	if code := dialFrom(t, addr, "127.0.0.2").publish("live", "good"); code != "NetStream.Publish.Start" {
		t.Fatalf("publisher from another address: %s", code)
	}
	if s.Stats().RefusedPublishers != 1 {
		t.Fatalf("stats %+v", s.Stats())
	}
	first.nc.Close()
	deadline := time.Now().Add(15 * time.Second)
	for {
		st := dialFrom(t, addr, "127.0.0.1").publishStatus("good")
		if st["code"] == "NetStream.Publish.Start" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("address still at its cap 15 s after its publisher left: %v", st)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// statusSink refuses the publication at its first video message.
type statusSink struct{ *recSink }

func (s statusSink) Video(int64, []byte) error {
	return &StatusError{Code: "NetStream.Publish.Rejected", Description: "Unsupported video codec.", Err: errors.New("codec 12")}
}

// A Sink's *StatusError reaches the client as an onStatus error before
// the connection closes, and its Close gets the error.
func TestSinkStatusError(t *testing.T) {
	sink := statusSink{newRecSink()}
	h := HandlerFunc(func(context.Context, PublishRequest) (Sink, error) { return sink, nil })
	_, addr := startServer(t, h, nil)
	c := dialClient(t, addr)
	if code := c.publish("live", "k"); code != "NetStream.Publish.Start" {
		t.Fatal(code)
	}
	c.media(TypeVideo, 0, []byte{0x1C, 0, 0, 0, 0})
	vals, err := c.expect("onStatus")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := vals[3].(map[string]any)
	if m["level"] != "error" || m["code"] != "NetStream.Publish.Rejected" || m["description"] != "Unsupported video codec." {
		t.Fatalf("onStatus %v", m)
	}
	var se *StatusError
	if err := sink.waitClosed(t); !errors.As(err, &se) {
		t.Fatalf("sink closed with %v", err)
	}
	if _, err := c.cr.ReadMessage(); err == nil {
		t.Fatal("connection still open")
	}
}

func TestAddrKey(t *testing.T) {
	tests := []struct{ in, want string }{
		{"127.0.0.1:1935", "127.0.0.1"},
		{"[::ffff:10.0.0.1]:5", "10.0.0.1"},
		{"[2001:db8:1:2:3:4:5:6]:1935", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff::1]:9", "2001:db8:1:2::/64"},
	}
	for _, tt := range tests {
		a, err := net.ResolveTCPAddr("tcp", tt.in)
		if err != nil {
			t.Fatal(err)
		}
		if got := AddrKey(a); got != tt.want {
			t.Errorf("AddrKey(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// slowHandler is testHandler taking its time to decide: each Publish
// reports its key on entered and waits for release (or the connection's
// end).
type slowHandler struct {
	testHandler
	entered chan string
	release chan struct{}
}

func (h *slowHandler) Publish(ctx context.Context, req PublishRequest) (Sink, error) {
	h.entered <- req.Key
	select {
	case <-h.release:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	return h.testHandler.Publish(ctx, req)
}

// The admission deadline bounds what the client does, not the server's
// own check: a publish whose key check takes longer than the deadline (a
// lookup queued behind a reconnect storm) is accepted, not cut off.
func TestDeadlineStopsWhileDeciding(t *testing.T) {
	h := &slowHandler{entered: make(chan string, 1), release: make(chan struct{})}
	s, addr := startServer(t, h, func(s *Server) { s.AdmissionTimeout = 300 * time.Millisecond })
	go func() {
		<-h.entered
		time.Sleep(time.Second) // the check takes three deadlines
		close(h.release)
	}()
	if st := dialClient(t, addr).publishStatus("good"); st["code"] != "NetStream.Publish.Start" {
		t.Fatalf("publish answered %v", st)
	}
	if n := s.Stats().TimedOut; n != 0 {
		t.Errorf("%d connections timed out", n)
	}
}

// When the pending pool is full, a connection whose publish is being
// decided is dropped after those that have not published yet.
func TestDecidingEvictedLast(t *testing.T) {
	h := &slowHandler{entered: make(chan string, 1), release: make(chan struct{})}
	s, addr := startServer(t, h, func(s *Server) { s.MaxPending, s.MaxPendingPerAddr = 2, 2 })
	deciding := dialClient(t, addr)
	deciding.call(0, "connect", 1, map[string]any{"app": "live"})
	if _, err := deciding.expect("_result"); err != nil {
		t.Fatal(err)
	}
	deciding.call(0, "createStream", 2, nil)
	if _, err := deciding.expect("_result"); err != nil {
		t.Fatal(err)
	}
	deciding.call(1, "publish", 3, nil, "good", "live")
	<-h.entered
	idle := dialClient(t, addr) // handshaken, not publishing: older than the next one
	idle.call(0, "connect", 1, map[string]any{"app": "live"})
	if _, err := idle.expect("_result"); err != nil {
		t.Fatal(err)
	}
	dialClient(t, addr) // the pool is full: one must go
	if !closedWithin(idle.nc, 15*time.Second) {
		t.Fatal("the connection that had not published was kept")
	}
	close(h.release)
	if vals, err := deciding.expect("onStatus"); err != nil || statusCode(vals) != "NetStream.Publish.Start" {
		t.Fatalf("the publish being decided answered %v %v", vals, err)
	}
	if n := s.Stats().Evicted; n != 1 {
		t.Errorf("%d evicted, want 1", n)
	}
}
