package rtmp

import (
	"bufio"
	"encoding/binary"
	"fmt"
)

// ChunkWriter splits messages into chunks. Every message starts with a
// type-0 header: the server sends few messages, so header compression is
// not worth the state it needs, and full headers are the most compatible.
type ChunkWriter struct {
	w         *bufio.Writer
	chunkSize uint32
}

// NewChunkWriter writes chunks to w with the default chunk size.
func NewChunkWriter(w *bufio.Writer) *ChunkWriter {
	return &ChunkWriter{w: w, chunkSize: DefaultChunkSize}
}

// SetChunkSize changes the size of the chunks written from now on. The
// caller must first send the peer a Set Chunk Size message with the value.
func (cw *ChunkWriter) SetChunkSize(n uint32) error {
	if n == 0 || n > MaxChunkSize {
		return fmt.Errorf("chunk size %d: %w", n, ErrBadChunkSize)
	}
	cw.chunkSize = n
	return nil
}

// WriteMessage buffers m as chunks; call Flush to send them.
func (cw *ChunkWriter) WriteMessage(m *Message) error {
	if len(m.Payload) > 0xFFFFFF {
		return fmt.Errorf("%d bytes: %w", len(m.Payload), ErrMessageTooLarge)
	}
	if m.ChunkStreamID < 2 || m.ChunkStreamID > 65599 {
		return fmt.Errorf("rtmp: chunk stream id %d out of range", m.ChunkStreamID)
	}
	ts := m.Timestamp
	extended := ts >= extendedMarker
	field := ts
	if extended {
		field = extendedMarker
	}

	var hdr [18]byte
	h := cw.basicHeader(hdr[:0], 0, m.ChunkStreamID)
	h = append(h, byte(field>>16), byte(field>>8), byte(field))
	n := len(m.Payload)
	h = append(h, byte(n>>16), byte(n>>8), byte(n), m.Type)
	h = binary.LittleEndian.AppendUint32(h, m.StreamID)
	if extended {
		h = binary.BigEndian.AppendUint32(h, ts)
	}
	if _, err := cw.w.Write(h); err != nil {
		return err
	}

	p := m.Payload
	for first := true; first || len(p) > 0; first = false {
		if !first {
			// Continuation chunks repeat the extended timestamp, as the
			// specification and FFmpeg's reader expect.
			c := cw.basicHeader(hdr[:0], 3, m.ChunkStreamID)
			if extended {
				c = binary.BigEndian.AppendUint32(c, ts)
			}
			if _, err := cw.w.Write(c); err != nil {
				return err
			}
		}
		k := min(len(p), int(cw.chunkSize))
		if _, err := cw.w.Write(p[:k]); err != nil {
			return err
		}
		p = p[k:]
	}
	return nil
}

// Flush sends buffered chunks.
func (cw *ChunkWriter) Flush() error { return cw.w.Flush() }

func (cw *ChunkWriter) basicHeader(b []byte, format byte, csid uint32) []byte {
	switch {
	case csid < 64:
		return append(b, format<<6|byte(csid))
	case csid < 320:
		return append(b, format<<6, byte(csid-64))
	default:
		v := csid - 64
		return append(b, format<<6|1, byte(v), byte(v>>8))
	}
}
