package srt

import (
	"net/netip"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rxBatchLen is the most datagrams one recvmmsg reads: a tick's worth of
// a few streams (a 6 Mb/s stream sends about 25 a 40 ms tick).
const rxBatchLen = 64

// rxBatch reads the datagrams queued on the socket with recvmmsg, many a
// system call: one a tick for a stream, where recvmsg made one a
// datagram (about 240 a second for 2.5 Mb/s) and one more to find the
// socket empty.
type rxBatch struct {
	hdrs  [rxBatchLen]unix.Mmsghdr
	iovs  [rxBatchLen]unix.Iovec
	names [rxBatchLen]unix.RawSockaddrInet6 // or an Inet4, shorter
	oobs  [rxBatchLen][64]byte
	bufs  [rxBatchLen][maxMSS + 64]byte
	msgs  [rxBatchLen]rxMsg
}

func newRxBatch() *rxBatch {
	b := new(rxBatch)
	for i := range b.hdrs {
		b.iovs[i].Base = &b.bufs[i][0]
		b.iovs[i].SetLen(len(b.bufs[i]))
		h := &b.hdrs[i].Hdr
		h.Iov = &b.iovs[i]
		h.SetIovlen(1)
		h.Name = (*byte)(unsafe.Pointer(&b.names[i]))
		h.Control = &b.oobs[i][0]
	}
	return b
}

// read reads the datagrams queued on fd without waiting, at most
// rxBatchLen: those of a known family and not truncated, and how many
// were read in all (rxBatchLen: there may be more).
func (b *rxBatch) read(fd int) ([]rxMsg, int) {
	for i := range b.hdrs {
		h := &b.hdrs[i].Hdr
		h.Namelen = unix.SizeofSockaddrInet6
		h.SetControllen(len(b.oobs[i]))
		h.Flags = 0
		b.hdrs[i].Len = 0
	}
	// Raw: the call never blocks, and a Syscall6 would tell the
	// scheduler, whose sysmon thread, asleep while the process is idle,
	// wakes for it and polls every 20 µs for a while: about as many
	// context switches a tick as the rest of the tick's work.
	r, _, errno := unix.RawSyscall6(unix.SYS_RECVMMSG, uintptr(fd), uintptr(unsafe.Pointer(&b.hdrs[0])),
		rxBatchLen, unix.MSG_DONTWAIT, 0, 0)
	if errno != 0 {
		return nil, 0 // EAGAIN: nothing queued (or the socket is closing)
	}
	n := min(int(r), rxBatchLen)
	msgs := b.msgs[:0]
	for i := range n {
		h := &b.hdrs[i]
		if h.Hdr.Flags&unix.MSG_TRUNC != 0 || int(h.Len) > len(b.bufs[i]) {
			continue
		}
		var ap netip.AddrPort
		sa := &b.names[i]
		switch sa.Family {
		case unix.AF_INET:
			sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
			ap = netip.AddrPortFrom(netip.AddrFrom4(sa4.Addr), netPort(sa4.Port))
		case unix.AF_INET6:
			ap = netip.AddrPortFrom(netip.AddrFrom16(sa.Addr).Unmap(), netPort(sa.Port))
		default:
			continue
		}
		msgs = append(msgs, rxMsg{data: b.bufs[i][:h.Len], from: ap, oob: b.oobs[i][:min(int(h.Hdr.Controllen), len(b.oobs[i]))]})
	}
	return msgs, n
}

// netPort reads a port as the kernel stores it, in network order.
func netPort(p uint16) uint16 {
	b := (*[2]byte)(unsafe.Pointer(&p))
	return uint16(b[0])<<8 | uint16(b[1])
}

// sendTo sends b to to on fd without waiting (a datagram the socket has
// no room for is dropped, as the network may), with a raw system call for
// the reason read gives. An IPv6 socket (dual-stack when it listens on
// every address) takes IPv4 addresses mapped.
func sendTo(fd int, b []byte, to netip.AddrPort, v6 bool) {
	if len(b) == 0 {
		return
	}
	var sa unix.RawSockaddrInet6
	size := uintptr(unix.SizeofSockaddrInet6)
	port := netPort(to.Port()) // the same swap both ways
	if a := to.Addr(); a.Is4() && !v6 {
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(&sa))
		sa4.Family, sa4.Port, sa4.Addr = unix.AF_INET, port, a.As4()
		size = unix.SizeofSockaddrInet4
	} else {
		sa.Family, sa.Port, sa.Addr = unix.AF_INET6, port, a.As16()
	}
	_, _, _ = unix.RawSyscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)),
		unix.MSG_DONTWAIT, uintptr(unsafe.Pointer(&sa)), size)
}
