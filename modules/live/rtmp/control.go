package rtmp

import "encoding/binary"

// Chunk stream ids the server sends on. Protocol control messages must use
// chunk stream 2 (section 5.4); the others follow common practice.
const (
	csidControl = 2
	csidCommand = 3
	csidStatus  = 5
)

func controlMessage(typ uint8, payload []byte) *Message {
	return &Message{ChunkStreamID: csidControl, Type: typ, Payload: payload}
}

// SetChunkSizeMessage announces the chunk size of the sender's next chunks.
func SetChunkSizeMessage(n uint32) *Message {
	return controlMessage(TypeSetChunkSize, binary.BigEndian.AppendUint32(nil, n&0x7FFFFFFF))
}

// AckMessage acknowledges seq bytes received so far.
func AckMessage(seq uint32) *Message {
	return controlMessage(TypeAck, binary.BigEndian.AppendUint32(nil, seq))
}

// WindowAckSizeMessage asks the peer to acknowledge every n bytes.
func WindowAckSizeMessage(n uint32) *Message {
	return controlMessage(TypeWindowAckSize, binary.BigEndian.AppendUint32(nil, n))
}

// SetPeerBandwidthMessage limits the peer's output window; limitType is
// 0 (hard), 1 (soft) or 2 (dynamic).
func SetPeerBandwidthMessage(n uint32, limitType byte) *Message {
	return controlMessage(TypeSetPeerBandwidth, append(binary.BigEndian.AppendUint32(nil, n), limitType))
}

// UserControlMessage builds a user control event with its data.
func UserControlMessage(event uint16, data ...uint32) *Message {
	p := binary.BigEndian.AppendUint16(nil, event)
	for _, d := range data {
		p = binary.BigEndian.AppendUint32(p, d)
	}
	return controlMessage(TypeUserControl, p)
}
