package srt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	gosrt "github.com/datarhei/gosrt"
	"github.com/datarhei/gosrt/circular"
	"github.com/datarhei/gosrt/packet"

	"github.com/onair/onair/internal/testload"
)

// acceptOne accepts the listener's first caller, on a goroutine of its
// own as the server does.
func acceptOne(t *testing.T, ln *listener) <-chan *lconn {
	accepted := make(chan *lconn, 1)
	go func() {
		req, err := ln.accept()
		if err != nil {
			return
		}
		c, err := req.Accept()
		if err != nil {
			t.Error(err)
		}
		accepted <- c
	}()
	return accepted
}

// A reader that stops reading is cut off once its deliveries fill the
// queue, and the caller is told; the listener goes on serving.
func TestListenerSlowReaderCut(t *testing.T) {
	ln, err := listen("127.0.0.1:0", DefaultLatency)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.close()
	accepted := acceptOne(t, ln) // and never read
	caller, err := dial(ln.addr.String(), "good")
	if err != nil {
		t.Fatal(err)
	}
	defer caller.Close()
	c := <-accepted
	payload := make([]byte, 1316)
	tick := time.NewTicker(2 * time.Millisecond) // a steady publisher's pace
	defer tick.Stop()
	deadline := time.After(testload.Patience)
send:
	for {
		select {
		case <-c.gone:
			break send
		case <-deadline:
			t.Fatal("the unread connection was never cut off")
		case <-tick.C:
			if _, err := caller.Write(payload); err != nil {
				break send // told of the shutdown already
			}
		}
	}
	if _, err := io.Copy(io.Discard, c); !errors.Is(err, errSlowReader) {
		t.Errorf("read after the cut: %v", err)
	}
	// The caller hears of it.
	testload.Poll(t, "the caller closed", func() error {
		if _, err := caller.Write(payload); err == nil {
			return errors.New("still writable")
		}
		return nil
	})
}

// A caller whose packets wait longer than the receive buffer holds (a
// latency of 30 s it then fills) is cut off at maxBuffered packets, and
// told; the listener goes on serving.
func TestListenerBufferBounded(t *testing.T) {
	keep := maxBuffered
	maxBuffered = 64
	t.Cleanup(func() { maxBuffered = keep })
	ln, err := listen("127.0.0.1:0", DefaultLatency)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.close()
	accepted := acceptOne(t, ln)
	cfg := gosrt.DefaultConfig()
	cfg.StreamId = "good"
	cfg.PeerLatency = 30 * time.Second
	caller, err := gosrt.Dial("srt", ln.addr.String(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer caller.Close()
	c := <-accepted
	read := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, c)
		read <- err
	}()
	payload := make([]byte, 1316)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(testload.Patience)
	sent := 0
send:
	for {
		select {
		case <-c.gone:
			break send
		case <-deadline:
			t.Fatalf("never cut off after %d packets held 30 s", sent)
		case <-tick.C:
			if _, err := caller.Write(payload); err != nil {
				break send
			}
			sent++
		}
	}
	if err := <-read; !errors.Is(err, errBufferFull) {
		t.Errorf("read after the cut: %v", err)
	}
	if sent > 4*int(maxBuffered) {
		t.Errorf("cut off after %d packets sent, past %d buffered", sent, maxBuffered)
	}
}

// A caller accepted while the listener sleeps (no other connection) that
// then sends nothing is cut off after peerIdle: the sleep ends at
// peerIdle too.
func TestListenerSilentCallerCut(t *testing.T) {
	ln, err := listen("127.0.0.1:0", DefaultLatency)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.close()
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	from := udp.LocalAddr().(*net.UDPAddr).AddrPort()
	to := ln.addr.(*net.UDPAddr)
	if _, err := udp.WriteToUDP(conclusion(ln, from, 7), to); err != nil {
		t.Fatal(err)
	}
	req, err := ln.accept()
	if err != nil {
		t.Fatal(err)
	}
	c, err := req.Accept()
	if err != nil {
		t.Fatal(err)
	}
	// The caller says nothing more.
	start := time.Now()
	select {
	case <-c.gone:
	case <-time.After(peerIdle + testload.Patience):
		t.Fatalf("a silent caller still connected after %s", time.Since(start))
	}
	if _, err := io.Copy(io.Discard, c); !errors.Is(err, errPeerIdle) {
		t.Errorf("read after the cut: %v", err)
	}
}

// A caller with the passphrase is read in clear; with the wrong one it is
// refused with REJ_BADSECRET.
func TestServerPassphrase(t *testing.T) {
	s := &Server{Passphrase: "0123456789ab", AdmissionTimeout: testload.Patience}
	sinks := startServer(t, s)
	addr := s.Addr().String()
	cfg := gosrt.DefaultConfig()
	cfg.StreamId, cfg.Passphrase = "good", "wrong-secret-x"
	if _, err := gosrt.Dial("srt", addr, cfg); !isRejection(err, gosrt.REJ_BADSECRET) {
		t.Errorf("wrong passphrase: %v", err)
	}
	if _, err := dial(addr, "good"); !isRejection(err, gosrt.REJ_UNSECURE) {
		t.Errorf("no passphrase: %v", err)
	}
	cfg.Passphrase = s.Passphrase
	c, err := gosrt.Dial("srt", addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sendAndExpectUnits(t, c, sinks)
}

// FuzzListener feeds arbitrary datagrams to a listener with one accepted
// connection (destination socket 1 stands for it), read by a reader or,
// for inputs of odd length, pumped on the listener's goroutine: nothing
// panics, and the pending handshakes and connections stay bounded.
func FuzzListener(f *testing.F) {
	from := netip.MustParseAddrPort("192.0.2.1:4000")
	ln0, _ := newListener(net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:9000")), DefaultLatency)
	f.Add(frame(conclusion(ln0, from, 7)))
	f.Add(frame(induction()))
	f.Add(frame(dataPacket(1, 5, []byte("payload"))))
	f.Add(append(frame(ctrlPacket(1, packet.CTRLTYPE_ACKACK, 1, nil)), frame(ctrlPacket(1, packet.CTRLTYPE_KEEPALIVE, 0, nil))...))
	f.Add(frame(ctrlPacket(1, packet.CTRLTYPE_USER, 0, make([]byte, 40))))
	f.Add(frame(ctrlPacket(1, packet.CTRLTYPE_SHUTDOWN, 0, make([]byte, 4))))
	f.Fuzz(func(t *testing.T, in []byte) {
		ln, err := newListener(net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:9000")), DefaultLatency)
		if err != nil {
			t.Fatal(err)
		}
		ln.cookie = ln0.cookie
		var sent int
		ln.write = func(b []byte, _ netip.AddrPort) { sent += len(b) }
		now := time.Now()
		ln.mu.Lock()
		ln.handle(conclusion(ln, from, 1), from, now)
		ln.mu.Unlock()
		req := <-ln.backlog
		c, err := req.Accept()
		if err != nil {
			t.Fatal(err)
		}
		if len(in)%2 == 1 {
			// Read on the listener's goroutine, as once a stream's
			// tracks are decided.
			c.handOver(func() error {
				var b [188]byte
				for {
					if _, err := c.readNow(b[:]); err != nil {
						if err == errDrained {
							return nil
						}
						return err
					}
				}
			})
		}
		ln.mu.Lock()
		defer ln.mu.Unlock()
		for len(in) >= 2 {
			n := int(binary.BigEndian.Uint16(in))
			in = in[2:]
			n = min(n, len(in))
			d := bytes.Clone(in[:n])
			in = in[n:]
			if len(d) >= 16 && binary.BigEndian.Uint32(d[12:]) == 1 {
				binary.BigEndian.PutUint32(d[12:], c.id)
			}
			src := from
			if len(d) > 0 && d[len(d)-1]&1 == 1 {
				src = netip.AddrPortFrom(from.Addr(), uint16(d[len(d)-1])) // other callers
			}
			ln.handle(d, src, now)
			now = now.Add(3 * time.Millisecond)
			ln.tick(now)
		}
		if len(ln.pending) > maxHandshakes || len(ln.conns) > 1 {
			t.Fatalf("pending %d, conns %d", len(ln.pending), len(ln.conns))
		}
	})
}

func frame(b []byte) []byte {
	return append(binary.BigEndian.AppendUint16(nil, uint16(len(b))), b...)
}

func marshal(p packet.Packet) []byte {
	var b bytes.Buffer
	p.Marshal(&b)
	p.Decommission()
	return b.Bytes()
}

func induction() []byte {
	p := packet.NewPacket(nil)
	p.Header().IsControlPacket = true
	p.Header().ControlType = packet.CTRLTYPE_HANDSHAKE
	p.MarshalCIF(&packet.CIFHandshake{IsRequest: true, Version: 4, ExtensionField: 2,
		HandshakeType: packet.HSTYPE_INDUCTION, SRTSocketId: 9, MaxTransmissionUnitSize: 1500,
		InitialPacketSequenceNumber: circular.New(0, packet.MAX_SEQUENCENUMBER)})
	return marshal(p)
}

// conclusion is a caller's HSv5 conclusion to ln from addr.
func conclusion(ln *listener, from netip.AddrPort, id uint32) []byte {
	p := packet.NewPacket(nil)
	p.Header().IsControlPacket = true
	p.Header().ControlType = packet.CTRLTYPE_HANDSHAKE
	cif := &packet.CIFHandshake{IsRequest: true, Version: 5, HandshakeType: packet.HSTYPE_CONCLUSION,
		SRTSocketId: id, SynCookie: ln.cookie.Get(from.String()), MaxTransmissionUnitSize: 1500,
		MaxFlowWindowSize: 8192, InitialPacketSequenceNumber: circular.New(5, packet.MAX_SEQUENCENUMBER),
		HasHS: true, SRTHS: &packet.CIFHandshakeExtension{SRTVersion: 0x010500, RecvTSBPDDelay: 120, SendTSBPDDelay: 120},
		HasSID: true, StreamId: "good"}
	f := &cif.SRTHS.SRTFlags
	f.TSBPDSND, f.TSBPDRCV, f.TLPKTDROP, f.PERIODICNAK, f.REXMITFLG = true, true, true, true, true
	p.MarshalCIF(cif)
	return marshal(p)
}

func dataPacket(dest, seq uint32, payload []byte) []byte {
	p := packet.NewPacket(nil)
	p.Header().PacketSequenceNumber = circular.New(seq, packet.MAX_SEQUENCENUMBER)
	p.Header().DestinationSocketId = dest
	p.SetData(payload)
	return marshal(p)
}

func ctrlPacket(dest uint32, t packet.CtrlType, typeSpecific uint32, cif []byte) []byte {
	p := packet.NewPacket(nil)
	h := p.Header()
	h.IsControlPacket, h.ControlType, h.TypeSpecific, h.DestinationSocketId = true, t, typeSpecific, dest
	if t == packet.CTRLTYPE_USER {
		h.SubType = packet.EXTTYPE_KMREQ
	}
	p.SetData(cif)
	return marshal(p)
}
