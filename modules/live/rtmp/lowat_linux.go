package rtmp

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// batcher sets a TCP socket's receive low watermark (SO_RCVLOWAT): epoll,
// and so Go's poller, reports the socket readable only once that many
// bytes are queued, or at the peer's FIN or an error. A read of a
// non-blocking socket still returns whatever is queued.
type batcher struct {
	raw   syscall.RawConn // nil: not a socket, nothing to set or drain
	lowat int             // the watermark set, 0 or 1 for the default
}

func newBatcher(nc net.Conn) batcher {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return batcher{}
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return batcher{}
	}
	return batcher{raw: raw, lowat: 1}
}

// setLowat sets the watermark when it changes by more than a quarter (or
// to or from one byte), so a steady peer costs no system call.
func (b *batcher) setLowat(n int) {
	if b.raw == nil || n == b.lowat || (n > 1 && b.lowat > 1 && abs(n-b.lowat) < b.lowat/4) {
		return
	}
	var serr error
	if err := b.raw.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVLOWAT, n)
	}); err == nil && serr == nil {
		b.lowat = n
	}
	// Otherwise the socket is closed (or refuses the option): the
	// watermark stays as it was, which drain still handles.
}

// drain is called when a read timed out with the watermark raised: it
// takes the bytes queued below the watermark, if any, with one
// non-blocking read (Control does not wait on the deadline that fired),
// and drops the watermark to one byte, the rate having fallen. With
// nothing queued the peer really was quiet, and the timeout stands.
func (b *batcher) drain(p []byte, timeout error) (int, error) {
	if b.raw == nil {
		return 0, timeout
	}
	var n int
	var rerr error
	if err := b.raw.Control(func(fd uintptr) {
		n, rerr = syscall.Read(int(fd), p)
	}); err != nil || rerr != nil || n <= 0 {
		return 0, timeout
	}
	b.setLowat(1)
	return n, nil
}

// read reads the socket like nc.Read, but the read(2) itself is a raw
// system call. The socket is non-blocking, so the call never waits; when
// nothing is queued the goroutine parks in Go's poller as nc.Read would,
// under the same deadline. What it skips is the runtime's bookkeeping
// for a call that might block: entering one wakes the runtime's monitor
// thread (sysmon) whenever it sleeps, as it does between a publisher's
// batches, so each batch paid that thread's wake-up too
// (docs/benchmarks.md, "Raw reads").
func (b *batcher) read(nc net.Conn, p []byte) (int, error) {
	if b.raw == nil {
		return nc.Read(p)
	}
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var rerr error
	err := b.raw.Read(func(fd uintptr) bool {
		for {
			r, _, e := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
			switch e {
			case 0:
				n = int(r)
				if n == 0 {
					rerr = io.EOF
				}
				return true
			case unix.EINTR:
				continue
			case unix.EAGAIN:
				return false // park until the poller reports the socket readable
			}
			rerr = &net.OpError{Op: "read", Net: "tcp", Source: nc.LocalAddr(), Addr: nc.RemoteAddr(), Err: os.NewSyscallError("read", e)}
			return true
		}
	})
	if err != nil {
		// A deadline or a closed connection, as nc.Read reports them.
		if oe, ok := err.(*net.OpError); ok {
			oe.Op = "read"
		}
		return 0, err
	}
	return n, rerr
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
