package app

import (
	"bytes"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// flakyListener fails its first accepts with the errors given, then hands
// out one end of a pipe.
type flakyListener struct {
	mu     sync.Mutex
	errs   []error
	closed bool
}

func (l *flakyListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, net.ErrClosed
	}
	if len(l.errs) > 0 {
		err := l.errs[0]
		l.errs = l.errs[1:]
		return nil, err
	}
	a, b := net.Pipe()
	b.Close()
	return a, nil
}

func (l *flakyListener) Close() error {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	return nil
}

func (l *flakyListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080} }

func accept4(errno syscall.Errno) error {
	return &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", errno)}
}

// Accept errors (no descriptor left, a connection aborted before it was
// taken) are retried after a backoff and logged once, not returned: the
// server's accept loop would end the process on them. Only a closed
// listener ends Accept.
func TestAcceptRetriesErrors(t *testing.T) {
	var logs bytes.Buffer
	cfg := &Config{MaxConns: 10, MaxConnsPerIP: 10}
	g, err := newConnGuard(cfg, slog.New(slog.NewTextHandler(&logs, nil)), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	inner := &flakyListener{errs: []error{accept4(syscall.EMFILE), accept4(syscall.EMFILE), accept4(syscall.ENFILE), accept4(syscall.ECONNABORTED)}}
	ln := g.listener(inner)
	c, err := ln.Accept()
	if err != nil {
		t.Fatalf("Accept returned %v; it should have retried", err)
	}
	var m dto.Metric
	g.acceptErrors.Write(&m)
	if got := m.GetCounter().GetValue(); got != 4 {
		t.Fatalf("onair_http_accept_errors_total %v, want 4", got)
	}
	if n := strings.Count(logs.String(), "accepting connections failed"); n != 1 {
		t.Fatalf("%d log lines for a burst of errors, want 1:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "too many open files") {
		t.Fatalf("the log does not name the error:\n%s", logs.String())
	}
	if got := len(g.slots); got != 1 {
		t.Fatalf("%d connections counted, want 1", got)
	}
	c.Close()
	c.Close() // closing twice gives the place back once
	if got := len(g.slots); got != 0 {
		t.Fatalf("%d connections counted after close, want 0", got)
	}
	ln.Close()
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept on a closed listener: %v", err)
	}
}

func TestDerivedMaxConns(t *testing.T) {
	for _, tt := range []struct {
		soft uint64
		want int
	}{
		{300, 172},
		{1024, 896},
		{65536, 57344},
		{1048576, 917504},
		{100, 32},
		{0, 1 << 16},
	} {
		if got := derivedMaxConns(tt.soft); got != tt.want {
			t.Errorf("derivedMaxConns(%d) = %d, want %d", tt.soft, got, tt.want)
		}
	}
}

// X-Forwarded-For is read from the right; trusted proxies are skipped; the
// first address no trusted proxy vouches for is the client.
func TestForwardedClient(t *testing.T) {
	nets, err := parseNetworks("10.0.0.0/8, 2001:db8:1::/48")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		xff  string
		want string
	}{
		{"one hop", "203.0.113.7", "203.0.113.7"},
		{"spoofed left part is ignored", "1.2.3.4, 203.0.113.7", "203.0.113.7"},
		{"trusted hops skipped", "1.2.3.4, 203.0.113.7, 10.1.1.1, 10.2.2.2", "203.0.113.7"},
		{"all trusted: the leftmost", "10.1.1.1, 10.2.2.2", "10.1.1.1"},
		{"garbage stops the walk", "1.2.3.4, nonsense, 10.1.1.1", "10.1.1.1"},
		{"with a port", "203.0.113.7:5123", "203.0.113.7"},
		{"IPv6 with a port", "[2001:db8:9::1]:443", "2001:db8:9::1"},
		{"IPv6 trusted skipped", "2001:db8:9::1, 2001:db8:1::5", "2001:db8:9::1"},
		{"v4-mapped", "::ffff:203.0.113.7", "203.0.113.7"},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hops []string
			if tt.xff != "" {
				hops = strings.Split(tt.xff, ",")
			}
			got, ok := forwardedClient(hops, trustedProxies(nets))
			if tt.want == "" {
				if ok {
					t.Fatalf("got %v, want none", got)
				}
				return
			}
			if !ok || got != netip.MustParseAddr(tt.want) {
				t.Fatalf("got %v %v, want %s", got, ok, tt.want)
			}
		})
	}
}

func TestClientKey(t *testing.T) {
	for in, want := range map[string]string{
		"203.0.113.7":          "203.0.113.7",
		"::ffff:203.0.113.7":   "203.0.113.7",
		"2001:db8:1:2:3:4:5:6": "2001:db8:1:2::/64",
		"2001:db8:1:2::99":     "2001:db8:1:2::/64",
		"not an address":       "not an address",
	} {
		if got := ClientKey(in); got != want {
			t.Errorf("ClientKey(%q) = %q, want %q", in, got, want)
		}
	}
}

// codeFor gives every status Fiber or fasthttp produce on their own a code
// of its own, never the generic "error".
func TestCodeFor(t *testing.T) {
	for status, want := range map[int]string{
		400: "bad_request", 404: "not_found", 405: "method_not_allowed", 408: "request_timeout",
		413: "body_too_large", 414: "uri_too_long", 415: "unsupported_media_type", 426: "upgrade_required",
		429: "rate_limited", 431: "headers_too_large", 500: "internal_error", 502: "bad_gateway",
		503: "unavailable", 505: "http_version_not_supported",
	} {
		if got := codeFor(status); got != want {
			t.Errorf("codeFor(%d) = %q, want %q", status, got, want)
		}
	}
}

// TestReadAhead: a one-byte Read (fasthttp waiting for a keep-alive
// connection's next request) takes what the socket has at once; the next
// Reads get the rest from it, in order, before reading the socket again,
// and the connection holds no buffer once it is drained.
func TestReadAhead(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	c := &trackedConn{Conn: server, release: func() {}}
	defer c.Close()
	const first, second = "GET /media/shows/1/index.m3u8 HTTP/1.1\r\nHost: a\r\n\r\n", "GET /x HTTP/1.1\r\n\r\n"
	go func() {
		client.Write([]byte(first))
		client.Write([]byte(second))
	}()
	var got []byte
	one := make([]byte, 1)
	if n, err := c.Read(one); n != 1 || err != nil || one[0] != 'G' {
		t.Fatalf("one-byte read: %d %v %q", n, err, one)
	}
	got = append(got, one...)
	if c.ahead == nil || c.end-c.off != len(first)-1 {
		t.Fatalf("after the one-byte read, %d bytes ahead; want the rest of the request, %d", c.end-c.off, len(first)-1)
	}
	small := make([]byte, 5)
	n, err := c.Read(small) // from what is ahead, not the socket
	if n != 5 || err != nil {
		t.Fatalf("read ahead: %d %v", n, err)
	}
	got = append(got, small[:n]...)
	big := make([]byte, 1024)
	n, _ = c.Read(big)
	got = append(got, big[:n]...)
	if string(got) != first || c.ahead != nil {
		t.Fatalf("read %q (buffer held: %v); want %q", got, c.ahead != nil, first)
	}
	// Drained: the next Read is the socket's.
	n, err = c.Read(big)
	if string(big[:n]) != second || err != nil {
		t.Fatalf("next request: %q %v", big[:n], err)
	}
}
