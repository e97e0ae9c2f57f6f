package srt

import (
	"errors"
	"net"
	"net/netip"
	"time"

	"golang.org/x/sys/unix"
)

// udpSocket is the listener's UDP socket, kept out of Go's network
// poller: the poller watches a socket with edge-triggered epoll, which
// wakes the thread waiting in epoll for every datagram that comes (about
// 240 a second for a 2.5 Mb/s stream), even with no goroutine waiting to
// read: four times the context switches of the whole RTMP ingest. The
// listener reads it at its ticks without waiting (recvmmsg, MSG_DONTWAIT)
// and, with no connection, waits for it in poll(2), with a pipe to end
// the wait when the listener closes.
type udpSocket struct {
	fd    int
	pipe  [2]int // written to end a wait
	tick  *sleeper
	v6    bool // an IPv6 socket: IPv4 peers are mapped
	local net.Addr
}

// openUDP binds a non-blocking UDP socket to addr. An address of every
// interface (":9000", "0.0.0.0:9000") gets a dual-stack IPv6 socket where
// the system has IPv6, as net.ListenUDP does.
func openUDP(addr string) (*udpSocket, error) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, err
	}
	s := &udpSocket{fd: -1, pipe: [2]int{-1, -1}}
	wildcard := ua.IP == nil || ua.IP.IsUnspecified()
	ip4 := ua.IP.To4()
	if wildcard || ip4 == nil {
		if fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_DGRAM, 0); err == nil {
			s.fd, s.v6 = fd, true
			if wildcard {
				_ = unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 0)
			}
			sa := &unix.SockaddrInet6{Port: ua.Port}
			if !wildcard {
				copy(sa.Addr[:], ua.IP.To16())
			}
			if err := unix.Bind(fd, sa); err != nil {
				s.close()
				return nil, &net.OpError{Op: "listen", Net: "udp", Addr: ua, Err: err}
			}
		} else if !wildcard {
			return nil, err
		}
	}
	if s.fd < 0 {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
		if err != nil {
			return nil, err
		}
		s.fd = fd
		sa := &unix.SockaddrInet4{Port: ua.Port}
		if ip4 != nil {
			copy(sa.Addr[:], ip4)
		}
		if err := unix.Bind(fd, sa); err != nil {
			s.close()
			return nil, &net.OpError{Op: "listen", Net: "udp", Addr: ua, Err: err}
		}
	}
	unix.CloseOnExec(s.fd)
	if err := unix.SetNonblock(s.fd, true); err != nil {
		s.close()
		return nil, err
	}
	_ = unix.SetsockoptInt(s.fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 4<<20) // a tick of many streams; the kernel may cap it
	enableRxTime(s.fd)
	if err := unix.Pipe(s.pipe[:]); err != nil {
		s.close()
		return nil, err
	}
	for _, fd := range s.pipe {
		unix.CloseOnExec(fd)
		_ = unix.SetNonblock(fd, true)
	}
	if s.tick, err = newSleeper(); err != nil {
		s.close()
		return nil, err
	}
	sa, err := unix.Getsockname(s.fd)
	if err != nil {
		s.close()
		return nil, err
	}
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		s.local = &net.UDPAddr{IP: net.IP(sa.Addr[:]).To16(), Port: sa.Port}
	case *unix.SockaddrInet6:
		s.local = &net.UDPAddr{IP: net.IP(sa.Addr[:]), Port: sa.Port}
	}
	return s, nil
}

// errSocketClosed ends a wait: the listener is closing.
var errSocketClosed = errors.New("srt: socket closed")

// wait waits until a datagram is queued or timeout passes; it fails once
// interrupt was called.
func (s *udpSocket) wait(timeout time.Duration) error {
	fds := []unix.PollFd{{Fd: int32(s.fd), Events: unix.POLLIN}, {Fd: int32(s.pipe[0]), Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(fds, int(timeout.Milliseconds()))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		if fds[1].Revents != 0 {
			return errSocketClosed
		}
		return nil
	}
}

// interrupt ends the current and every later wait and sleep.
func (s *udpSocket) interrupt() {
	_, _ = unix.Write(s.pipe[1], []byte{0})
	s.tick.stop()
}

// close closes the socket and the pipe, once nothing uses them.
func (s *udpSocket) close() {
	if s.tick != nil {
		s.tick.stop()
	}
	for _, fd := range []int{s.fd, s.pipe[0], s.pipe[1]} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

// send sends b to to without waiting.
func (s *udpSocket) send(b []byte, to netip.AddrPort) { sendTo(s.fd, b, to, s.v6) }
