package rtmp

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestBatchFor(t *testing.T) {
	for _, c := range []struct {
		n    int64
		d    time.Duration
		want int
	}{
		{0, time.Second, 1},
		{16_000, time.Second, 1},            // 128 kb/s of audio: 640 B a window
		{320_000, time.Second, 12_800},      // 2.5 Mb/s
		{320_000, 2 * time.Second, 6_400},   // the same bytes over two seconds
		{10_000_000, time.Second, maxBatch}, // capped
		{minBatch * 25, time.Second, minBatch},
		{minBatch*25 - 25, time.Second, 1},
		{1 << 20, 0, 1},
	} {
		if got := batchFor(c.n, c.d); got != c.want {
			t.Errorf("batchFor(%d, %v) = %d, want %d", c.n, c.d, got, c.want)
		}
	}
}

func lowatOf(t *testing.T, nc net.Conn) int {
	t.Helper()
	raw, err := nc.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var v int
	var gerr error
	if err := raw.Control(func(fd uintptr) { v, gerr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVLOWAT) }); err != nil || gerr != nil {
		t.Fatal(err, gerr)
	}
	return v
}

// TestReadBatching streams 800 kB/s into an idleConn over loopback TCP:
// within a second or two the socket's watermark follows the rate. Then,
// the watermark raised, the peer sends 100 bytes and goes quiet without
// closing: the reader still gets them when its deadline fires, with no
// error, and the watermark is back to one byte. Every byte arrives, in
// order.
func TestReadBatching(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	pattern := func(i int) byte { return byte(i*7 + i/251) }
	stop := make(chan struct{})  // the watermark is up: stop streaming
	steady := make(chan int, 1)  // the bytes streamed
	tail := make(chan struct{})  // send the tail
	quiet := make(chan struct{}) // the reader has the tail: close
	go func() {
		defer close(steady)
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 8<<10)
		sent := 0
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
	stream:
		for {
			for i := range buf {
				buf[i] = pattern(sent + i)
			}
			if _, err := c.Write(buf); err != nil {
				return
			}
			sent += len(buf)
			select {
			case <-stop:
				break stream
			case <-tick.C:
			}
		}
		steady <- sent
		<-tail
		for i := range 100 {
			buf[i] = pattern(sent + i)
		}
		if _, err := c.Write(buf[:100]); err != nil {
			return
		}
		<-quiet
	}()
	nc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ic := newIdleConn(nc)
	ic.timeout = 2 * time.Second

	var got bytes.Buffer
	p := make([]byte, 64<<10)
	read := func() {
		t.Helper()
		n, err := ic.Read(p)
		got.Write(p[:n])
		if err != nil {
			t.Fatalf("read after %d bytes (watermark %d): %v", got.Len(), ic.batch.lowat, err)
		}
	}
	for ic.batch.lowat <= 1 {
		read()
		if got.Len() > 16<<20 {
			t.Fatal("watermark never raised")
		}
	}
	if l := lowatOf(t, nc); l != ic.batch.lowat {
		t.Fatalf("socket's watermark %d, set %d", l, ic.batch.lowat)
	}
	raised := ic.batch.lowat
	close(stop)
	sent := <-steady
	for got.Len() < sent {
		read() // the last bytes may wait for the deadline and a drain
	}
	// Raise it (setLowat leaves a watermark within a quarter of the one
	// asked for as it is: a raised one near maxBatch may stay).
	ic.batch.setLowat(maxBatch)
	if l := lowatOf(t, nc); l != ic.batch.lowat || l < maxBatch*3/4 {
		t.Fatalf("socket's watermark %d (kept %d), want about %d", l, ic.batch.lowat, maxBatch)
	}
	close(tail)
	read()
	if got.Len() != sent+100 {
		t.Fatalf("read %d bytes, want %d", got.Len(), sent+100)
	}
	if l := lowatOf(t, nc); l != 1 || ic.batch.lowat != 1 {
		t.Fatalf("watermark %d (kept %d) after the peer went quiet, want 1", l, ic.batch.lowat)
	}
	close(quiet)
	if n, err := ic.Read(p); n != 0 || !errors.Is(err, io.EOF) {
		t.Fatalf("read %d, %v after the close, want EOF", n, err)
	}
	for i, b := range got.Bytes() {
		if b != pattern(i) {
			t.Fatalf("byte %d is %d, want %d", i, b, pattern(i))
		}
	}
	t.Logf("%d bytes, watermark %d", got.Len(), raised)
}

// TestRawReadEnds checks that the raw reads end as net.Conn.Read does: a
// read deadline is a timeout, a connection closed under a parked reader
// is net.ErrClosed, a reset is an error naming it, and a zero-length
// read returns at once.
func TestRawReadEnds(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	pair := func() (peer *net.TCPConn, ic *idleConn) {
		t.Helper()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		nc, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(); nc.Close() })
		ic = newIdleConn(nc)
		if ic.batch.raw == nil {
			t.Fatal("a TCP connection has no raw reads")
		}
		return c.(*net.TCPConn), ic
	}
	p := make([]byte, 1024)

	_, ic := pair()
	if n, err := ic.Read(p[:0]); n != 0 || err != nil {
		t.Fatalf("zero-length read: %d, %v", n, err)
	}
	ic.Conn.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	var ne net.Error
	if n, err := ic.Read(p); n != 0 || !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past the deadline: %d, %v; want a timeout", n, err)
	}

	_, ic = pair()
	done := make(chan error, 1)
	go func() {
		_, err := ic.Read(p)
		done <- err
	}()
	// Closing a connection wakes a reader parked in the poller, and the
	// close cannot overtake a reader not yet parked: either way the read
	// ends with net.ErrClosed.
	ic.Conn.Close()
	if err := <-done; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("read of a closed connection: %v, want net.ErrClosed", err)
	}

	peer, ic := pair()
	peer.SetLinger(0) // the close sends a reset
	if _, err := peer.Write([]byte("abc")); err != nil {
		t.Fatal(err)
	}
	if n, err := ic.Read(p); n != 3 || err != nil || string(p[:3]) != "abc" {
		t.Fatalf("read %d %q, %v; want abc", n, p[:n], err)
	}
	peer.Close()
	n, err := ic.Read(p)
	if n != 0 || !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("read after a reset: %d, %v; want ECONNRESET", n, err)
	}
	if !strings.Contains(err.Error(), "read tcp") {
		t.Fatalf("error %q does not name the read and the connection", err)
	}
}
