//go:build !linux

package rtmp

import "net"

// batcher is inert where the receive watermark is not relied on: every
// read wakes the reader.
type batcher struct{ lowat int }

func newBatcher(net.Conn) batcher { return batcher{lowat: 1} }

func (b *batcher) setLowat(int) {}

func (b *batcher) read(nc net.Conn, p []byte) (int, error) { return nc.Read(p) }

func (b *batcher) drain(_ []byte, timeout error) (int, error) { return 0, timeout }
