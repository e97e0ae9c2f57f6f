package srt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/datarhei/gosrt/circular"
	"github.com/datarhei/gosrt/congestion"
	"github.com/datarhei/gosrt/congestion/live"
	"github.com/datarhei/gosrt/crypto"
	srtnet "github.com/datarhei/gosrt/net"
	"github.com/datarhei/gosrt/packet"
)

// The SRT transport: a listener for callers in live mode that only
// receive, built on gosrt's packet, crypto and congestion/live packages
// but not on its connections. One goroutine serves the socket: every
// tick it drains the socket with non-blocking reads, handles each
// datagram (handshakes, control, data into the connection's receiver),
// then ticks every connection's receiver, which acknowledges, reports
// losses and delivers the packets due; each connection's deliveries of a
// tick are handed to its reader as one batch. A connection costs no
// goroutine of the protocol, and a stream one wake of its reader a tick,
// or none once its reader pumps it on the socket's goroutine (lconn.pump).

// Rejection reasons of the handshake (the SRT specification's, table 7,
// and libsrt's access control extensions).
type rejection uint32

const (
	rejRogue       rejection = 1004
	rejBacklog     rejection = 1005
	rejClose       rejection = 1007
	rejVersion     rejection = 1008
	rejBadSecret   rejection = 1010
	rejUnsecure    rejection = 1011
	rejMessageAPI  rejection = 1012
	rejCongestion  rejection = 1013
	rejxBadRequest rejection = 1400
	rejxUnauth     rejection = 1401
	rejxOverload   rejection = 1402
	rejxForbidden  rejection = 1403
	rejxBadMode    rejection = 1405
	rejxDown       rejection = 1503
)

const (
	// fastTick is the tick while a connection recovers a loss: SRT's
	// period of acknowledgements. Otherwise a connection asks for the
	// longest tick that leaves a loss time to be recovered (lconn.tick),
	// within fastTick and maxTick: every wake of a Go process costs
	// (0.1–0.5 ms of CPU with the runtime's own threads on a small VM),
	// and a healthy stream needs no more, a loss being reported at the
	// first tick that sees it.
	fastTick = 10 * time.Millisecond
	maxTick  = 100 * time.Millisecond
	// ackEvery spaces the full acknowledgements, each answered by an
	// ACKACK (the round trip): SRT's 10 ms would be one a tick, two
	// datagrams a tick to write and read. The receiver still works out
	// what it has whole every tick, for the delivery; the sender, which
	// in live mode drops what is too late anyway, learns it a little later.
	ackEvery = 100 * time.Millisecond
	// peerIdle ends a connection from which nothing came for this long
	// (libsrt's SRTO_PEERIDLETIMEO).
	peerIdle = 5 * time.Second
	// maxHandshakes bounds the conclusions waiting for Accept or Reject.
	maxHandshakes = 256
	// maxDrain bounds the datagrams read in one tick, so that a flood
	// does not starve the ticks.
	maxDrain = 1 << 14
	// queueTicks bounds a connection's deliveries not yet read, in
	// ticks (batches): a reader that far behind is cut off.
	queueTicks = 128
	maxMSS     = 1500
	srtVersion = 0x010401
)

// errSlowReader cuts off a connection whose reader fell queueTicks behind.
var errSlowReader = errors.New("srt: the stream's reader fell behind")

// errDrained is a pumped connection's read once the tick's deliveries
// are all read: the pump returns until the next tick.
var errDrained = errors.New("srt: nothing more delivered this tick")

// maxBuffered bounds the packets a connection's receiver holds (those
// waiting for their delivery time and those past a gap), libsrt's
// default receive buffer (SRTO_RCVBUF, 8,192 packets, ~12 MB): a caller
// that sends timestamps far ahead, jumps its sequence numbers or asks for
// a latency it then outruns is cut off there rather than growing the
// process's memory at its sending rate. (A variable for the tests.)
var maxBuffered uint64 = 8192

// errBufferFull cuts off a connection whose receiver holds maxBuffered
// packets.
var errBufferFull = errors.New("srt: the receive buffer is full")

// errPeerIdle ends a connection from which nothing came for peerIdle.
var errPeerIdle = errors.New("srt: nothing received from the peer")

type hsKey struct {
	addr netip.AddrPort
	id   uint32
}

// listener is one UDP socket and its connections.
type listener struct {
	sock    *udpSocket // nil in fuzzing
	addr    net.Addr
	latency time.Duration
	cookie  *srtnet.SYNCookie
	backlog chan *request
	closed  chan struct{}
	done    chan struct{}
	once    sync.Once
	// write sends a datagram (to the socket, or elsewhere in tests).
	write func(b []byte, to netip.AddrPort)

	mu      sync.Mutex // guards the rest; held by the socket's goroutine while it works
	pending map[hsKey]*request
	byPeer  map[hsKey]*lconn
	conns   map[uint32]*lconn
	out     bytes.Buffer
	rx      *rxBatch
	rxp     *rxPool // the data packets
	shut    bool
	next    time.Duration // until the next tick
}

func newListener(addr net.Addr, latency time.Duration) (*listener, error) {
	cookie, err := srtnet.NewSYNCookie(addr.String(), nil)
	if err != nil {
		return nil, err
	}
	return &listener{
		addr:    addr,
		latency: latency,
		cookie:  cookie,
		backlog: make(chan *request, maxHandshakes),
		closed:  make(chan struct{}),
		done:    make(chan struct{}),
		pending: map[hsKey]*request{},
		byPeer:  map[hsKey]*lconn{},
		conns:   map[uint32]*lconn{},
		rx:      newRxBatch(),
		rxp:     newRxPool(),
	}, nil
}

// listen opens the UDP socket at addr and starts its goroutine.
func listen(addr string, latency time.Duration) (*listener, error) {
	sock, err := openUDP(addr)
	if err != nil {
		return nil, err
	}
	ln, err := newListener(sock.local, latency)
	if err != nil {
		sock.close()
		return nil, err
	}
	ln.sock = sock
	ln.write = sock.send
	go ln.run()
	return ln, nil
}

// run is the socket's goroutine. With no connection it sleeps until a
// datagram comes; with connections it works every tick.
func (ln *listener) run() {
	defer close(ln.done)
	for {
		ln.mu.Lock()
		idle := len(ln.conns) == 0
		next := ln.next
		ln.mu.Unlock()
		if idle {
			// Asleep until a datagram comes, or peerIdle: a caller
			// accepted meanwhile (on another goroutine) that then sends
			// nothing is cut off at the next look.
			if ln.sock.wait(peerIdle) != nil {
				return // closed
			}
			ln.drain()
			continue
		}
		if ln.sock.tick.sleep(next) != nil {
			return // closed
		}
		ln.drain()
	}
}

// drain reads the datagrams queued on the socket without waiting for
// more, then ticks.
func (ln *listener) drain() {
	ln.mu.Lock()
	defer ln.mu.Unlock()
	now := time.Now()
	for n := 0; n < maxDrain; {
		msgs, read := ln.rx.read(ln.sock.fd)
		n += read
		for _, m := range msgs {
			if len(m.data) > maxMSS {
				continue // larger than any SRT packet
			}
			at := now // the arrival, for round trips
			if t, ok := rxTime(m.oob); ok && t.Before(now) {
				at = t
			}
			ln.handle(m.data, m.from, at)
		}
		if read < rxBatchLen {
			break // drained
		}
	}
	ln.tick(now)
}

// rxMsg is a datagram read, valid until the next read.
type rxMsg struct {
	data []byte
	from netip.AddrPort
	oob  []byte // control messages: the arrival time
}

// handle takes one datagram. ln.mu is held.
func (ln *listener) handle(data []byte, from netip.AddrPort, now time.Time) {
	if len(data) < 16 {
		return
	}
	ctrl := data[0]&0x80 != 0
	dest := binary.BigEndian.Uint32(data[12:])
	if dest == 0 {
		if ctrl && packet.CtrlType(binary.BigEndian.Uint16(data)&0x7fff) == packet.CTRLTYPE_HANDSHAKE {
			ln.handshake(data, from, now)
		}
		return
	}
	c := ln.conns[dest]
	if c == nil || c.remote != from {
		return // unknown, or not from the peer (no address change in SRT's live mode)
	}
	c.lastRecv = now
	if !ctrl {
		c.data(ln.rxp.parse(c.remoteAddr, data))
		return
	}
	p, err := packet.NewPacketFromData(c.remoteAddr, data)
	if err != nil {
		return
	}
	c.control(p, now)
	p.Decommission()
}

// handshake answers an induction, and queues a conclusion for Accept.
func (ln *listener) handshake(data []byte, from netip.AddrPort, now time.Time) {
	p, err := packet.NewPacketFromData(net.UDPAddrFromAddrPort(from), data)
	if err != nil {
		return
	}
	defer p.Decommission()
	cif := &packet.CIFHandshake{}
	if !framed(p.Data()) || safely(func() error { return p.UnmarshalCIF(cif) }) != nil {
		return
	}
	switch cif.HandshakeType {
	case packet.HSTYPE_INDUCTION:
		// 4.3.1.1: the listener's answer, with its SYN cookie.
		cif.Version = 5
		cif.EncryptionField = 0
		cif.ExtensionField = 0x4A17
		cif.SynCookie = ln.cookie.Get(from.String())
		cif.PeerIP.FromNetAddr(ln.addr)
		cif.SRTHS, cif.SRTKM, cif.HasHS, cif.HasKM, cif.HasSID, cif.HasCongestionCtl = nil, nil, false, false, false, false
		ln.sendHandshake(from, cif.SRTSocketId, 0, cif)
	case packet.HSTYPE_CONCLUSION:
		key := hsKey{from, cif.SRTSocketId}
		if c := ln.byPeer[key]; c != nil {
			ln.writeTo(c.hsResp, from) // our answer was lost: again
			return
		}
		if ln.pending[key] != nil {
			return // being decided
		}
		if !ln.cookie.Verify(cif.SynCookie, from.String()) {
			ln.reject(from, cif, rejRogue)
			return
		}
		if r := checkConclusion(cif); r != 0 {
			ln.reject(from, cif, r)
			return
		}
		if ln.shut {
			ln.reject(from, cif, rejClose)
			return
		}
		req := &request{ln: ln, key: key, start: now, timestamp: p.Header().Timestamp, cif: cif}
		if cif.SRTKM != nil {
			if req.crypto, err = crypto.New(int(cif.SRTKM.KLen)); err != nil {
				ln.reject(from, cif, rejRogue)
				return
			}
		}
		if len(ln.pending) >= maxHandshakes {
			ln.reject(from, cif, rejBacklog)
			return
		}
		select {
		case ln.backlog <- req:
			ln.pending[key] = req
		default:
			ln.reject(from, cif, rejBacklog)
		}
	}
}

// framed reports whether a handshake's extensions (after its 48 bytes)
// are whole: gosrt's parser reads them unchecked and panics on a
// truncated one.
func framed(b []byte) bool {
	if len(b) < 48 {
		return true // too short: the parser refuses it
	}
	for b = b[48:]; len(b) > 0; {
		if len(b) < 4 {
			return false
		}
		n := 4 + int(binary.BigEndian.Uint16(b[2:]))*4
		if n > len(b) {
			return false
		}
		b = b[n:]
	}
	return true
}

// errParser is a panic of a parser of untrusted bytes, recovered.
var errParser = errors.New("srt: malformed packet")

// safely runs a library parser of untrusted bytes, turning a panic into
// an error.
func safely(f func() error) (err error) {
	defer func() {
		if recover() != nil {
			err = errParser
		}
	}()
	return f()
}

// checkConclusion checks a caller's conclusion: HSv5, live mode.
func checkConclusion(cif *packet.CIFHandshake) rejection {
	switch {
	case cif.Version != 5 || cif.SRTHS == nil:
		return rejVersion
	case cif.MaxTransmissionUnitSize > maxMSS:
		return rejRogue
	case !cif.SRTHS.SRTFlags.TSBPDSND || !cif.SRTHS.SRTFlags.TLPKTDROP || !cif.SRTHS.SRTFlags.PERIODICNAK || !cif.SRTHS.SRTFlags.REXMITFLG:
		return rejRogue
	case cif.SRTHS.SRTFlags.STREAM:
		return rejMessageAPI
	case cif.HasCongestionCtl && cif.CongestionCtl != "live":
		return rejCongestion
	}
	return 0
}

// reject answers a conclusion with a rejection. ln.mu is held.
func (ln *listener) reject(to netip.AddrPort, cif *packet.CIFHandshake, r rejection) {
	cif.HandshakeType = packet.HandshakeType(r)
	cif.SRTKM, cif.HasKM = nil, false
	ln.sendHandshake(to, cif.SRTSocketId, 0, cif)
}

// sendHandshake sends a handshake packet. ln.mu is held.
func (ln *listener) sendHandshake(to netip.AddrPort, dest, ts uint32, cif *packet.CIFHandshake) {
	p := packet.NewPacket(nil)
	h := p.Header()
	h.IsControlPacket = true
	h.ControlType = packet.CTRLTYPE_HANDSHAKE
	h.Timestamp = ts
	h.DestinationSocketId = dest
	p.MarshalCIF(cif)
	ln.sendPacket(p, to)
}

// sendPacket marshals and sends p, then frees it. ln.mu is held.
func (ln *listener) sendPacket(p packet.Packet, to netip.AddrPort) {
	ln.out.Reset()
	if p.Marshal(&ln.out) == nil {
		ln.writeTo(ln.out.Bytes(), to)
	}
	p.Decommission()
}

func (ln *listener) writeTo(b []byte, to netip.AddrPort) {
	if ln.write != nil {
		ln.write(b, to)
	}
}

// tick runs every connection's receiver and hands out its deliveries.
// ln.mu is held.
func (ln *listener) tick(now time.Time) {
	ln.next = maxTick
	for _, c := range ln.conns {
		if c.closing.Load() {
			ln.end(c, io.EOF, true)
			continue
		}
		if now.Sub(c.lastRecv) > peerIdle {
			ln.end(c, errPeerIdle, true)
			continue
		}
		c.recv.Tick(c.tsbpdBase + uint64(now.Sub(c.start).Microseconds()))
		if now.Before(c.recovering) {
			ln.next = fastTick
		}
		ln.next = min(ln.next, c.tick())
		if c.pump != nil {
			ln.pump(c)
			continue
		}
		if len(c.batch) == 0 {
			continue
		}
		select {
		case c.queue <- c.batch:
			c.batch = make([]packet.Packet, 0, cap(c.batch))
		default:
			ln.end(c, errSlowReader, true)
		}
	}
}

// pump hands c's deliveries of the tick to its pump, on the socket's
// goroutine; a failure or a panic of the pump ends the connection. Its
// work is bounded by the bytes delivered: the pump demuxes them and hands
// the units to a sink that never blocks (Server). ln.mu is held.
func (ln *listener) pump(c *lconn) {
	if len(c.batch) == 0 && c.pos == len(c.cur) {
		return
	}
	c.cur = append(c.cur, c.batch...)
	c.batch = c.batch[:0]
	err := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("srt: the stream's pump panicked: %v", r)
			}
		}()
		return c.pump()
	}()
	if err != nil {
		ln.end(c, err, true)
	}
}

// end removes a connection, telling the peer when shutdown. ln.mu is held.
func (ln *listener) end(c *lconn, err error, shutdown bool) {
	if ln.conns[c.id] != c {
		return
	}
	delete(ln.conns, c.id)
	delete(ln.byPeer, hsKey{c.remote, c.peerID})
	if shutdown {
		p := c.ctrlPacket(packet.CTRLTYPE_SHUTDOWN, time.Now())
		p.MarshalCIF(&packet.CIFShutdown{})
		ln.sendPacket(p, c.remote)
	}
	for _, p := range c.batch {
		p.Decommission()
	}
	c.batch = nil
	if c.pump != nil {
		// The socket's goroutine reads it: what it had not read goes too.
		for _, p := range c.cur {
			if p != nil {
				p.Decommission()
			}
		}
		c.cur, c.rest, c.pump = nil, nil, nil
	}
	c.err.Store(&err)
	close(c.gone)
}

// accept returns the next conclusion to decide.
func (ln *listener) accept() (*request, error) {
	select {
	case r := <-ln.backlog:
		return r, nil
	case <-ln.closed:
		return nil, ErrServerClosed
	}
}

// close ends every connection and the socket.
func (ln *listener) close() {
	ln.once.Do(func() {
		ln.mu.Lock()
		ln.shut = true
		for _, c := range ln.conns {
			ln.end(c, ErrServerClosed, true)
		}
		for k, r := range ln.pending {
			delete(ln.pending, k)
			ln.reject(k.addr, r.cif, rejClose)
		}
		ln.mu.Unlock()
		close(ln.closed)
		if ln.sock != nil {
			ln.sock.interrupt()
			<-ln.done
			ln.sock.close()
		}
	})
}

// request is a caller's conclusion awaiting Accept or Reject.
type request struct {
	ln         *listener
	key        hsKey
	start      time.Time
	timestamp  uint32
	cif        *packet.CIFHandshake
	crypto     crypto.Crypto
	passphrase string
}

// RemoteAddr is the caller's address.
func (r *request) RemoteAddr() net.Addr { return net.UDPAddrFromAddrPort(r.key.addr) }

// StreamID is the caller's streamid.
func (r *request) StreamID() string { return r.cif.StreamId }

// IsEncrypted tells whether the caller sent key material.
func (r *request) IsEncrypted() bool { return r.crypto != nil }

// SetPassphrase unwraps the caller's key with passphrase; an error means
// the passphrases differ.
func (r *request) SetPassphrase(passphrase string) error {
	if r.crypto == nil {
		return errors.New("srt: the caller does not encrypt")
	}
	if err := safely(func() error { return r.crypto.UnmarshalKM(r.cif.SRTKM, passphrase) }); err != nil {
		return err
	}
	r.passphrase = passphrase
	return nil
}

// Reject refuses the caller with reason.
func (r *request) Reject(reason rejection) {
	ln := r.ln
	ln.mu.Lock()
	defer ln.mu.Unlock()
	if ln.pending[r.key] != r {
		return
	}
	delete(ln.pending, r.key)
	ln.reject(r.key.addr, r.cif, reason)
}

// Accept answers the caller's conclusion and returns the connection.
func (r *request) Accept() (*lconn, error) {
	if r.crypto != nil && r.passphrase == "" {
		r.Reject(rejBadSecret)
		return nil, errors.New("srt: passphrase missing")
	}
	ln := r.ln
	ln.mu.Lock()
	defer ln.mu.Unlock()
	if ln.pending[r.key] != r {
		return nil, ErrServerClosed // cut off during the handshake
	}
	delete(ln.pending, r.key)
	var id uint32
	for id == 0 || ln.conns[id] != nil {
		id = rand.Uint32() & 0x7fffffff
	}
	cif := r.cif
	hs := cif.SRTHS
	// The latency: the most of both sides' (4.4).
	lat := uint16(min(r.ln.latency.Milliseconds(), math.MaxUint16))
	recvDelay, sendDelay := max(lat, hs.SendTSBPDDelay), max(lat, hs.RecvTSBPDDelay)
	c := &lconn{
		ln:         ln,
		id:         id,
		peerID:     cif.SRTSocketId,
		remote:     r.key.addr,
		remoteAddr: net.UDPAddrFromAddrPort(r.key.addr),
		start:      r.start,
		tsbpdBase:  uint64(r.timestamp),
		tsbpdDelay: uint64(recvDelay) * 1000,
		crypto:     r.crypto,
		passphrase: r.passphrase,
		lastRecv:   time.Now(),
		queue:      make(chan []packet.Packet, queueTicks),
		gone:       make(chan struct{}),
		nextAck:    1,
		rtt:        100_000,
		rttVar:     50_000,
	}
	c.rttNs.Store(int64(100 * time.Millisecond))
	c.recv = live.NewReceiver(live.ReceiveConfig{
		InitialSequenceNumber: cif.InitialPacketSequenceNumber,
		PeriodicACKInterval:   10_000,
		PeriodicNAKInterval:   20_000,
		OnSendACK:             c.sendACK,
		OnSendNAK:             c.sendNAK,
		OnDeliver:             func(p packet.Packet) { c.batch = append(c.batch, p) },
	})
	cif.SRTSocketId = id
	cif.SynCookie = 0
	cif.PeerIP.FromNetAddr(ln.addr)
	hs.SRTVersion = srtVersion
	hs.SRTFlags.TSBPDSND, hs.SRTFlags.TSBPDRCV, hs.SRTFlags.CRYPT = true, true, true
	hs.SRTFlags.TLPKTDROP, hs.SRTFlags.PERIODICNAK, hs.SRTFlags.REXMITFLG = true, true, true
	hs.SRTFlags.STREAM, hs.SRTFlags.PACKET_FILTER = false, false
	hs.RecvTSBPDDelay, hs.SendTSBPDDelay = recvDelay, sendDelay
	p := packet.NewPacket(nil)
	h := p.Header()
	h.IsControlPacket = true
	h.ControlType = packet.CTRLTYPE_HANDSHAKE
	h.DestinationSocketId = c.peerID
	p.MarshalCIF(cif)
	ln.out.Reset()
	if err := p.Marshal(&ln.out); err != nil {
		p.Decommission()
		return nil, err
	}
	p.Decommission()
	c.hsResp = bytes.Clone(ln.out.Bytes())
	if ln.shut {
		return nil, ErrServerClosed
	}
	ln.conns[id] = c
	ln.byPeer[hsKey{c.remote, c.peerID}] = c
	ln.writeTo(c.hsResp, c.remote)
	return c, nil
}

// lconn is an accepted caller. The socket's goroutine owns the protocol
// state, under ln.mu; the reader owns cur, pos and rest until it hands
// them over with a pump (handOver), the socket's goroutine afterwards.
type lconn struct {
	ln         *listener
	id, peerID uint32
	remote     netip.AddrPort
	remoteAddr net.Addr
	start      time.Time
	tsbpdBase  uint64
	tsbpdDelay uint64
	wrap       bool
	wrapOffset uint64
	crypto     crypto.Crypto
	passphrase string
	recv       congestion.Receiver
	lastRecv   time.Time
	recovering time.Time // until when to tick fast: a loss was reported
	hsResp     []byte
	batch      []packet.Packet
	rtt        float64 // microseconds
	rttVar     float64
	nextAck    uint32
	lastAck    time.Time // of the last full ACK sent
	acks       [16]ackSent

	// pump, once set, reads the deliveries on the socket's goroutine at
	// each tick, with readNow (handOver): no reader to wake.
	pump func() error

	rttNs   atomic.Int64
	queue   chan []packet.Packet
	gone    chan struct{}
	err     atomic.Pointer[error]
	closing atomic.Bool // Close found ln.mu taken: the next tick ends it

	cur  []packet.Packet // the reader's packets; those before pos are read
	pos  int
	rest []byte // of cur[pos-1]
}

type ackSent struct {
	n uint32
	t time.Time
}

// data takes a data packet into the receiver.
func (c *lconn) data(p packet.Packet) {
	h := p.Header()
	if h.MessageNumber == 0 {
		p.Decommission() // a packet filter's (FEC) control packet
		return
	}
	// 4.5.1.1: the timestamps wrap every 2^32 µs.
	const wrapEdge = 30_000_000
	if !c.wrap {
		if h.Timestamp > packet.MAX_TIMESTAMP-wrapEdge {
			c.wrap = true
		}
	} else if h.Timestamp >= wrapEdge && h.Timestamp <= 2*wrapEdge {
		c.wrap = false
		c.wrapOffset += uint64(packet.MAX_TIMESTAMP) + 1
	}
	off := c.wrapOffset
	if c.wrap && h.Timestamp < wrapEdge {
		off += uint64(packet.MAX_TIMESTAMP) + 1
	}
	h.PktTsbpdTime = c.tsbpdBase + off + uint64(h.Timestamp) + c.tsbpdDelay
	if c.crypto != nil && h.KeyBaseEncryptionFlag != 0 {
		_ = c.crypto.EncryptOrDecryptPayload(p.Data(), h.KeyBaseEncryptionFlag, h.PacketSequenceNumber.Val())
	}
	c.recv.Push(p)
	if c.recv.Stats().PktBuf > maxBuffered {
		c.ln.end(c, errBufferFull, true)
	}
}

// control answers a control packet.
func (c *lconn) control(p packet.Packet, now time.Time) {
	h := p.Header()
	switch h.ControlType {
	case packet.CTRLTYPE_KEEPALIVE:
		c.ln.sendPacket(c.ctrlPacket(packet.CTRLTYPE_KEEPALIVE, now), c.remote)
	case packet.CTRLTYPE_SHUTDOWN:
		c.ln.end(c, io.EOF, false)
	case packet.CTRLTYPE_ACKACK:
		for i := range c.acks {
			a := &c.acks[i]
			if a.n != h.TypeSpecific || a.n == 0 {
				continue
			}
			// 4.10: the round-trip time.
			last := float64(now.Sub(a.t).Microseconds())
			c.rtt = c.rtt*0.875 + last*0.125
			c.rttVar = c.rttVar*0.75 + math.Abs(c.rtt-last)*0.25
			c.rttNs.Store(int64(c.rtt * 1000))
			c.recv.SetNAKInterval(uint64(max((c.rtt+4*c.rttVar)/2, 20_000)))
			a.n = 0
			break
		}
	case packet.CTRLTYPE_USER:
		if h.SubType == packet.EXTTYPE_KMREQ && c.crypto != nil {
			// The caller's next key (6.1.6): unwrap and confirm.
			km := &packet.CIFKeyMaterialExtension{}
			if safely(func() error { return p.UnmarshalCIF(km) }) != nil ||
				safely(func() error { return c.crypto.UnmarshalKM(km, c.passphrase) }) != nil {
				return
			}
			r := c.ctrlPacket(packet.CTRLTYPE_USER, now)
			r.Header().SubType = packet.EXTTYPE_KMRSP
			r.MarshalCIF(km)
			c.ln.sendPacket(r, c.remote)
		}
	}
}

// tick is the tick c asks for while it recovers no loss: the latency less
// what recovering a loss takes once it is seen (below), so that a packet
// lost just after a tick is still recovered in time; at least a third of
// the latency (then a loss is seen with two thirds left), within fastTick
// and maxTick. A loss is seen at the first tick after the next packet
// comes; then the NAK, the retransmission a round trip later, read at a
// fast tick; if that is lost too, the periodic NAK (max(RTO/2, 20 ms))
// and another round trip. On loopback or a LAN (a round trip of a
// millisecond) at SRT's default 120 ms that is a tick of about 80 ms
// against 40 ms: every wake of the socket's goroutine costs CPU
// (fastTick). The round trip is 100 ms until measured, and then so is
// the tick a third of the latency.
func (c *lconn) tick() time.Duration {
	lat := time.Duration(c.tsbpdDelay) * time.Microsecond
	rto := time.Duration(c.rtt+4*c.rttVar) * time.Microsecond
	heal := max(rto/2, 20*time.Millisecond) + rto + 2*fastTick
	return min(max(lat-heal, lat/3, fastTick), maxTick)
}

// ctrlPacket makes a control packet for the peer.
func (c *lconn) ctrlPacket(t packet.CtrlType, now time.Time) packet.Packet {
	p := packet.NewPacket(nil)
	h := p.Header()
	h.IsControlPacket = true
	h.ControlType = t
	h.Timestamp = uint32(now.Sub(c.start).Microseconds())
	h.DestinationSocketId = c.peerID
	return p
}

// sendACK is the receiver's acknowledgement (4.8.1), under ln.mu.
func (c *lconn) sendACK(seq circular.Number, lite bool) {
	now := time.Now()
	if !lite && now.Sub(c.lastAck) < ackEvery {
		return
	}
	p := c.ctrlPacket(packet.CTRLTYPE_ACK, now)
	cif := packet.CIFACK{LastACKPacketSequenceNumber: seq, IsLite: lite}
	if !lite {
		c.lastAck = now
		pps, bps, capacity := c.recv.PacketRate()
		cif.RTT, cif.RTTVar = uint32(c.rtt), uint32(c.rttVar)
		cif.AvailableBufferSize = 25600
		cif.PacketsReceivingRate, cif.EstimatedLinkCapacity, cif.ReceivingRate = uint32(pps), uint32(capacity), uint32(bps)
		n := c.nextAck
		c.nextAck++
		if c.nextAck == 0 {
			c.nextAck = 1
		}
		p.Header().TypeSpecific = n
		c.acks[n%uint32(len(c.acks))] = ackSent{n, now}
	}
	p.MarshalCIF(&cif)
	c.ln.sendPacket(p, c.remote)
}

// sendNAK is the receiver's loss report (4.8.2), under ln.mu.
func (c *lconn) sendNAK(from, to circular.Number) {
	now := time.Now()
	c.recovering = now.Add(time.Duration(c.tsbpdDelay) * time.Microsecond)
	c.ln.next = fastTick
	p := c.ctrlPacket(packet.CTRLTYPE_NAK, now)
	p.MarshalCIF(&packet.CIFNAK{LostPacketSequenceNumber: []circular.Number{from, to}})
	c.ln.sendPacket(p, c.remote)
}

// Read reads the stream: the payloads delivered, in order.
func (c *lconn) Read(b []byte) (int, error) { return c.read(b, true) }

// readNow reads what the ticks delivered so far, then fails with
// errDrained: the pump's read, on the socket's goroutine.
func (c *lconn) readNow(b []byte) (int, error) { return c.read(b, false) }

func (c *lconn) read(b []byte, wait bool) (int, error) {
	for len(c.rest) == 0 {
		if c.pos > 0 && c.cur[c.pos-1] != nil {
			c.cur[c.pos-1].Decommission()
			c.cur[c.pos-1] = nil
		}
		if c.pos == len(c.cur) {
			if !wait {
				c.cur, c.pos = c.cur[:0], 0
				return 0, errDrained
			}
			var batch []packet.Packet
			select {
			case batch = <-c.queue:
			default:
				select {
				case batch = <-c.queue:
				case <-c.gone:
					select {
					case batch = <-c.queue: // what came before the end
					default:
						return 0, *c.err.Load()
					}
				}
			}
			c.cur, c.pos = batch, 0
		}
		c.rest = c.cur[c.pos].Data()
		c.pos++
	}
	n := copy(b, c.rest)
	c.rest = c.rest[n:]
	return n, nil
}

// handOver makes pump read the connection from the next tick on, on the
// socket's goroutine, with readNow: the reader's goroutine no longer
// wakes for each tick's deliveries. The batches queued for the reader
// are read first. It reports false when the connection has ended. pump
// must not block: the socket and every connection on it wait for it.
func (c *lconn) handOver(pump func() error) bool {
	ln := c.ln
	ln.mu.Lock()
	defer ln.mu.Unlock()
	if ln.conns[c.id] != c {
		return false
	}
	for {
		select {
		case b := <-c.queue:
			c.cur = append(c.cur, b...)
		default:
			c.pump = pump
			return true
		}
	}
}

// Close ends the connection, telling the peer. Safe from any goroutine,
// the pump's too: when ln.mu is taken, the connection ends at the next
// tick.
func (c *lconn) Close() error {
	c.closing.Store(true)
	if c.ln.mu.TryLock() {
		c.ln.end(c, io.EOF, true)
		c.ln.mu.Unlock()
	}
	return nil
}

// Stats measures the connection, from any goroutine.
func (c *lconn) Stats() LinkStats {
	st := c.recv.Stats()
	return LinkStats{
		RTT:           time.Duration(c.rttNs.Load()),
		Received:      st.Pkt,
		Lost:          st.PktLoss,
		Retransmitted: st.PktRetrans,
		Dropped:       st.PktDrop,
	}
}

func (r rejection) String() string { return fmt.Sprintf("REJ %d", uint32(r)) }
