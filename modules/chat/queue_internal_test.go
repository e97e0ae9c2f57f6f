package chat

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"testing"
	"time"
)

// A socket's queue holds ClientQueue frames besides the write under way;
// the next frame is refused (its hub drops the socket), and the dropped
// socket gets, after the write under way, the close frame 4008 and the end
// of its connection; what waited is not written.
func TestClientQueueBounded(t *testing.T) {
	server, peer := net.Pipe() // a write blocks until the peer reads: a viewer that stopped reading
	defer peer.Close()
	c := newClient(Viewer{AnonID: "q"}, nil, server, time.Hour)
	first := textFrame([]byte(`{"n":0}`))
	if !c.push(first) {
		t.Fatal("the first frame was refused")
	}
	// One byte read: the writer has taken the first frame and is blocked
	// writing the rest of it.
	head := make([]byte, 1)
	if _, err := io.ReadFull(peer, head); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= ClientQueue; i++ {
		if !c.push(textFrame(fmt.Appendf(nil, `{"n":%d}`, i))) {
			t.Fatalf("frame %d of a queue of %d refused", i, ClientQueue)
		}
	}
	if c.push(textFrame([]byte(`{"n":"one too many"}`))) {
		t.Fatal("a frame beyond the queue's bound was taken")
	}
	if !c.drop(tooSlowFrame) || c.drop(tooSlowFrame) {
		t.Fatal("drop did not end the socket exactly once")
	}
	rest, err := io.ReadAll(peer)
	if err != nil {
		t.Fatal(err)
	}
	want := append(append([]byte{}, first...), tooSlowFrame...)
	if got := append(head, rest...); !bytes.Equal(got, want) {
		t.Fatalf("the peer read %q, want the frame under way then the close frame %q", got, want)
	}
	if code := binary.BigEndian.Uint16(tooSlowFrame[2:4]); code != CloseTooSlow {
		t.Fatalf("close code %d", code)
	}
	<-c.stopped
	if c.push(first) != true || len(c.queue) != 0 {
		t.Fatal("a dropped socket queues frames")
	}
}

// A socket may be ClientQueueBytes behind, the write under way included:
// the frame beyond is refused, however few frames wait.
func TestClientQueueBytesBounded(t *testing.T) {
	server, peer := net.Pipe()
	defer peer.Close()
	c := newClient(Viewer{AnonID: "b"}, nil, server, time.Hour)
	big := textFrame(bytes.Repeat([]byte("x"), 300<<10))
	if !c.push(big) {
		t.Fatal("the first frame was refused")
	}
	head := make([]byte, 1)
	if _, err := io.ReadFull(peer, head); err != nil { // the writer holds it now
		t.Fatal(err)
	}
	n := 1
	for c.push(big) {
		n++
		if n > ClientQueue {
			t.Fatalf("%d frames of %d bytes taken", n, len(big))
		}
	}
	if want := ClientQueueBytes / len(big); n != want {
		t.Errorf("%d frames of %d bytes taken, want %d (%d bytes)", n, len(big), want, ClientQueueBytes)
	}
	c.drop(tooSlowFrame)
	go io.Copy(io.Discard, peer)
	<-c.stopped
}

// Frame headers: 7-bit, 16-bit and 64-bit payload lengths (RFC 6455 §5.2).
func TestTextFrame(t *testing.T) {
	for _, tc := range []struct {
		n      int
		header []byte
	}{
		{0, []byte{0x81, 0}},
		{125, []byte{0x81, 125}},
		{126, []byte{0x81, 126, 0, 126}},
		{65535, []byte{0x81, 126, 0xff, 0xff}},
		{65536, []byte{0x81, 127, 0, 0, 0, 0, 0, 1, 0, 0}},
	} {
		payload := bytes.Repeat([]byte("x"), tc.n)
		f := textFrame(payload)
		if !bytes.Equal(f[:len(tc.header)], tc.header) || !bytes.Equal(f[len(tc.header):], payload) {
			t.Errorf("%d bytes: header % x", tc.n, f[:min(len(f), 10)])
		}
	}
}
