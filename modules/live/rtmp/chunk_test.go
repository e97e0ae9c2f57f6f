package rtmp

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
)

// chunkBuilder assembles raw chunk bytes for tests.
type chunkBuilder struct{ bytes.Buffer }

func (b *chunkBuilder) basic(format byte, csid uint32) *chunkBuilder {
	switch {
	case csid < 64:
		b.WriteByte(format<<6 | byte(csid))
	case csid < 320:
		b.Write([]byte{format << 6, byte(csid - 64)})
	default:
		b.Write([]byte{format<<6 | 1, byte(csid - 64), byte((csid - 64) >> 8)})
	}
	return b
}

func (b *chunkBuilder) u24(v uint32) *chunkBuilder {
	b.Write([]byte{byte(v >> 16), byte(v >> 8), byte(v)})
	return b
}

func (b *chunkBuilder) u32(v uint32) *chunkBuilder {
	b.Write(binary.BigEndian.AppendUint32(nil, v))
	return b
}

// type0 writes a type-0 header; ts >= 0xFFFFFF writes an extended timestamp.
func (b *chunkBuilder) type0(csid, ts, length uint32, typ uint8, sid uint32) *chunkBuilder {
	b.basic(0, csid)
	b.u24(min(ts, extendedMarker)).u24(length)
	b.WriteByte(typ)
	b.Write(binary.LittleEndian.AppendUint32(nil, sid))
	if ts >= extendedMarker {
		b.u32(ts)
	}
	return b
}

func (b *chunkBuilder) type1(csid, delta, length uint32, typ uint8) *chunkBuilder {
	b.basic(1, csid).u24(min(delta, extendedMarker)).u24(length)
	b.WriteByte(typ)
	if delta >= extendedMarker {
		b.u32(delta)
	}
	return b
}

func (b *chunkBuilder) type2(csid, delta uint32) *chunkBuilder {
	b.basic(2, csid).u24(min(delta, extendedMarker))
	if delta >= extendedMarker {
		b.u32(delta)
	}
	return b
}

func (b *chunkBuilder) data(p []byte) *chunkBuilder { b.Write(p); return b }

func readAll(t *testing.T, raw []byte) ([]*Message, error) {
	t.Helper()
	cr := NewChunkReader(bufio.NewReader(bytes.NewReader(raw)), Limits{})
	var out []*Message
	for {
		m, err := cr.ReadMessage()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return out, err
		}
		c := *m // the reader reuses the message and its payload
		c.Payload = bytes.Clone(m.Payload)
		out = append(out, &c)
	}
}

func seq(n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i*7 + 1)
	}
	return p
}

type wantMsg struct {
	csid uint32
	typ  uint8
	sid  uint32
	ts   uint32
	n    int
}

func TestChunkReader(t *testing.T) {
	p300 := seq(300)
	ext := uint32(0x01000000) // needs an extended timestamp
	tests := []struct {
		name  string
		build func(b *chunkBuilder)
		want  []wantMsg
		err   error
	}{
		{
			name: "single small message",
			build: func(b *chunkBuilder) {
				b.type0(3, 1000, 10, TypeCommandAMF0, 0).data(seq(10))
			},
			want: []wantMsg{{3, TypeCommandAMF0, 0, 1000, 10}},
		},
		{
			name: "message split over default 128-byte chunks",
			build: func(b *chunkBuilder) {
				b.type0(6, 40, 300, TypeVideo, 1).data(p300[:128])
				b.basic(3, 6).data(p300[128:256])
				b.basic(3, 6).data(p300[256:])
			},
			want: []wantMsg{{6, TypeVideo, 1, 40, 300}},
		},
		{
			name: "deltas through types 1, 2 and 3",
			build: func(b *chunkBuilder) {
				b.type0(4, 100, 5, TypeAudio, 1).data(seq(5))
				b.type1(4, 23, 6, TypeAudio).data(seq(6))
				b.type2(4, 20).data(seq(6))
				b.basic(3, 4).data(seq(6)) // repeats delta 20
			},
			want: []wantMsg{
				{4, TypeAudio, 1, 100, 5},
				{4, TypeAudio, 1, 123, 6},
				{4, TypeAudio, 1, 143, 6},
				{4, TypeAudio, 1, 163, 6},
			},
		},
		{
			name: "type 3 after type 0 repeats the absolute timestamp as delta",
			build: func(b *chunkBuilder) {
				b.type0(4, 30, 2, TypeAudio, 1).data(seq(2))
				b.basic(3, 4).data(seq(2))
			},
			want: []wantMsg{{4, TypeAudio, 1, 30, 2}, {4, TypeAudio, 1, 60, 2}},
		},
		{
			name: "extended timestamp repeated on type-3 continuation (spec)",
			build: func(b *chunkBuilder) {
				b.type0(6, ext, 300, TypeVideo, 1).data(p300[:128])
				b.basic(3, 6).u32(ext).data(p300[128:256])
				b.basic(3, 6).u32(ext).data(p300[256:])
			},
			want: []wantMsg{{6, TypeVideo, 1, ext, 300}},
		},
		{
			name: "extended timestamp omitted on type-3 continuation (legacy)",
			build: func(b *chunkBuilder) {
				b.type0(6, ext, 300, TypeVideo, 1).data(p300[:128])
				b.basic(3, 6).data(p300[128:256])
				b.basic(3, 6).data(p300[256:])
			},
			want: []wantMsg{{6, TypeVideo, 1, ext, 300}},
		},
		{
			name: "extended delta on type 1 then new message by type 3",
			build: func(b *chunkBuilder) {
				b.type0(6, 0, 4, TypeVideo, 1).data(seq(4))
				b.type1(6, 0x01000000, 4, TypeVideo).data(seq(4))
				b.basic(3, 6).u32(0x01000000).data(seq(4))
			},
			want: []wantMsg{
				{6, TypeVideo, 1, 0, 4},
				{6, TypeVideo, 1, 0x01000000, 4},
				{6, TypeVideo, 1, 0x02000000, 4},
			},
		},
		{
			name: "timestamp wraps at 32 bits",
			build: func(b *chunkBuilder) {
				b.type0(6, 0xFFFFFFF0, 1, TypeVideo, 1).data([]byte{1})
				b.type2(6, 0x20).data([]byte{2})
			},
			want: []wantMsg{{6, TypeVideo, 1, 0xFFFFFFF0, 1}, {6, TypeVideo, 1, 0x10, 1}},
		},
		{
			name: "chunk size change mid-stream",
			build: func(b *chunkBuilder) {
				b.type0(2, 0, 4, TypeSetChunkSize, 0).u32(200)
				b.type0(6, 0, 300, TypeVideo, 1).data(p300[:200])
				b.basic(3, 6).data(p300[200:])
				b.type0(2, 0, 4, TypeSetChunkSize, 0).u32(50)
				b.type0(6, 1, 120, TypeVideo, 1).data(p300[:50])
				b.basic(3, 6).data(p300[50:100])
				b.basic(3, 6).data(p300[100:120])
			},
			want: []wantMsg{{6, TypeVideo, 1, 0, 300}, {6, TypeVideo, 1, 1, 120}},
		},
		{
			name: "interleaved chunk streams",
			build: func(b *chunkBuilder) {
				b.type0(6, 0, 200, TypeVideo, 1).data(p300[:128])
				b.type0(4, 5, 3, TypeAudio, 1).data(seq(3))
				b.basic(3, 6).data(p300[128:200])
			},
			want: []wantMsg{{4, TypeAudio, 1, 5, 3}, {6, TypeVideo, 1, 0, 200}},
		},
		{
			name: "abort discards the partial message",
			build: func(b *chunkBuilder) {
				b.type0(6, 0, 200, TypeVideo, 1).data(p300[:128])
				b.type0(2, 0, 4, TypeAbort, 0).u32(6)
				b.type0(6, 40, 2, TypeVideo, 1).data(seq(2))
			},
			want: []wantMsg{{6, TypeVideo, 1, 40, 2}},
		},
		{
			name: "two- and three-byte chunk stream ids",
			build: func(b *chunkBuilder) {
				b.type0(100, 0, 1, TypeAudio, 1).data([]byte{1})
				b.type0(1000, 0, 1, TypeAudio, 1).data([]byte{1})
			},
			want: []wantMsg{{100, TypeAudio, 1, 0, 1}, {1000, TypeAudio, 1, 0, 1}},
		},
		{
			name: "zero-length message",
			build: func(b *chunkBuilder) {
				b.type0(6, 7, 0, TypeVideo, 1)
			},
			want: []wantMsg{{6, TypeVideo, 1, 7, 0}},
		},
		{
			name: "video message too large",
			build: func(b *chunkBuilder) {
				b.type0(6, 0, 5<<20, TypeVideo, 1)
			},
			err: ErrMessageTooLarge,
		},
		{
			name: "command message too large",
			build: func(b *chunkBuilder) {
				b.type0(3, 0, 1<<20, TypeCommandAMF0, 0)
			},
			err: ErrMessageTooLarge,
		},
		{
			name: "chunk size zero",
			build: func(b *chunkBuilder) {
				b.type0(2, 0, 4, TypeSetChunkSize, 0).u32(0)
			},
			err: ErrBadChunkSize,
		},
		{
			name: "chunk size with top bit set",
			build: func(b *chunkBuilder) {
				b.type0(2, 0, 4, TypeSetChunkSize, 0).u32(0x80000000)
			},
			err: ErrBadChunkSize,
		},
		{
			name: "huge but valid chunk size",
			build: func(b *chunkBuilder) {
				b.type0(2, 0, 4, TypeSetChunkSize, 0).u32(MaxChunkSize)
				b.type0(6, 0, 300, TypeVideo, 1).data(p300)
			},
			want: []wantMsg{{6, TypeVideo, 1, 0, 300}},
		},
		{
			name: "short set chunk size",
			build: func(b *chunkBuilder) {
				b.type0(2, 0, 2, TypeSetChunkSize, 0).data([]byte{0, 1})
			},
			err: ErrMalformedControl,
		},
		{
			name: "truncated header",
			build: func(b *chunkBuilder) {
				b.basic(0, 3).data([]byte{0, 0})
			},
			err: io.ErrUnexpectedEOF,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b chunkBuilder
			tt.build(&b)
			msgs, err := readAll(t, b.Bytes())
			if !errors.Is(err, tt.err) {
				t.Fatalf("error %v, want %v", err, tt.err)
			}
			if len(msgs) != len(tt.want) {
				t.Fatalf("got %d messages, want %d", len(msgs), len(tt.want))
			}
			for i, m := range msgs {
				w := tt.want[i]
				got := wantMsg{m.ChunkStreamID, m.Type, m.StreamID, m.Timestamp, len(m.Payload)}
				if got != w {
					t.Errorf("message %d: got %+v, want %+v", i, got, w)
				}
			}
		})
	}
}

func TestChunkReaderPayloadIntact(t *testing.T) {
	p := seq(1000)
	var b chunkBuilder
	b.type0(6, 0xFFFFFF, uint32(len(p)), TypeVideo, 1)
	for i := 0; i < len(p); i += 128 {
		if i > 0 {
			b.basic(3, 6).u32(0xFFFFFF)
		}
		b.data(p[i:min(i+128, len(p))])
	}
	msgs, err := readAll(t, b.Bytes())
	if err != nil || len(msgs) != 1 {
		t.Fatalf("msgs %d, err %v", len(msgs), err)
	}
	if !bytes.Equal(msgs[0].Payload, p) {
		t.Fatal("payload corrupted")
	}
}

func TestChunkReaderLimits(t *testing.T) {
	var b chunkBuilder
	for i := uint32(0); i < 70; i++ {
		b.type0(3+i, 0, 1, TypeAudio, 1).data([]byte{1})
	}
	_, err := readAll(t, b.Bytes())
	if !errors.Is(err, ErrTooManyStreams) {
		t.Fatalf("got %v", err)
	}

	// Partial messages on many streams must not add up beyond MaxBuffered.
	var c chunkBuilder
	c.type0(2, 0, 4, TypeSetChunkSize, 0).u32(1 << 20)
	for i := uint32(0); i < 10; i++ {
		c.type0(3+i, 0, 4<<20, TypeVideo, 1).data(make([]byte, 1<<20))
	}
	cr := NewChunkReader(bufio.NewReader(bytes.NewReader(c.Bytes())), Limits{})
	_, err = cr.ReadMessage()
	if !errors.Is(err, ErrTooMuchBuffered) {
		t.Fatalf("got %v", err)
	}
}

func TestChunkWriterRoundTrip(t *testing.T) {
	tests := []struct {
		name      string
		chunkSize uint32
		msg       Message
	}{
		{"small", 128, Message{ChunkStreamID: 3, Type: TypeCommandAMF0, Timestamp: 5, Payload: seq(20)}},
		{"multi chunk", 128, Message{ChunkStreamID: 5, Type: TypeVideo, StreamID: 1, Timestamp: 99, Payload: seq(1000)}},
		{"extended timestamp", 100, Message{ChunkStreamID: 6, Type: TypeVideo, StreamID: 1, Timestamp: 0x12345678, Payload: seq(450)}},
		{"large csid", 4096, Message{ChunkStreamID: 40000, Type: TypeAudio, StreamID: 1, Payload: seq(10)}},
		{"empty", 128, Message{ChunkStreamID: 3, Type: TypeCommandAMF0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			cw := NewChunkWriter(bufio.NewWriter(&buf))
			if tt.chunkSize != DefaultChunkSize {
				if err := cw.WriteMessage(SetChunkSizeMessage(tt.chunkSize)); err != nil {
					t.Fatal(err)
				}
				if err := cw.SetChunkSize(tt.chunkSize); err != nil {
					t.Fatal(err)
				}
			}
			if err := cw.WriteMessage(&tt.msg); err != nil {
				t.Fatal(err)
			}
			if err := cw.Flush(); err != nil {
				t.Fatal(err)
			}
			msgs, err := readAll(t, buf.Bytes())
			if err != nil || len(msgs) != 1 {
				t.Fatalf("msgs %d, err %v", len(msgs), err)
			}
			m := msgs[0]
			if m.ChunkStreamID != tt.msg.ChunkStreamID || m.Type != tt.msg.Type || m.StreamID != tt.msg.StreamID ||
				m.Timestamp != tt.msg.Timestamp || !bytes.Equal(m.Payload, tt.msg.Payload) {
				t.Fatalf("got %+v", m)
			}
		})
	}
}

func TestUnwrapper(t *testing.T) {
	tests := []struct {
		name string
		in   []uint32
		want []int64
	}{
		{"steady", []uint32{0, 40, 80}, []int64{0, 40, 80}},
		{"past 24-bit field", []uint32{0xFFFFF0, 0x1000010}, []int64{0xFFFFF0, 0x1000010}},
		{"32-bit wrap", []uint32{0xFFFFFFF0, 0x10, 0x50}, []int64{0xFFFFFFF0, 0x100000010, 0x100000050}},
		{"small backward step kept", []uint32{1000, 990, 1020}, []int64{1000, 990, 1020}},
		{"second wrap", []uint32{0xFFFFFFFF, 0, 0x7FFFFFF0, 0xFFFFFFE0, 1}, []int64{0xFFFFFFFF, 0x100000000, 0x17FFFFFF0, 0x1FFFFFFE0, 0x200000001}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var u Unwrapper
			for i, ts := range tt.in {
				if got := u.Unwrap(ts); got != tt.want[i] {
					t.Fatalf("step %d: got %d, want %d", i, got, tt.want[i])
				}
			}
		})
	}
}

func FuzzChunkReader(f *testing.F) {
	var b chunkBuilder
	b.type0(2, 0, 4, TypeSetChunkSize, 0).u32(64)
	b.type0(6, 0xFFFFFF, 100, TypeVideo, 1).data(seq(64))
	b.basic(3, 6).u32(0xFFFFFF).data(seq(36))
	b.type1(4, 23, 3, TypeAudio).data(seq(3))
	b.type2(4, 23).data(seq(3))
	b.basic(3, 4).data(seq(3))
	b.type0(2, 0, 4, TypeAbort, 0).u32(6)
	f.Add(b.Bytes())
	f.Add([]byte{0x02, 0, 0, 0, 0, 0, 4, 1, 0, 0, 0, 0, 0x7F, 0xFF, 0xFF, 0xFF})
	f.Add([]byte{0x41, 0, 0, 0, 0xFF, 0xFF, 0xFF, 9})
	f.Fuzz(func(t *testing.T, raw []byte) {
		cr := NewChunkReader(bufio.NewReader(bytes.NewReader(raw)), Limits{MaxVideoMessage: 1 << 16, MaxBuffered: 1 << 17})
		total := 0
		for {
			m, err := cr.ReadMessage()
			if err != nil {
				return
			}
			total += len(m.Payload)
			if total > len(raw) {
				t.Fatalf("payloads (%d bytes) exceed input (%d bytes)", total, len(raw))
			}
		}
	})
}

// FuzzChunkReaderReuse checks the reassembly of messages whose chunks
// interleave on two chunk streams, with the reader reusing one payload
// buffer: every message comes back whole and equal to what was sent,
// whatever the sizes (a small message after a large one, a message
// completing while the other is half received). Each script byte is one
// message: its low bit the chunk stream, the rest its length in units of
// 37 bytes; the chunk size is 128.
func FuzzChunkReaderReuse(f *testing.F) {
	f.Add([]byte{0x40, 0x03, 0x41, 0x00, 0x02})
	f.Add([]byte{0xFF, 0xFE, 0x01, 0x80})
	f.Add([]byte{0x10, 0x11, 0x12, 0x13, 0x14, 0x15})
	f.Fuzz(func(t *testing.T, script []byte) {
		if len(script) > 64 {
			return
		}
		type msg struct {
			csid    uint32
			payload []byte
			sent    int
		}
		var want [][]byte
		var queues [2][]*msg
		for i, s := range script {
			m := &msg{csid: uint32(4 + 2*(s&1)), payload: make([]byte, int(s>>1)*37)}
			for j := range m.payload {
				m.payload[j] = byte(i*13 + j*7)
			}
			queues[s&1] = append(queues[s&1], m)
		}
		// Interleave chunk by chunk: one chunk of the head message of
		// each chunk stream in turn.
		var b chunkBuilder
		for len(queues[0])+len(queues[1]) > 0 {
			for q := range queues {
				if len(queues[q]) == 0 {
					continue
				}
				m := queues[q][0]
				if m.sent == 0 {
					b.type0(m.csid, 0, uint32(len(m.payload)), TypeVideo, 1)
				} else {
					b.basic(3, m.csid)
				}
				n := min(DefaultChunkSize, len(m.payload)-m.sent)
				b.data(m.payload[m.sent : m.sent+n])
				m.sent += n
				if m.sent == len(m.payload) {
					want = append(want, m.payload)
					queues[q] = queues[q][1:]
				}
			}
		}
		cr := NewChunkReader(bufio.NewReader(bytes.NewReader(b.Bytes())), Limits{})
		for i, w := range want {
			m, err := cr.ReadMessage()
			if err != nil {
				t.Fatalf("message %d: %v", i, err)
			}
			if !bytes.Equal(m.Payload, w) {
				t.Fatalf("message %d: %d bytes differ from the %d sent", i, len(m.Payload), len(w))
			}
		}
		if _, err := cr.ReadMessage(); !errors.Is(err, io.EOF) {
			t.Fatalf("after the last message: %v", err)
		}
	})
}
