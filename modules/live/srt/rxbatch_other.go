//go:build !linux

package srt

import (
	"net/netip"

	"golang.org/x/sys/unix"
)

// rxBatchLen: one datagram a call where recvmmsg is missing.
const rxBatchLen = 1

// rxBatch reads one datagram a call where recvmmsg is missing.
type rxBatch struct {
	buf [maxMSS + 64]byte
	oob [64]byte
	msg [1]rxMsg
}

func newRxBatch() *rxBatch { return new(rxBatch) }

// read reads one queued datagram without waiting.
func (b *rxBatch) read(fd int) ([]rxMsg, int) {
	size, oobn, flags, from, err := unix.Recvmsg(fd, b.buf[:], b.oob[:], unix.MSG_DONTWAIT)
	if err != nil {
		return nil, 0
	}
	var ap netip.AddrPort
	switch sa := from.(type) {
	case *unix.SockaddrInet4:
		ap = netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(sa.Port))
	case *unix.SockaddrInet6:
		ap = netip.AddrPortFrom(netip.AddrFrom16(sa.Addr).Unmap(), uint16(sa.Port))
	default:
		return nil, 1
	}
	if flags&unix.MSG_TRUNC != 0 {
		return nil, 1
	}
	b.msg[0] = rxMsg{data: b.buf[:size], from: ap, oob: b.oob[:oobn]}
	return b.msg[:], 1
}

// sendTo sends b to to on fd without waiting; an IPv6 socket takes IPv4
// addresses mapped.
func sendTo(fd int, b []byte, to netip.AddrPort, v6 bool) {
	var sa unix.Sockaddr
	if a := to.Addr(); a.Is4() && !v6 {
		sa = &unix.SockaddrInet4{Port: int(to.Port()), Addr: a.As4()}
	} else {
		sa = &unix.SockaddrInet6{Port: int(to.Port()), Addr: a.As16()}
	}
	_ = unix.Sendto(fd, b, unix.MSG_DONTWAIT, sa)
}
