// Package srt is the SRT ingest of the live module: a listener of its own
// (listener.go, built on github.com/datarhei/gosrt's packet, crypto and
// congestion/live packages, not on its connections) that takes MPEG-TS
// from SRT callers in publish mode, H.264 and AAC, and turns it into the stream core's
// access units (demux.go: github.com/bluenviron/mediacommon's MPEG-TS
// reader finds the program map and the tracks, then tsread.go reassembles
// the PES of the two tracks in reused buffers and splits H.264 at its
// start codes).
//
// The caller names its stream key in the SRT streamid, bare ("KEY") or in
// SRT's access control syntax ("#!::r=KEY,m=publish"); see ParseStreamID.
// Admission follows the RTMP server's rules (admission.go): a deadline to
// start sending media, caps per address and in all, and the stream key
// throttle.
//
// The listener is one goroutine per UDP socket, none per connection, and
// its socket is kept out of Go's network poller (socket.go), whose epoll
// would wake a thread for every datagram: it sleeps in poll(2) while no
// caller is connected (at most the 5 s of the peer-idle timeout, so that
// a caller accepted meanwhile is looked at); otherwise it wakes every
// tick (the latency less the time a loss takes to recover at the measured
// round trip, at least a third of the latency, 10 ms while a loss is
// being recovered), drains the socket with recvmmsg, answers handshakes
// and control packets, pushes data into each connection's gosrt receiver
// (loss list, ACK, NAK, TSBPD delivery, too-late drop) and ticks the
// receivers. The data packets are OnAir's own, from a pool (rxpacket.go),
// and the demuxer copies the units' bytes into shared slabs: no
// allocation a datagram, about one a picture. Each connection's deliveries of the tick go to its reader as
// one batch; once the Sink says its Write no longer blocks (InlineSink:
// the stream core after the tracks are decided), the socket's goroutine
// demuxes them itself and no reader wakes. A reader 128 batches behind is
// cut off, and so is a connection whose receiver holds 8,192 packets
// (libsrt's default receive buffer).
package srt
