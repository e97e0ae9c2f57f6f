package hls

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/onair/onair/modules/live/flv"
)

func TestCRC32MPEG(t *testing.T) {
	// The standard check value of CRC-32/MPEG-2.
	if got := crc32MPEG([]byte("123456789")); got != 0x0376E6E7 {
		t.Fatalf("got %08x", got)
	}
}

// tsPacket is a parsed transport stream packet.
type tsPacket struct {
	pid     uint16
	pusi    bool
	cc      byte
	af      []byte // adaptation field after its length byte
	hasAF   bool
	payload []byte
}

func parseTS(t *testing.T, b []byte) []tsPacket {
	t.Helper()
	if len(b)%tsPacketSize != 0 {
		t.Fatalf("stream of %d bytes is not whole packets", len(b))
	}
	var out []tsPacket
	for i := 0; i < len(b); i += tsPacketSize {
		p := b[i : i+tsPacketSize]
		if p[0] != 0x47 {
			t.Fatalf("packet %d: sync byte %02x", i/tsPacketSize, p[0])
		}
		pk := tsPacket{pid: uint16(p[1]&0x1F)<<8 | uint16(p[2]), pusi: p[1]&0x40 != 0, cc: p[3] & 0x0F}
		rest := p[4:]
		if p[3]&0x20 != 0 {
			n := int(rest[0])
			if n > 183 {
				t.Fatalf("adaptation field of %d bytes", n)
			}
			pk.hasAF = true
			pk.af = rest[1 : 1+n]
			rest = rest[1+n:]
		}
		if p[3]&0x10 != 0 {
			pk.payload = rest
		} else if len(rest) != 0 {
			t.Fatalf("packet without payload has %d stray bytes", len(rest))
		}
		out = append(out, pk)
	}
	return out
}

func checkSection(t *testing.T, pk tsPacket, tableID byte) []byte {
	t.Helper()
	if !pk.pusi || pk.payload[0] != 0 {
		t.Fatal("section packet must start a unit with pointer 0")
	}
	sec := pk.payload[1:]
	if sec[0] != tableID {
		t.Fatalf("table id %d, want %d", sec[0], tableID)
	}
	n := int(binary.BigEndian.Uint16(sec[1:3]) & 0x0FFF)
	sec = sec[:3+n]
	if crc32MPEG(sec) != 0 { // a section with its CRC leaves remainder 0
		t.Fatal("section CRC mismatch")
	}
	return sec
}

func decodeTimestamp(b []byte) int64 {
	return int64(b[0]>>1&0x07)<<30 | int64(b[1])<<22 | int64(b[2]>>1)<<15 | int64(b[3])<<7 | int64(b[4]>>1)
}

func TestTSMuxer(t *testing.T) {
	m := newTSMuxer(true, true)
	m.writeTables()
	video := bytes.Repeat([]byte{0xAB}, 1000)
	m.writePES(m.track(pidVideo), 133200, 126000, video, true)
	audio := bytes.Repeat([]byte{0xCD}, 169) // 14+169 = 183: a one-byte adaptation field
	m.writePES(m.track(pidAudio), 126000, -1, audio, false)
	m.writeTables()
	pkts := parseTS(t, m.out)

	pat := checkSection(t, pkts[0], 0)
	if pkts[0].pid != pidPAT || binary.BigEndian.Uint16(pat[10:12])&0x1FFF != pidPMT {
		t.Fatalf("PAT does not point at the PMT: % x", pat)
	}
	pmt := checkSection(t, pkts[1], 2)
	if pcr := binary.BigEndian.Uint16(pmt[8:10]) & 0x1FFF; pcr != pidVideo {
		t.Fatalf("PCR PID %x", pcr)
	}
	streams := pmt[12 : len(pmt)-4]
	want := []byte{streamTypeH264, 0xE1, 0x00, 0xF0, 0x00, streamTypeAAC, 0xE1, 0x01, 0xF0, 0x00}
	if !bytes.Equal(streams, want) {
		t.Fatalf("PMT streams % x", streams)
	}

	// Reassemble the video PES and check its header and continuity.
	var pes []byte
	var cc []byte
	for i, pk := range pkts {
		if pk.pid != pidVideo {
			continue
		}
		if len(pes) == 0 {
			if !pk.pusi || !pk.hasAF || pk.af[0]&0x40 == 0 || pk.af[0]&0x10 == 0 {
				t.Fatalf("first video packet %d lacks PUSI, RAI or PCR", i)
			}
			base := int64(pk.af[1])<<25 | int64(pk.af[2])<<17 | int64(pk.af[3])<<9 | int64(pk.af[4])<<1 | int64(pk.af[5]>>7)
			if base != 126000-pcrDelay {
				t.Fatalf("PCR %d", base)
			}
		} else if pk.pusi {
			t.Fatal("PUSI on a continuation packet")
		}
		pes = append(pes, pk.payload...)
		cc = append(cc, pk.cc)
	}
	for i := range cc {
		if cc[i] != byte(i)&0x0F {
			t.Fatalf("continuity counters %v", cc)
		}
	}
	if !bytes.Equal(pes[:4], []byte{0, 0, 1, streamIDVideo}) || pes[4] != 0 || pes[5] != 0 {
		t.Fatalf("video PES header % x", pes[:6])
	}
	if pes[7] != 0xC0 || pes[8] != 10 {
		t.Fatalf("video PES flags % x", pes[6:9])
	}
	if pts, dts := decodeTimestamp(pes[9:14]), decodeTimestamp(pes[14:19]); pts != 133200 || dts != 126000 {
		t.Fatalf("pts %d dts %d", pts, dts)
	}
	if pes[9]>>4 != 3 || pes[14]>>4 != 1 {
		t.Fatal("timestamp prefixes")
	}
	if !bytes.Equal(pes[19:], video) {
		t.Fatal("video payload corrupted")
	}

	// The audio PES fits in one packet with one byte of stuffing.
	var apk *tsPacket
	for i := range pkts {
		if pkts[i].pid == pidAudio && apk == nil {
			apk = &pkts[i]
		}
	}
	if apk == nil || !apk.hasAF || len(apk.af) != 0 {
		t.Fatalf("audio packet %+v", apk)
	}
	a := apk.payload
	if !bytes.Equal(a[:4], []byte{0, 0, 1, streamIDAudio}) {
		t.Fatalf("audio PES header % x", a[:4])
	}
	if l := int(binary.BigEndian.Uint16(a[4:6])); l != 3+5+len(audio) {
		t.Fatalf("audio PES length %d", l)
	}
	if a[7] != 0x80 || decodeTimestamp(a[9:14]) != 126000 {
		t.Fatal("audio PTS")
	}
	if !bytes.Equal(a[14:], audio) {
		t.Fatal("audio payload corrupted")
	}
	// Tables written again continue their counters.
	last := pkts[len(pkts)-2:]
	if last[0].pid != pidPAT || last[0].cc != 1 || last[1].cc != 1 {
		t.Fatal("table continuity counters")
	}
}

func TestTSMuxerAudioOnlyPCR(t *testing.T) {
	m := newTSMuxer(false, true)
	m.writeTables()
	m.writePES(m.track(pidAudio), 200000, -1, []byte{1, 2, 3}, true)
	pkts := parseTS(t, m.out)
	pmt := checkSection(t, pkts[1], 2)
	if pcr := binary.BigEndian.Uint16(pmt[8:10]) & 0x1FFF; pcr != pidAudio {
		t.Fatalf("PCR PID %x", pcr)
	}
	if len(pmt) != 12+5+4 {
		t.Fatalf("PMT lists %d bytes of streams", len(pmt)-16)
	}
	a := pkts[2]
	if a.af[0]&0x50 != 0x50 || len(a.af) < 7 {
		t.Fatal("audio-only PES must carry RAI and PCR")
	}
	// Stuffing fills the packet: 184 = AF (1+len) + PES (14+3).
	if 1+len(a.af)+len(a.payload) != 184 || len(a.payload) != 17 {
		t.Fatalf("af %d payload %d", len(a.af), len(a.payload))
	}
}

func TestAppendAnnexB(t *testing.T) {
	cfg := &flv.AVCConfig{SPS: [][]byte{{0x67, 1}}, PPS: [][]byte{{0x68, 2}}}
	sc := []byte{0, 0, 0, 1}
	join := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(append(b, sc...), p...)
		}
		return b
	}
	aud := []byte{0x09, 0xF0}
	tests := []struct {
		name  string
		nalus [][]byte
		want  []byte
		idr   bool
	}{
		{"idr gets parameter sets", [][]byte{{0x06, 9}, {0x65, 7}}, join(aud, []byte{0x67, 1}, []byte{0x68, 2}, []byte{0x06, 9}, []byte{0x65, 7}), true},
		{"idr with own parameter sets", [][]byte{{0x67, 3}, {0x68, 4}, {0x65, 7}}, join(aud, []byte{0x67, 3}, []byte{0x68, 4}, []byte{0x65, 7}), true},
		{"inter frame untouched", [][]byte{{0x41, 5}}, join(aud, []byte{0x41, 5}), false},
		{"encoder aud replaced", [][]byte{{0x09, 0x10}, {0x41, 5}}, join(aud, []byte{0x41, 5}), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, idr := appendAnnexB(nil, tt.nalus, cfg)
			if idr != tt.idr || !bytes.Equal(got, tt.want) {
				t.Fatalf("got % x (idr %v)\nwant % x", got, idr, tt.want)
			}
		})
	}
}
