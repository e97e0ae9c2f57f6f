package rtmp

// Message type ids from the RTMP specification, sections 5.4 and 7.1.
const (
	TypeSetChunkSize     = 1
	TypeAbort            = 2
	TypeAck              = 3
	TypeUserControl      = 4
	TypeWindowAckSize    = 5
	TypeSetPeerBandwidth = 6
	TypeAudio            = 8
	TypeVideo            = 9
	TypeDataAMF3         = 15
	TypeSharedObjectAMF3 = 16
	TypeCommandAMF3      = 17
	TypeDataAMF0         = 18
	TypeSharedObjectAMF0 = 19
	TypeCommandAMF0      = 20
	TypeAggregate        = 22
)

// User control event types (section 7.1.7).
const (
	EventStreamBegin  = 0
	EventStreamEOF    = 1
	EventStreamDry    = 2
	EventSetBufferLen = 3
	EventRecorded     = 4
	EventPingRequest  = 6
	EventPingResponse = 7
)

// Message is one reassembled RTMP message.
type Message struct {
	// ChunkStreamID is the chunk stream the message arrived on (or is to be
	// sent on). It carries no meaning above the chunk layer.
	ChunkStreamID uint32
	Type          uint8
	// StreamID is the message stream: 0 for the connection itself, the id
	// returned by createStream for a published stream.
	StreamID uint32
	// Timestamp is the absolute 32-bit timestamp in milliseconds; it wraps.
	Timestamp uint32
	Payload   []byte
}

// Limits bound what a peer can make the chunk reader hold in memory.
type Limits struct {
	// MaxVideoMessage caps video and aggregate messages (default 4 MiB, a
	// generous keyframe at high bitrates).
	MaxVideoMessage int
	// MaxAudioMessage caps audio messages (default 256 KiB).
	MaxAudioMessage int
	// MaxOtherMessage caps commands, metadata and control messages
	// (default 256 KiB).
	MaxOtherMessage int
	// MaxChunkStreams caps how many distinct chunk stream ids a peer may
	// use (default 64; encoders use fewer than ten).
	MaxChunkStreams int
	// MaxBuffered caps the bytes held for messages that are partly received
	// across all chunk streams (default MaxVideoMessage + 1 MiB).
	MaxBuffered int
}

// DefaultLimits are the limits used when a field of Limits is zero.
var DefaultLimits = Limits{
	MaxVideoMessage: 4 << 20,
	MaxAudioMessage: 256 << 10,
	MaxOtherMessage: 256 << 10,
	MaxChunkStreams: 64,
	MaxBuffered:     5 << 20,
}

func (l Limits) withDefaults() Limits {
	if l.MaxVideoMessage <= 0 {
		l.MaxVideoMessage = DefaultLimits.MaxVideoMessage
	}
	if l.MaxAudioMessage <= 0 {
		l.MaxAudioMessage = DefaultLimits.MaxAudioMessage
	}
	if l.MaxOtherMessage <= 0 {
		l.MaxOtherMessage = DefaultLimits.MaxOtherMessage
	}
	if l.MaxChunkStreams <= 0 {
		l.MaxChunkStreams = DefaultLimits.MaxChunkStreams
	}
	if l.MaxBuffered <= 0 {
		l.MaxBuffered = l.MaxVideoMessage + 1<<20
	}
	return l
}

func (l Limits) maxMessage(typ uint8) int {
	switch typ {
	case TypeVideo, TypeAggregate:
		return l.MaxVideoMessage
	case TypeAudio:
		return l.MaxAudioMessage
	default:
		return l.MaxOtherMessage
	}
}
