package srt

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"github.com/datarhei/gosrt/circular"
	"github.com/datarhei/gosrt/packet"
)

// rxPacket is a data packet received, for gosrt's receiver (it takes any
// packet.Packet): its payload in an array of its own, the packet reused
// from a pool once delivered and read (Decommission). gosrt's packets
// are an allocation each, their payload a bytes.Buffer from a pool of its
// own: two objects a datagram, about 250 a second a stream, for the
// collector to sweep.
type rxPacket struct {
	header packet.PacketHeader
	data   []byte // payload: arr's, or the heap's past it (SetData)
	pool   *sync.Pool
	live   bool // taken from the pool and not yet decommissioned
	arr    [maxMSS - 16]byte
}

// rxPool hands out rxPackets; a packet returns with Decommission, from
// any goroutine.
type rxPool struct{ p sync.Pool }

func newRxPool() *rxPool {
	rp := &rxPool{}
	rp.p.New = func() any { return &rxPacket{pool: &rp.p} }
	return rp
}

// parse returns a data packet of the datagram b (at least 16 bytes, not
// a control packet) from addr.
func (rp *rxPool) parse(addr net.Addr, b []byte) *rxPacket {
	p := rp.p.Get().(*rxPacket)
	p.live = true
	p.header = packet.PacketHeader{Addr: addr}
	p.unmarshalData(b)
	return p
}

// unmarshalData reads a data packet's header and payload (3.1) as gosrt's
// Unmarshal does; b has at least 16 bytes.
func (p *rxPacket) unmarshalData(b []byte) {
	h := &p.header
	h.IsControlPacket = false
	h.PacketSequenceNumber = circular.New(binary.BigEndian.Uint32(b[0:])&packet.MAX_SEQUENCENUMBER, packet.MAX_SEQUENCENUMBER)
	h.PacketPositionFlag = packet.PacketPosition((b[4] & 0b11000000) >> 6)
	h.OrderFlag = b[4]&0b00100000 != 0
	h.KeyBaseEncryptionFlag = packet.PacketEncryption((b[4] & 0b00011000) >> 3)
	h.RetransmittedPacketFlag = b[4]&0b00000100 != 0
	h.MessageNumber = binary.BigEndian.Uint32(b[4:]) & ^uint32(0b11111100<<24)
	h.Timestamp = binary.BigEndian.Uint32(b[8:])
	h.DestinationSocketId = binary.BigEndian.Uint32(b[12:])
	p.data = append(p.arr[:0], b[16:]...)
}

func (p *rxPacket) Header() *packet.PacketHeader { return &p.header }
func (p *rxPacket) Data() []byte                 { return p.data }
func (p *rxPacket) Len() uint64                  { return uint64(len(p.data)) }
func (p *rxPacket) SetData(b []byte)             { p.data = append(p.arr[:0], b...) }

// Decommission returns the packet to its pool, once.
func (p *rxPacket) Decommission() {
	if !p.live {
		return
	}
	p.live = false
	p.data = nil
	p.header.Addr = nil
	p.pool.Put(p)
}

// Clone copies the packet (from the pool).
func (p *rxPacket) Clone() packet.Packet {
	c := p.pool.Get().(*rxPacket)
	c.live = true
	c.header = p.header
	c.SetData(p.data)
	return c
}

// Unmarshal reads a data packet; a control packet is refused.
func (p *rxPacket) Unmarshal(b []byte) error {
	if len(b) < 16 {
		return errors.New("srt: data too short to unmarshal")
	}
	if b[0]&0x80 != 0 {
		return errors.New("srt: a control packet is not a data packet")
	}
	p.unmarshalData(b)
	return nil
}

// Marshal writes the packet as gosrt's does.
func (p *rxPacket) Marshal(w io.Writer) error {
	if w == nil {
		return errors.New("srt: invalid writer")
	}
	g := packet.NewPacket(p.header.Addr)
	defer g.Decommission()
	*g.Header() = p.header
	g.SetData(p.data)
	return g.Marshal(w)
}

// MarshalCIF and UnmarshalCIF do nothing, as for gosrt's data packets.
func (p *rxPacket) MarshalCIF(packet.CIF)         {}
func (p *rxPacket) UnmarshalCIF(packet.CIF) error { return nil }

func (p *rxPacket) String() string {
	h := &p.header
	return fmt.Sprintf("data packet: seq=%d ts=%d dest=%#08x msg=%d retransmitted=%v (%d bytes)",
		h.PacketSequenceNumber.Val(), h.Timestamp, h.DestinationSocketId, h.MessageNumber, h.RetransmittedPacketFlag, len(p.data))
}

func (p *rxPacket) Dump() string { return p.String() + "\n" + hex.Dump(p.data) }

var _ packet.Packet = (*rxPacket)(nil)
