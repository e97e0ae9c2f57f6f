package rtmp

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"
)

// TestIdleConnGather: once a read drained the socket, the next waits until
// the gather time has passed since, and gets what arrived meanwhile in one
// read; a read after a full one does not wait; cancelling the connection's
// context ends a wait at once.
func TestIdleConnGather(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	defer server.Close()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	const gather = 80 * time.Millisecond
	c := &idleConn{Conn: server, ctx: ctx, gather: gather}
	go client.Write([]byte("abc"))
	buf := make([]byte, 16)
	if n, err := c.Read(buf); err != nil || n != 3 {
		t.Fatalf("first read: %d, %v", n, err)
	}
	drained := time.Now()
	go client.Write([]byte("defgh"))
	if n, err := c.Read(buf); err != nil || string(buf[:n]) != "defgh" {
		t.Fatalf("second read: %q, %v", buf[:n], err)
	}
	if waited := time.Since(drained); waited < gather {
		t.Errorf("the read after a drained one came %s after it, before the %s gather time", waited, gather)
	}

	// A read that filled the buffer: the next one reads at once.
	go client.Write([]byte("0123456789abcdef"))
	if n, err := c.Read(buf); err != nil || n != len(buf) {
		t.Fatalf("full read: %d, %v", n, err)
	}
	if !c.drained.IsZero() {
		t.Error("a full read counted as draining the socket")
	}

	// A drained read, then a wait that the connection's end cuts short.
	go client.Write([]byte("x"))
	if _, err := c.Read(buf); err != nil {
		t.Fatal(err)
	}
	c.gather = time.Hour
	cut := errors.New("cut off")
	done := make(chan error, 1)
	go func() { _, err := c.Read(buf); done <- err }()
	cancel(cut)
	if err := <-done; !errors.Is(err, cut) {
		t.Fatalf("read during a cancelled wait: %v", err)
	}
}
