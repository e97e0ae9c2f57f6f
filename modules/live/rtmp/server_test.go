package rtmp

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/live/amf0"
)

// recSink records what a publication delivered.
type recSink struct {
	mu     sync.Mutex
	meta   map[string]any
	video  []int64
	audio  []int64
	closed chan error
}

func newRecSink() *recSink { return &recSink{closed: make(chan error, 2)} }

func (s *recSink) Metadata(m map[string]any) { s.mu.Lock(); s.meta = m; s.mu.Unlock() }
func (s *recSink) Video(ts int64, b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.video = append(s.video, ts)
	return nil
}
func (s *recSink) Audio(ts int64, b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.audio = append(s.audio, ts)
	return nil
}
func (s *recSink) Close(err error) { s.closed <- err }

func (s *recSink) waitClosed(t *testing.T) error {
	t.Helper()
	select {
	case err := <-s.closed:
		select {
		case <-s.closed:
			t.Fatal("Close called twice")
		case <-time.After(50 * time.Millisecond):
		}
		return err
	case <-time.After(testload.Patience):
		t.Fatalf("sink not closed within %s", testload.Patience)
		return nil
	}
}

// testHandler accepts the key "good" and refuses anything else.
type testHandler struct {
	mu    sync.Mutex
	reqs  []PublishRequest
	sinks []*recSink
}

func (h *testHandler) Publish(ctx context.Context, req PublishRequest) (Sink, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.reqs = append(h.reqs, req)
	if req.Key != "good" {
		return nil, fmt.Errorf("unknown key: %w", ErrUnauthorized)
	}
	s := newRecSink()
	h.sinks = append(h.sinks, s)
	return s, nil
}

func (h *testHandler) last() (PublishRequest, *recSink) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var s *recSink
	if len(h.sinks) > 0 {
		s = h.sinks[len(h.sinks)-1]
	}
	return h.reqs[len(h.reqs)-1], s
}

func startServer(t *testing.T, h Handler, configure func(*Server)) (*Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Handler: h, Logger: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	if configure != nil {
		configure(s)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-done; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve returned %v", err)
		}
	})
	return s, ln.Addr().String()
}

// testClient is a minimal publisher speaking through the package's own
// chunk layer.
type testClient struct {
	t  *testing.T
	nc net.Conn
	cr *ChunkReader
	cw *ChunkWriter
	bw *bufio.Writer
}

func dialClient(t *testing.T, addr string) *testClient {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, testload.Patience)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(testload.Patience))
	br := bufio.NewReader(nc)
	bw := bufio.NewWriter(nc)
	if err := clientHandshake(br, bw); err != nil {
		t.Fatal(err)
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	return &testClient{t: t, nc: nc, cr: NewChunkReader(br, Limits{}), cw: NewChunkWriter(bw), bw: bw}
}

func (c *testClient) send(m *Message) {
	c.t.Helper()
	if err := c.cw.WriteMessage(m); err != nil {
		c.t.Fatal(err)
	}
	if err := c.cw.Flush(); err != nil {
		c.t.Fatal(err)
	}
}

func (c *testClient) call(streamID uint32, name string, txn float64, args ...any) {
	c.t.Helper()
	p, err := amf0.Encode(nil, append([]any{name, txn}, args...)...)
	if err != nil {
		c.t.Fatal(err)
	}
	c.send(&Message{ChunkStreamID: 3, Type: TypeCommandAMF0, StreamID: streamID, Payload: p})
}

// expect reads until a command called name arrives and returns its values.
func (c *testClient) expect(name string) ([]any, error) {
	for {
		m, err := c.cr.ReadMessage()
		if err != nil {
			return nil, err
		}
		if m.Type != TypeCommandAMF0 {
			continue
		}
		vals, err := amf0.DecodeAll(m.Payload)
		if err != nil {
			return nil, err
		}
		if vals[0] == name {
			return vals, nil
		}
	}
}

func statusCode(vals []any) string {
	if len(vals) < 4 {
		return ""
	}
	m, _ := vals[3].(map[string]any)
	code, _ := m["code"].(string)
	return code
}

// publish runs connect, createStream and publish, returning the onStatus code.
func (c *testClient) publish(app, key string) string {
	c.t.Helper()
	c.call(0, "connect", 1, map[string]any{"app": app, "tcUrl": "rtmp://127.0.0.1/" + app})
	if vals, err := c.expect("_result"); err != nil || statusCode(vals) != "NetConnection.Connect.Success" {
		c.t.Fatalf("connect: %v %v", vals, err)
	}
	c.call(0, "releaseStream", 2, nil, key)
	c.call(0, "FCPublish", 3, nil, key)
	c.call(0, "createStream", 4, nil)
	vals, err := c.expect("_result")
	for err == nil && vals[1] != 4.0 {
		vals, err = c.expect("_result")
	}
	if err != nil {
		c.t.Fatalf("createStream: %v", err)
	}
	c.call(1, "publish", 5, nil, key, "live")
	vals, err = c.expect("onStatus")
	if err != nil {
		c.t.Fatalf("publish: %v", err)
	}
	return statusCode(vals)
}

func (c *testClient) media(typ uint8, ts uint32, body []byte) {
	c.t.Helper()
	csid := uint32(4)
	if typ == TypeVideo {
		csid = 6
	}
	c.send(&Message{ChunkStreamID: csid, Type: typ, StreamID: 1, Timestamp: ts, Payload: body})
}

func TestPublishFlow(t *testing.T) {
	h := &testHandler{}
	_, addr := startServer(t, h, nil)
	c := dialClient(t, addr)
	if code := c.publish("live/", "good?token=1"); code != "NetStream.Publish.Start" {
		t.Fatalf("publish: %s", code)
	}
	req, sink := h.last()
	if req.App != "live" || req.Key != "good" || req.Query != "token=1" || req.RemoteAddr == nil {
		t.Fatalf("request %+v", req)
	}
	meta, _ := amf0.Encode(nil, "@setDataFrame", "onMetaData", amf0.ECMAArray{"width": 320.0})
	c.send(&Message{ChunkStreamID: 4, Type: TypeDataAMF0, StreamID: 1, Payload: meta})
	// A large video message across chunks, with extended timestamps.
	c.send(SetChunkSizeMessage(1000))
	c.cw.SetChunkSize(1000)
	c.media(TypeVideo, 0, make([]byte, 5000))
	c.media(TypeAudio, 23, []byte{0xAF, 1, 2})
	c.media(TypeVideo, 0xFFFFFFF0, []byte{0x27, 1})
	c.media(TypeVideo, 0x20, []byte{0x27, 1}) // wraps
	c.call(0, "ping-unknown", 9, nil)
	if vals, err := c.expect("_error"); err != nil || vals[1] != 9.0 {
		t.Fatalf("unknown command: %v %v", vals, err)
	}
	c.send(UserControlMessage(EventPingRequest, 1234))
	c.call(0, "FCUnpublish", 0, nil, "good")
	c.call(0, "deleteStream", 0, nil, 1.0)
	if err := sink.waitClosed(t); err != nil {
		t.Fatalf("clean unpublish closed with %v", err)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if sink.meta["width"] != 320.0 {
		t.Errorf("metadata %v", sink.meta)
	}
	// The wrap from 0xFFFFFFF0 to 0x20 is a step forward of 0x30 ms.
	want := []int64{0, -16, 32}
	if len(sink.video) != 3 || sink.video[0] != want[0] || sink.video[1] != want[1] || sink.video[2] != want[2] {
		t.Errorf("video timestamps %v, want %v", sink.video, want)
	}
	if len(sink.audio) != 1 || sink.audio[0] != 23 {
		t.Errorf("audio timestamps %v", sink.audio)
	}
}

func TestPublishRefused(t *testing.T) {
	h := &testHandler{}
	_, addr := startServer(t, h, nil)
	c := dialClient(t, addr)
	if code := c.publish("live", "bad"); code != "NetStream.Publish.Unauthorized" {
		t.Fatalf("publish: %s", code)
	}
	// The server closes the connection after refusing.
	if _, err := c.cr.ReadMessage(); err == nil {
		t.Fatal("connection still open")
	}
}

func TestDisconnectAndReplace(t *testing.T) {
	h := &testHandler{}
	_, addr := startServer(t, h, nil)
	c1 := dialClient(t, addr)
	if code := c1.publish("live", "good"); code != "NetStream.Publish.Start" {
		t.Fatal(code)
	}
	req1, sink1 := h.last()
	c2 := dialClient(t, addr)
	if code := c2.publish("live", "good"); code != "NetStream.Publish.Start" {
		t.Fatal(code)
	}
	replaced := errors.New("replaced by a new connection")
	req1.Disconnect(replaced)
	req1.Disconnect(nil) // repeated calls are harmless
	if err := sink1.waitClosed(t); !errors.Is(err, replaced) {
		t.Fatalf("old sink closed with %v", err)
	}
	if _, err := c1.cr.ReadMessage(); err == nil {
		t.Fatal("old connection still open")
	}
	req2, sink2 := h.last()
	c2.media(TypeAudio, 1, []byte{0xAF, 1})
	req2.Disconnect(nil)
	if err := sink2.waitClosed(t); !errors.Is(err, ErrDisconnected) {
		t.Fatalf("sink closed with %v", err)
	}
}

func TestCloseClosesSinks(t *testing.T) {
	h := &testHandler{}
	s, addr := startServer(t, h, nil)
	c := dialClient(t, addr)
	if code := c.publish("live", "good"); code != "NetStream.Publish.Start" {
		t.Fatal(code)
	}
	_, sink := h.last()
	s.Close()
	if err := sink.waitClosed(t); !errors.Is(err, ErrServerClosed) {
		t.Fatalf("sink closed with %v", err)
	}
}

// CloseListeners refuses new connections while a publisher keeps
// streaming, until Close.
func TestCloseListenersKeepsPublishers(t *testing.T) {
	h := &testHandler{}
	s, addr := startServer(t, h, nil)
	c := dialClient(t, addr)
	if code := c.publish("live", "good"); code != "NetStream.Publish.Start" {
		t.Fatal(code)
	}
	_, sink := h.last()
	if err := s.CloseListeners(); err != nil {
		t.Fatal(err)
	}
	if nc, err := net.DialTimeout("tcp", addr, testload.Patience); err == nil {
		nc.Close()
		t.Fatal("a new connection was accepted after CloseListeners")
	}
	c.media(TypeAudio, 1, []byte{0xAF, 1})
	c.media(TypeAudio, 24, []byte{0xAF, 1})
	testload.Poll(t, "audio after CloseListeners", func() error {
		sink.mu.Lock()
		defer sink.mu.Unlock()
		if len(sink.audio) < 2 {
			return fmt.Errorf("%d audio messages", len(sink.audio))
		}
		return nil
	})
	s.Close()
	if err := sink.waitClosed(t); !errors.Is(err, ErrServerClosed) {
		t.Fatalf("sink closed with %v", err)
	}
}

func TestIdleTimeout(t *testing.T) {
	h := &testHandler{}
	_, addr := startServer(t, h, func(s *Server) { s.IdleTimeout = 3 * time.Second })
	c := dialClient(t, addr)
	if code := c.publish("live", "good"); code != "NetStream.Publish.Start" {
		t.Fatal(code)
	}
	_, sink := h.last()
	err := sink.waitClosed(t)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("closed with %v, want a timeout", err)
	}
}

func TestSinkErrorDisconnects(t *testing.T) {
	boom := errors.New("disk full")
	sink := &failSink{recSink: newRecSink(), err: boom}
	h := HandlerFunc(func(context.Context, PublishRequest) (Sink, error) { return sink, nil })
	_, addr := startServer(t, h, nil)
	c := dialClient(t, addr)
	c.publish("live", "k")
	c.media(TypeVideo, 0, []byte{0x17})
	if err := sink.waitClosed(t); !errors.Is(err, boom) {
		t.Fatalf("closed with %v", err)
	}
}

type failSink struct {
	*recSink
	err error
}

func (s *failSink) Video(int64, []byte) error { return s.err }

func TestPanickingSinkIsContained(t *testing.T) {
	sink := &panicSink{recSink: newRecSink()}
	h := HandlerFunc(func(context.Context, PublishRequest) (Sink, error) { return sink, nil })
	_, addr := startServer(t, h, nil)
	c := dialClient(t, addr)
	c.publish("live", "k")
	c.media(TypeAudio, 0, []byte{0xAF})
	if err := sink.waitClosed(t); err == nil {
		t.Fatal("closed without error")
	}
	c2 := dialClient(t, addr)
	if code := c2.publish("live", "k"); code != "NetStream.Publish.Start" {
		t.Fatal(code)
	}
}

type panicSink struct{ *recSink }

func (s *panicSink) Audio(int64, []byte) error { panic("sink bug") }

func TestByteRateCap(t *testing.T) {
	h := &testHandler{}
	_, addr := startServer(t, h, func(s *Server) { s.MaxByteRate = 200_000 })
	c := dialClient(t, addr)
	if code := c.publish("live", "good"); code != "NetStream.Publish.Start" {
		t.Fatal(code)
	}
	start := time.Now()
	for i := range 12 {
		c.media(TypeVideo, uint32(i*40), make([]byte, 50_000))
	}
	// 600 kB at 200 kB/s with a one-second bucket takes about two seconds;
	// the last message is only delivered once the server has read it.
	c.call(0, "sync", 77, nil)
	if _, err := c.expect("_error"); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < 1500*time.Millisecond {
		t.Fatalf("600 kB read in %v despite a 200 kB/s cap", el)
	}
}

// TestGarbageSurvival throws hostile input at a real listener and checks the
// server still serves a proper publisher afterwards.
func TestGarbageSurvival(t *testing.T) {
	h := &testHandler{}
	// The server's short timeouts end what the garbage leaves hanging; the
	// clients' deadlines only bound a hang, and the proper publisher's
	// handshake at the end must not race the handshake timeout on a loaded
	// machine, hence seconds rather than milliseconds. Nine hostile
	// connections at once from one address: above the default per-address
	// pending pool, which would drop one of them early.
	_, addr := startServer(t, h, func(s *Server) {
		s.HandshakeTimeout = 5 * time.Second
		s.IdleTimeout = 5 * time.Second
		s.MaxPendingPerAddr = 16
	})

	raw := func(data []byte) {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Error(err)
			return
		}
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(testload.Patience))
		nc.Write(data)
		io.Copy(io.Discard, nc)
	}
	afterHandshake := func(data []byte) {
		c := dialClient(t, addr)
		c.nc.SetDeadline(time.Now().Add(testload.Patience))
		c.nc.Write(data)
		io.Copy(io.Discard, c.nc)
		c.nc.Close()
	}
	random := func(n int) []byte {
		b := make([]byte, n)
		rand.Read(b)
		return b
	}

	var wg sync.WaitGroup
	cases := []func(){
		func() { raw(random(10)) },
		func() { raw(append([]byte{3}, random(4000)...)) },
		func() { raw([]byte{3, 1, 2, 3}) }, // truncated handshake
		func() { raw([]byte("GET / HTTP/1.1\r\n\r\n")) },
		func() { raw(nil) },
		func() { afterHandshake(random(20000)) },
		func() {
			var b chunkBuilder
			b.type0(2, 0, 4, TypeSetChunkSize, 0).u32(0x7FFFFFFF)
			b.type0(6, 0, 0xFFFFFF, TypeVideo, 1).data(random(100)) // bogus length
			afterHandshake(b.Bytes())
		},
		func() {
			var b chunkBuilder
			b.type0(3, 0, 50, TypeCommandAMF0, 0).data([]byte{2, 0xFF, 0xFF})
			b.data(random(47))
			b.type0(3, 0, 5, TypeCommandAMF0, 0).data([]byte{0x0A, 0xFF, 0xFF, 0xFF, 0xFF})
			afterHandshake(b.Bytes())
		},
		func() {
			var b chunkBuilder
			for i := uint32(0); i < 200; i++ {
				b.type0(3+i, 0, 4<<20, TypeVideo, 1).data(random(128))
			}
			afterHandshake(b.Bytes())
		},
	}
	for _, fn := range cases {
		wg.Add(1)
		go func() { defer wg.Done(); fn() }()
	}
	wg.Wait()

	c := dialClient(t, addr)
	if code := c.publish("live", "good"); code != "NetStream.Publish.Start" {
		t.Fatalf("publish after garbage: %s", code)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }
