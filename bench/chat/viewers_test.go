package main

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// frame is payload as one final unmasked server frame of opcode op.
func frame(op byte, payload []byte) []byte {
	n := len(payload)
	f := []byte{0x80 | op}
	switch {
	case n < 126:
		f = append(f, byte(n))
	case n <= 0xffff:
		f = append(f, 126, byte(n>>8), byte(n))
	default:
		f = append(f, 127)
		f = binary.BigEndian.AppendUint64(f, uint64(n))
	}
	return append(f, payload...)
}

// TestViewerReadsFramesCutAnywhere: a stream of the server's frames of
// the three header lengths, with a ping among them, is counted the same
// however the reads cut it, the sampled latency comes from the text, and
// the ping is answered with a masked pong of its payload.
func TestViewerReadsFramesCutAnywhere(t *testing.T) {
	sent := time.Now().Add(-time.Second).UnixNano()
	chat := []byte(`{"type":"chat.created","show_id":1,"chat":{"message":"message 7 bench t=` + strconv.FormatInt(sent, 10) + `"}}`)
	presence := []byte(`{"type":"presence","show_id":1,"count":3}`)
	long := []byte(`{"type":"show.updated","show_id":1,"pad":"` + strings.Repeat("x", 70_000) + `"}`)
	mid := []byte(`{"type":"chat.created","show_id":1,"chat":{"message":"` + strings.Repeat("y", 300) + `"}}`)
	var stream []byte
	for _, f := range [][]byte{frame(1, chat), frame(1, presence), frame(9, []byte("hb")), frame(1, long), frame(1, mid), frame(1, chat)} {
		stream = append(stream, f...)
	}
	for _, cut := range []int{1, 2, 3, 7, 100, 4096, len(stream)} {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
		if err != nil {
			t.Fatal(err)
		}
		v := &viewer{fd: fds[0], sampled: true}
		for rest := stream; len(rest) > 0; {
			n := min(cut, len(rest))
			data := append(v.carry, rest[:n]...)
			rest = rest[n:]
			left, err := v.frames(data)
			if err != nil {
				t.Fatalf("cut %d: %v", cut, err)
			}
			v.carry = append(v.carry[:0], left...)
		}
		if len(v.carry) != 0 || v.chats.Load() != 3 || v.presence.Load() != 1 || v.other.Load() != 1 || len(v.lat) != 2 {
			t.Errorf("cut %d: carry %d, chats %d, presence %d, other %d, latencies %d", cut, len(v.carry), v.chats.Load(), v.presence.Load(), v.other.Load(), len(v.lat))
		}
		if len(v.lat) > 0 && (v.lat[0] < time.Second || v.lat[0] > time.Minute) {
			t.Errorf("cut %d: latency %s, want about a second", cut, v.lat[0])
		}
		pong := make([]byte, 16)
		n, err := unix.Read(fds[1], pong)
		if err != nil || n != 8 || pong[0] != 0x8a || pong[1] != 0x82 {
			t.Fatalf("cut %d: pong % x (%v)", cut, pong[:max(n, 0)], err)
		}
		if got := []byte{pong[6] ^ pong[2], pong[7] ^ pong[3]}; !bytes.Equal(got, []byte("hb")) {
			t.Errorf("cut %d: pong payload %q", cut, got)
		}
		unix.Close(fds[0])
		unix.Close(fds[1])
	}
}

// TestViewerRefusesBadFrames: what no server may send ends the socket.
func TestViewerRefusesBadFrames(t *testing.T) {
	masked := frame(1, []byte("hi"))
	masked[1] |= 0x80
	masked = append(masked[:2], append([]byte{0, 0, 0, 0}, masked[2:]...)...)
	fragment := frame(1, []byte("hi"))
	fragment[0] &^= 0x80
	for name, data := range map[string][]byte{
		"masked":    masked,
		"fragment":  fragment,
		"close":     frame(8, []byte{0x0f, 0xa8}),
		"reserved":  {0xc1, 0},
		"opcode":    frame(3, nil),
		"too large": {0x81, 127, 0, 0, 0, 1, 0, 0, 0, 0},
	} {
		if _, err := (&viewer{fd: -1}).frames(data); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
