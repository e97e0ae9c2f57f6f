package srt

import (
	"bytes"
	"net"
	"net/netip"
	"testing"

	"github.com/datarhei/gosrt/packet"
)

// FuzzRxPacket: a data packet read into a pooled rxPacket has the header
// and payload gosrt's own parser gives it, and marshals back to the same
// bytes; reused from the pool, it carries nothing of the packet before.
func FuzzRxPacket(f *testing.F) {
	f.Add(dataPacket(7, 5, []byte("payload")))
	f.Add(dataPacket(1, packet.MAX_SEQUENCENUMBER, bytes.Repeat([]byte{0x47}, 1316)))
	f.Add(append([]byte{0x7f, 0xff, 0xff, 0xff, 0xfc}, make([]byte, 11)...))
	addr := net.UDPAddrFromAddrPort(netip.MustParseAddrPort("192.0.2.1:4000"))
	pool := newRxPool()
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < 16 || b[0]&0x80 != 0 {
			return // the listener hands it only data packets
		}
		want, err := packet.NewPacketFromData(addr, b)
		if err != nil {
			t.Fatal(err)
		}
		defer want.Decommission()
		got := pool.parse(addr, b)
		if *got.Header() != *want.Header() {
			t.Fatalf("header %+v, gosrt's %+v", *got.Header(), *want.Header())
		}
		if !bytes.Equal(got.Data(), want.Data()) || got.Len() != want.Len() {
			t.Fatalf("payload %d bytes, gosrt's %d", got.Len(), want.Len())
		}
		var m bytes.Buffer
		if err := got.Marshal(&m); err != nil || !bytes.Equal(m.Bytes(), b) {
			t.Fatalf("marshalled %x (%v), read %x", m.Bytes(), err, b)
		}
		got.Decommission()
		got.Decommission() // once only: the pool holds it once
		again := pool.parse(addr, b[:16])
		if again.Len() != 0 {
			t.Fatalf("a packet of the pool kept %d bytes", again.Len())
		}
		again.Decommission()
	})
}
