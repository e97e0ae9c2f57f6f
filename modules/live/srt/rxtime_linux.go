package srt

import (
	"encoding/binary"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// enableRxTime asks the kernel for each datagram's arrival time
// (SO_TIMESTAMPNS), so that a round trip is measured to the arrival of
// the answer, not to the tick that reads it.
func enableRxTime(fd int) {
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
}

// rxTime is the arrival time in a datagram's control messages.
func rxTime(oob []byte) (time.Time, bool) {
	const hdr = unix.SizeofCmsghdr
	for len(oob) >= hdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		l := int(h.Len)
		if l < hdr || l > len(oob) {
			return time.Time{}, false
		}
		if h.Level == unix.SOL_SOCKET && h.Type == unix.SO_TIMESTAMPNS && l >= hdr+16 {
			sec := int64(binary.NativeEndian.Uint64(oob[hdr:]))
			nsec := int64(binary.NativeEndian.Uint64(oob[hdr+8:]))
			return time.Unix(sec, nsec), true
		}
		l = (l + 7) &^ 7
		if l > len(oob) {
			break
		}
		oob = oob[l:]
	}
	return time.Time{}, false
}
