// Package rtmp is an RTMP ingest server: it accepts publishers such as OBS,
// ffmpeg and GStreamer's rtmp2sink, and hands their audio, video and
// metadata to a Handler. It does not serve players; OnAir delivers to
// viewers over HLS.
//
// The package has three layers, each usable on its own:
//
//   - the handshake (simple handshake only: digest-based clients fall back
//     to it when S1 carries a zero version, as FFmpeg and librtmp do);
//   - the chunk layer (ChunkReader, ChunkWriter), which turns the byte
//     stream into messages and enforces size limits;
//   - the session (Server), which speaks the NetConnection/NetStream
//     commands of a publisher.
//
// Admission (admission.go) decides who holds a connection slot: a
// deadline from accept to an accepted publish, small pools of connections
// not yet publishing (per client address and global) that drop their
// oldest member for a newcomer but never drop a publisher, a cap of
// publishers per address, and a throttle on stream keys refused
// repeatedly from one address. Handlers and Sinks refuse with a
// *StatusError to tell the client why.
//
// Everything read from the network is treated as hostile: message sizes,
// the number of chunk streams and the bytes buffered for partly received
// messages are capped, reads have an idle deadline and a byte-rate cap, and
// a panic in a connection's goroutine closes only that connection.
//
// Chunk sizes announced by the peer are accepted over the whole range the
// specification allows (1 to 2^31-1). Memory does not depend on the chunk
// size: a message is buffered as its bytes arrive and never beyond the
// per-type message cap (see Limits), so a huge chunk size costs nothing,
// and refusing it would break encoders that send one.
package rtmp
