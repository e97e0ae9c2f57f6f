package srt

import (
	"bytes"
	"errors"
	"io"

	"github.com/bluenviron/mediacommon/v2/pkg/codecs/h264"
)

// The data path of the demuxer, once mediacommon's reader has found the
// program map and the tracks: the PES of the two PIDs OnAir packages,
// reassembled from 188-byte transport packets into buffers reused from
// one PES to the next, and H.264 access units split at their start codes
// with bytes.Index. mediacommon's reader does the same through go-astits
// and a byte-by-byte Annex-B scan, with several allocations a packet: for
// a 2.5 Mb/s stream that was as much CPU as the HLS packaging of it.

const (
	tsPacket = 188
	tsSync   = 0x47
	// maxPES bounds the bytes a PES may gather (mediacommon's bound of an
	// H.264 access unit); a longer one is dropped as damaged.
	maxPES = h264.MaxAccessUnitSize
)

// pes is the PES being gathered on one PID.
type pes struct {
	pid      uint16
	data     []byte
	pts, dts int64
	open     bool // a PES start was read and its timestamps kept
	cc       int  // continuity counter of the last packet, -1 for none
	length   int  // declared length of the PES payload (0: until the next start)
	emit     func(pts, dts int64, data []byte) error
}

// tsReader reads transport packets from r and hands each complete PES of
// its PIDs to that PID's emit; the bytes passed are reused after emit
// returns.
type tsReader struct {
	r      io.Reader
	buf    []byte
	pos    int
	pids   []*pes
	onErr  func()
	synced bool
}

func newTSReader(r io.Reader, onErr func()) *tsReader {
	return &tsReader{r: r, buf: make([]byte, 0, 8*1316), onErr: onErr, synced: true}
}

// track makes PID pid's PES go to emit.
func (t *tsReader) track(pid uint16, emit func(pts, dts int64, data []byte) error) {
	t.pids = append(t.pids, &pes{pid: pid, cc: -1, emit: emit})
}

// fill reads until at least one whole packet is buffered.
func (t *tsReader) fill() error {
	if t.pos > 0 {
		n := copy(t.buf, t.buf[t.pos:])
		t.buf, t.pos = t.buf[:n], 0
	}
	for len(t.buf) < tsPacket {
		n, err := t.r.Read(t.buf[len(t.buf):cap(t.buf)])
		t.buf = t.buf[:len(t.buf)+n]
		if err != nil && len(t.buf) < tsPacket {
			if errors.Is(err, io.EOF) && len(t.buf) > 0 {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		if n == 0 && err == nil {
			continue
		}
	}
	return nil
}

// Read reads and handles transport packets until one completes a PES (or
// the reader fails), and returns emit's error or the reader's.
func (t *tsReader) Read() error {
	for {
		if len(t.buf)-t.pos < tsPacket {
			if err := t.fill(); err != nil {
				return err
			}
		}
		b := t.buf[t.pos:]
		if b[0] != tsSync {
			// Lost sync (garbage, or a datagram cut short): skip to the
			// next sync byte, one decode error for the whole gap.
			if t.synced {
				t.synced = false
				t.onErr()
			}
			i := bytes.IndexByte(b[1:], tsSync)
			if i < 0 {
				t.pos = len(t.buf)
			} else {
				t.pos += 1 + i
			}
			continue
		}
		t.synced = true
		t.pos += tsPacket
		done, err := t.packet(b[:tsPacket])
		if err != nil || done {
			return err
		}
	}
}

// packet handles one transport packet; done is true when it completed a
// PES (emitted).
func (t *tsReader) packet(b []byte) (done bool, err error) {
	if b[1]&0x80 != 0 { // transport_error_indicator
		t.onErr()
		return false, nil
	}
	pid := uint16(b[1]&0x1f)<<8 | uint16(b[2])
	var p *pes
	for _, q := range t.pids {
		if q.pid == pid {
			p = q
			break
		}
	}
	if p == nil {
		return false, nil
	}
	start := b[1]&0x40 != 0
	afc := b[3] >> 4 & 3
	cc := int(b[3] & 0x0f)
	payload := b[4:]
	if afc&2 != 0 {
		n := int(b[4])
		if 1+n > len(payload) {
			t.onErr()
			return false, nil
		}
		payload = payload[1+n:]
	}
	if afc&1 == 0 {
		return false, nil // adaptation field only: the counter does not move
	}
	if p.cc >= 0 && !start && cc != (p.cc+1)&0x0f {
		if cc == p.cc {
			return false, nil // a duplicate packet
		}
		// A packet lost for good: the PES it belonged to is damaged.
		if p.open {
			t.onErr()
		}
		p.open, p.data = false, p.data[:0]
	}
	p.cc = cc
	if start {
		switch {
		case p.open && p.length == 0 && len(p.data) > 0:
			if err := t.complete(p); err != nil {
				return true, err
			}
			done = true
		case p.open:
			t.onErr() // shorter than its header said
		}
		if !t.begin(p, payload) {
			t.onErr()
		}
		return done || t.full(p), t.flushFull(p)
	}
	if !p.open {
		return done, nil // the middle of a PES whose start was lost
	}
	if len(p.data)+len(payload) > maxPES {
		t.onErr()
		p.open, p.data = false, p.data[:0]
		return done, nil
	}
	p.data = append(p.data, payload...)
	return t.full(p), t.flushFull(p)
}

// full reports whether p has its declared length.
func (t *tsReader) full(p *pes) bool {
	return p.open && p.length > 0 && len(p.data) >= p.length
}

// flushFull emits p when it has its declared length.
func (t *tsReader) flushFull(p *pes) error {
	if !t.full(p) {
		return nil
	}
	p.data = p.data[:p.length]
	return t.complete(p)
}

// complete emits p's data and closes it.
func (t *tsReader) complete(p *pes) error {
	p.open = false
	data := p.data
	p.data = p.data[:0]
	return p.emit(p.pts, p.dts, data)
}

// begin parses the PES header at the start of payload and opens p; false
// when the header is damaged or has no PTS (p stays closed).
func (t *tsReader) begin(p *pes, b []byte) bool {
	p.open, p.data = false, p.data[:0]
	// packet_start_code_prefix, stream_id, PES_packet_length, two bytes
	// of flags, PES_header_data_length.
	if len(b) < 9 || b[0] != 0 || b[1] != 0 || b[2] != 1 {
		return false
	}
	length := int(b[4])<<8 | int(b[5])
	flags, hlen := b[7], int(b[8])
	if b[6]&0xc0 != 0x80 || 9+hlen > len(b) {
		return false
	}
	switch flags >> 6 {
	case 2: // PTS only
		if hlen < 5 {
			return false
		}
		p.pts = tsTime(b[9:])
		p.dts = p.pts
	case 3: // PTS and DTS
		if hlen < 10 {
			return false
		}
		p.pts, p.dts = tsTime(b[9:]), tsTime(b[14:])
	default:
		return false
	}
	p.length = 0
	if length > 0 {
		if p.length = length - 3 - hlen; p.length <= 0 {
			return false
		}
	}
	p.open = true
	p.data = append(p.data, b[9+hlen:]...)
	return true
}

// tsTime reads a 33-bit timestamp of a PES header.
func tsTime(b []byte) int64 {
	return int64(b[0]>>1&0x07)<<30 | int64(b[1])<<22 | int64(b[2]>>1)<<15 | int64(b[3])<<7 | int64(b[4]>>1)
}

var startCode3 = []byte{0, 0, 1}

// splitAnnexB appends to nalus the NAL units of an Annex-B access unit
// (between start codes, trailing zero bytes dropped); false when it does
// not begin with a start code or has more NAL units than H.264 allows.
func splitAnnexB(nalus [][]byte, b []byte) ([][]byte, bool) {
	i := bytes.Index(b, startCode3)
	if i < 0 || len(bytes.TrimLeft(b[:i], "\x00")) != 0 {
		return nalus, false
	}
	b = b[i+3:]
	for len(b) > 0 {
		j := bytes.Index(b, startCode3)
		n := b
		if j >= 0 {
			n, b = b[:j], b[j+3:]
		} else {
			b = nil
		}
		for len(n) > 0 && n[len(n)-1] == 0 {
			n = n[:len(n)-1]
		}
		if len(n) == 0 {
			continue
		}
		if len(nalus) == h264.MaxNALUsPerAccessUnit {
			return nalus, false
		}
		nalus = append(nalus, n)
	}
	return nalus, len(nalus) > 0
}
