package chat

import (
	"net"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/onair/onair/internal/testload"
)

// A hijacked connection is read on a goroutine of its own (the hijack
// handler returns) when it reads straight from the socket, and on the
// hijack goroutine when it reads through the request's reader, which
// fasthttp takes back once the handler returns: a client that sent bytes
// behind its upgrade request. This also notices a fasthttp whose
// hijacked connection changed shape (nothing detachable: every socket
// would hold its request's memory again).
func TestDetachableHijackedConn(t *testing.T) {
	got := make(chan bool, 1)
	srv := &fasthttp.Server{
		ReduceMemoryUsage: true,
		KeepHijackedConns: true,
		Handler: func(ctx *fasthttp.RequestCtx) {
			ctx.Hijack(func(c net.Conn) {
				got <- detachable(c)
				c.Close()
			})
		},
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Shutdown() })

	for _, tc := range []struct {
		name, sent string
		want       bool
	}{
		{"the request alone", "GET / HTTP/1.1\r\nHost: onair.test\r\n\r\n", true},
		{"bytes behind the request", "GET / HTTP/1.1\r\nHost: onair.test\r\n\r\n\x88\x80\x00\x00\x00\x00", false},
	} {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write([]byte(tc.sent)); err != nil {
			t.Fatal(err)
		}
		select {
		case d := <-got:
			if d != tc.want {
				t.Errorf("%s: detachable %v, want %v", tc.name, d, tc.want)
			}
		case <-time.After(testload.Patience):
			t.Fatalf("%s: the handler never ran", tc.name)
		}
		c.Close()
	}
}
