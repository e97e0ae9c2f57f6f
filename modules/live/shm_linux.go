package live

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// shmFile is a segment or part of the live edge held in memory as an
// anonymous memory file (memfd_create(2)): sent with sendfile(2) at an
// offset of each request's own, so the bytes go to the socket without a
// copy through this process, as they would from a file on disk. It is
// closed once evicted and sent to every request that had it.
type shmFile struct {
	fd   int
	refs atomic.Int32 // the cache's, and one per request sending it
}

// newShm copies data into a new memory file.
func newShm(name string, data []byte) (*shmFile, error) {
	fd, err := unix.MemfdCreate("onair-"+name, unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("live: memfd_create: %w", err)
	}
	f := &shmFile{fd: fd}
	f.refs.Store(1)
	if err := f.writeAt(data, 0); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return f, nil
}

// writeAt copies data into the file at off. Bytes already there are never
// rewritten: a segment's file grows part by part while the parts before
// are sent from it.
//
// The pwrite(2) is a raw system call: a write to memory never waits on a
// device, so it needs none of the runtime's bookkeeping for a call that
// might block, and entering that wakes the runtime's monitor thread
// (sysmon) when it sleeps. With the segment's file written once, when it
// ends, this is the only system call of a part: sysmon was woken 35
// times in 20 s of a stream instead of 153-159
// (bench/results/2026-11-28d-ingest.md).
func (f *shmFile) writeAt(data []byte, off int64) error {
	for len(data) > 0 {
		r, _, e := unix.RawSyscall6(unix.SYS_PWRITE64, uintptr(f.fd), uintptr(unsafe.Pointer(&data[0])), uintptr(len(data)), uintptr(off), 0, 0)
		if e != 0 && e != unix.EINTR {
			return fmt.Errorf("live: write memfd: %w", e)
		}
		n := 0
		if e == 0 {
			if n = int(r); n == 0 {
				return fmt.Errorf("live: write memfd: %w", io.ErrShortWrite)
			}
		}
		data = data[n:]
		off += int64(n)
	}
	return nil
}

func (f *shmFile) acquire() { f.refs.Add(1) }

func (f *shmFile) release() {
	if f.refs.Add(-1) == 0 {
		unix.Close(f.fd)
	}
}

// body is bytes [off, off+n) of the file as a response body stream for
// conn; it takes over a reference the caller acquired, which closing it
// releases.
func (f *shmFile) body(conn net.Conn, off, n int64) io.ReadCloser {
	return &shmBody{f: f, conn: conn, off: off, n: n}
}

type shmBody struct {
	f      *shmFile
	conn   net.Conn
	off, n int64
	closed atomic.Bool
}

// Read is the copying path, for writers WriteTo cannot send to directly.
func (b *shmBody) Read(p []byte) (int, error) {
	if b.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.n {
		p = p[:b.n]
	}
	n, err := unix.Pread(b.f.fd, p, b.off)
	if n > 0 {
		b.off += int64(n)
		b.n -= int64(n)
	}
	if err == nil && n == 0 {
		err = io.ErrUnexpectedEOF
	}
	return max(n, 0), err
}

// WriteTo is fasthttp's path for a body stream: it is handed the
// connection's buffered writer, which holds the headers. They go to the
// socket with send(2) and MSG_MORE, so that they leave in the first
// packet of the body rather than in one of their own (as nginx's
// tcp_nopush does with TCP_CORK, but without its two setsockopt(2)s a
// response); then the bytes go from the memory file to the socket with
// sendfile(2), whose last packet is pushed.
//
// Both are raw system calls, as writeAt is: on a non-blocking socket and
// from memory neither waits. As plain calls, a sendfile(2) of a segment
// (some 150 µs of the kernel's time on loopback) outlasted the runtime
// monitor's 20 µs, which handed its processor to another thread each
// time and woke itself every 20 µs; raw, the call keeps its processor
// those 150 µs (bench/results/2026-11-28h-segmore.md).
func (b *shmBody) WriteTo(w io.Writer) (int64, error) {
	bw, buffered := w.(*bufio.Writer)
	sc, raw := b.conn.(syscall.Conn)
	if !buffered || !raw {
		return io.Copy(w, struct{ io.Reader }{b})
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return io.Copy(w, struct{ io.Reader }{b})
	}
	head := bufferedBytes(bw)
	if head == nil && bw.Buffered() > 0 {
		// A buffer filled to its last byte (fasthttp's is far larger
		// than headers): they go in a packet of their own.
		if err := bw.Flush(); err != nil {
			return 0, err
		}
	}
	more := 0
	if b.n > 0 {
		more = unix.MSG_MORE // else nothing would push the headers
	}
	var sent int64
	var sendErr error
	err = rc.Write(func(fd uintptr) bool {
		for len(head) > 0 {
			n, e := rawSend(fd, head, more)
			if n > 0 {
				head = head[n:]
			}
			switch e {
			case 0:
			case unix.EAGAIN:
				return false // wait until the socket takes more
			case unix.EINTR:
			default:
				sendErr = e
				return true
			}
		}
		for b.n > 0 {
			r, _, e := unix.RawSyscall6(unix.SYS_SENDFILE, fd, uintptr(b.f.fd), uintptr(unsafe.Pointer(&b.off)), uintptr(min(b.n, 1<<30)), 0, 0)
			n := int64(r)
			if e != 0 {
				n = 0
			}
			if n > 0 {
				b.n -= n
				sent += n
			}
			switch {
			case e == unix.EAGAIN:
				return false
			case e == unix.EINTR:
			case e != 0:
				sendErr = e
				return true
			case n == 0:
				sendErr = io.ErrUnexpectedEOF
				return true
			}
		}
		return true
	})
	if err == nil {
		err = sendErr
	}
	if err == nil && bw.Buffered() > 0 {
		// The headers are sent: the buffer starts again empty, writing to
		// the connection, as fasthttp's acquireWriter makes it.
		bw.Reset(b.conn)
	}
	return sent, err
}

// bufferedBytes is a view of what bw holds and has not written (nil when
// it cannot tell: a full buffer). bufio.Writer shows only the free space
// after it; what it holds is the same array's bytes before that.
func bufferedBytes(bw *bufio.Writer) []byte {
	n := bw.Buffered()
	if n == 0 || bw.Available() == 0 {
		return nil
	}
	free := bw.AvailableBuffer()
	return unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(free)), -n)), n)
}

// rawSend is send(2) of p on the non-blocking socket fd with flags.
func rawSend(fd uintptr, p []byte, flags int) (int, unix.Errno) {
	r, _, e := unix.RawSyscall6(unix.SYS_SENDTO, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)), uintptr(flags|unix.MSG_NOSIGNAL), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), 0
}

func (b *shmBody) Close() error {
	if b.closed.CompareAndSwap(false, true) {
		b.f.release()
	}
	return nil
}
