package hls

import (
	"encoding/binary"
	"slices"
)

// MPEG-TS constants (ISO/IEC 13818-1).
const (
	tsPacketSize = 188
	pidPAT       = 0x0000
	pidPMT       = 0x1000
	pidVideo     = 0x0100
	pidAudio     = 0x0101

	streamTypeH264 = 0x1B
	streamTypeAAC  = 0x0F // ADTS

	streamIDVideo = 0xE0
	streamIDAudio = 0xC0
)

// tsClock is the 90 kHz clock of PES timestamps and PCR bases; it wraps
// at 33 bits.
const tsClockMask = 1<<33 - 1

// tsTrack is one elementary stream of a transport stream.
type tsTrack struct {
	pid        uint16
	streamType byte
	streamID   byte
	cc         byte
}

// tsMuxer writes a single-program transport stream. It is deliberately
// small: one program, PAT and PMT written on demand (at the start of every
// segment so each segment stands alone), one PES per access unit or AAC
// frame, PCR on the PES starts of the PCR track. Packets are appended to
// out, which the caller writes out in one piece and truncates to reuse.
type tsMuxer struct {
	out    []byte
	tracks []*tsTrack
	pcr    *tsTrack
	patCC  byte
	pmtCC  byte
	hdr    []byte
}

// newTSMuxer builds a muxer for the given tracks; PCR is carried by the
// video track when there is one, else by the audio track.
func newTSMuxer(video, audio bool) *tsMuxer {
	m := &tsMuxer{}
	if video {
		m.tracks = append(m.tracks, &tsTrack{pid: pidVideo, streamType: streamTypeH264, streamID: streamIDVideo})
	}
	if audio {
		m.tracks = append(m.tracks, &tsTrack{pid: pidAudio, streamType: streamTypeAAC, streamID: streamIDAudio})
	}
	if len(m.tracks) > 0 {
		m.pcr = m.tracks[0]
	}
	return m
}

func (m *tsMuxer) track(pid uint16) *tsTrack {
	for _, t := range m.tracks {
		if t.pid == pid {
			return t
		}
	}
	return nil
}

// packet appends a TS packet to out and returns it to be filled.
func (m *tsMuxer) packet() []byte {
	n := len(m.out)
	m.out = slices.Grow(m.out, tsPacketSize)[:n+tsPacketSize]
	return m.out[n:]
}

// writeTables writes the PAT and the PMT.
func (m *tsMuxer) writeTables() {
	// PAT: one program, number 1, whose PMT is on pidPMT.
	pat := []byte{
		0x00,       // table_id
		0xB0, 0x0D, // section_syntax_indicator, section_length 13
		0x00, 0x01, // transport_stream_id
		0xC1,       // version 0, current
		0x00, 0x00, // section numbers
		0x00, 0x01, // program_number 1
		0xE0 | pidPMT>>8, pidPMT & 0xFF,
	}
	m.writeSection(pidPAT, &m.patCC, pat)
	n := 9 + 5*len(m.tracks) + 4
	pcrPID := uint16(0x1FFF)
	if m.pcr != nil {
		pcrPID = m.pcr.pid
	}
	pmt := []byte{
		0x02,
		0xB0 | byte(n>>8), byte(n),
		0x00, 0x01, // program_number 1
		0xC1,
		0x00, 0x00,
		0xE0 | byte(pcrPID>>8), byte(pcrPID),
		0xF0, 0x00, // no program descriptors
	}
	for _, t := range m.tracks {
		pmt = append(pmt, t.streamType, 0xE0|byte(t.pid>>8), byte(t.pid), 0xF0, 0x00)
	}
	m.writeSection(pidPMT, &m.pmtCC, pmt)
}

// writeSection writes a PSI section (without CRC) in one packet, adding
// the CRC and stuffing.
func (m *tsMuxer) writeSection(pid uint16, cc *byte, section []byte) {
	p := m.packet()
	p[0] = 0x47
	p[1] = 0x40 | byte(pid>>8) // payload_unit_start_indicator
	p[2] = byte(pid)
	p[3] = 0x10 | *cc
	*cc = (*cc + 1) & 0x0F
	p[4] = 0 // pointer_field
	n := copy(p[5:], section)
	binary.BigEndian.PutUint32(p[5+n:], crc32MPEG(section))
	for i := 5 + n + 4; i < tsPacketSize; i++ {
		p[i] = 0xFF
	}
}

// writePES writes one PES packet. pts and dts are on the 90 kHz clock;
// dts < 0 means "same as pts" (no DTS field). randomAccess marks a
// keyframe (or any audio frame) in the adaptation field, and the PCR
// track's first packet carries a PCR derived from the decoding time.
func (m *tsMuxer) writePES(t *tsTrack, pts, dts int64, payload []byte, randomAccess bool) {
	h := m.hdr[:0]
	h = append(h, 0x00, 0x00, 0x01, t.streamID)
	hasDTS := dts >= 0 && dts != pts
	hdrData := 5
	if hasDTS {
		hdrData = 10
	}
	length := 3 + hdrData + len(payload)
	if length > 0xFFFF || t.streamID == streamIDVideo {
		length = 0 // unbounded, allowed for video in transport streams
	}
	h = append(h, byte(length>>8), byte(length))
	h = append(h, 0x84) // '10' marker, data_alignment_indicator
	if hasDTS {
		h = append(h, 0xC0, byte(hdrData))
		h = appendTimestamp(h, 0x3, pts)
		h = appendTimestamp(h, 0x1, dts)
	} else {
		h = append(h, 0x80, byte(hdrData))
		h = appendTimestamp(h, 0x2, pts)
	}
	m.hdr = h

	pcr := int64(-1)
	if t == m.pcr {
		d := pts
		if hasDTS {
			d = dts
		}
		pcr = (d - pcrDelay) & tsClockMask
	}
	m.writePackets(t, h, payload, randomAccess, pcr)
}

// pcrDelay is how far the PCR runs ahead of decoding times, so a decoder
// following the PCR has data buffered before it must decode it.
const pcrDelay = 63000 // 0.7 s, as FFmpeg does

// writePackets splits head+body into TS packets of track t.
func (m *tsMuxer) writePackets(t *tsTrack, head, body []byte, randomAccess bool, pcr int64) {
	remaining := len(head) + len(body)
	// One growth for the whole PES: at most one more packet than its
	// bytes fill, for the adaptation field of the first.
	m.out = slices.Grow(m.out, (remaining/(tsPacketSize-4)+2)*tsPacketSize)
	for first := true; remaining > 0; first = false {
		var flags byte
		afBase := 0 // adaptation field bytes needed for flags and PCR
		if first {
			if randomAccess {
				flags |= 0x40
			}
			if pcr >= 0 {
				flags |= 0x10
			}
			if flags != 0 {
				afBase = 2
				if pcr >= 0 {
					afBase += 6
				}
			}
		}
		space := tsPacketSize - 4 - afBase
		n := min(remaining, space)
		af := afBase + space - n // stuffing goes into the adaptation field

		p := m.packet()
		p[0] = 0x47
		p[1] = byte(t.pid>>8) & 0x1F
		if first {
			p[1] |= 0x40
		}
		p[2] = byte(t.pid)
		p[3] = 0x10 | t.cc
		t.cc = (t.cc + 1) & 0x0F
		i := 4
		if af > 0 {
			p[3] |= 0x20
			p[4] = byte(af - 1) // adaptation_field_length excludes itself
			i = 5
			if af > 1 {
				p[5] = flags
				i = 6
				if flags&0x10 != 0 {
					p[6] = byte(pcr >> 25)
					p[7] = byte(pcr >> 17)
					p[8] = byte(pcr >> 9)
					p[9] = byte(pcr >> 1)
					p[10] = byte(pcr&1)<<7 | 0x7E
					p[11] = 0
					i = 12
				}
				for ; i < 4+af; i++ {
					p[i] = 0xFF
				}
			}
		}
		// n bytes of head, then of body.
		k := copy(p[i:i+n], head)
		head = head[k:]
		body = body[copy(p[i+k:i+n], body):]
		remaining -= n
	}
}

// appendTimestamp encodes a 33-bit PTS or DTS with its 4-bit prefix and
// marker bits.
func appendTimestamp(b []byte, prefix byte, ts int64) []byte {
	ts &= tsClockMask
	return append(b,
		prefix<<4|byte(ts>>29)&0x0E|1,
		byte(ts>>22),
		byte(ts>>14)&0xFE|1,
		byte(ts>>7),
		byte(ts<<1)&0xFE|1,
	)
}
