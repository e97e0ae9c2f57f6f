package rtmp

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"time"
)

// idleConn pushes the read deadline forward on every read, so a peer that
// sends nothing for the idle timeout is cut off while a steady publisher is
// never interrupted. The deadline is refreshed at most once a second to
// keep the syscall count low; the effective timeout is therefore between
// timeout-1s and timeout. A zero timeout leaves deadlines alone (during the
// handshake, which has an overall deadline instead).
//
// It also batches a fast peer's reads. A 2.5 Mb/s publisher's bytes arrive
// a few kilobytes at a time, and each read costs a park and a wake-up of
// the connection's goroutine: with a read for each, about 40 % of a
// stream's CPU (docs/benchmarks.md, "Reads in batches"). At each refresh
// the socket's receive low watermark (SO_RCVLOWAT, Linux) is set to
// batchWindow of the rate read since the last one, so the kernel wakes the
// reader once that much is queued: a 2.5 Mb/s stream is read about 25
// times a second instead of 110, a steady stream's bytes later by at most
// batchWindow (more until the next refresh when its rate falls). A slow
// peer (under minBatch a window) keeps the default of one byte. Bytes left
// below the watermark when the peer goes quiet are read when the deadline
// fires (drain), so the watermark never loses a byte nor cuts off a peer
// that still sends. On such a socket the read(2) itself is a raw system
// call (batcher.read): a non-blocking read needs none of the runtime's
// bookkeeping for calls that block, which cost each batch a wake-up of
// its monitor thread.
type idleConn struct {
	net.Conn
	timeout time.Duration
	set     time.Time
	batch   batcher // the socket's watermark; inert where there is none
	read    int64   // bytes read since set
}

// The read batching: a window of the peer's rate, at least minBatch bytes
// (below it the watermark stays at one byte) and at most maxBatch, a
// quarter of the default receive buffer, so the sender's window is never
// held up by it.
const (
	batchWindow = 40 * time.Millisecond
	minBatch    = 2 << 10
	maxBatch    = 32 << 10
)

func newIdleConn(nc net.Conn) *idleConn {
	return &idleConn{Conn: nc, batch: newBatcher(nc)}
}

func (c *idleConn) Read(p []byte) (int, error) {
	if now := time.Now(); c.timeout > 0 && now.Sub(c.set) >= time.Second {
		if err := c.Conn.SetReadDeadline(now.Add(c.timeout)); err != nil {
			return 0, err
		}
		if !c.set.IsZero() {
			c.batch.setLowat(batchFor(c.read, now.Sub(c.set)))
		}
		c.set, c.read = now, 0
	}
	n, err := c.batch.read(c.Conn, p)
	if n == 0 && err != nil && c.batch.lowat > 1 && errors.Is(err, os.ErrDeadlineExceeded) {
		// The peer went quiet, perhaps with bytes below the watermark.
		n, err = c.batch.drain(p, err)
		if n > 0 {
			c.set = time.Time{} // push the deadline forward on the next read
		}
	}
	c.read += int64(n)
	return n, err
}

// batchFor is the receive watermark for a peer that sent n bytes in d.
func batchFor(n int64, d time.Duration) int {
	if d <= 0 {
		return 1
	}
	b := int64(float64(n) * float64(batchWindow) / float64(d))
	switch {
	case b < minBatch:
		return 1
	case b > maxBatch:
		return maxBatch
	}
	return int(b)
}

// rateReader caps the average byte rate of a reader with a token bucket
// holding one second of bytes. When the bucket runs dry it sleeps, so TCP
// flow control slows the sender down instead of the server buffering for it.
// The sleep ends early when ctx is cancelled.
type rateReader struct {
	r      io.Reader
	ctx    context.Context
	rate   float64 // bytes per second
	tokens float64
	last   time.Time
}

func newRateReader(ctx context.Context, r io.Reader, bytesPerSecond int64) *rateReader {
	return &rateReader{r: r, ctx: ctx, rate: float64(bytesPerSecond), tokens: float64(bytesPerSecond), last: time.Now()}
}

func (rr *rateReader) Read(p []byte) (int, error) {
	now := time.Now()
	rr.tokens = min(rr.rate, rr.tokens+now.Sub(rr.last).Seconds()*rr.rate)
	rr.last = now
	if rr.tokens < 0 {
		wait := time.Duration(-rr.tokens / rr.rate * float64(time.Second))
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-rr.ctx.Done():
			t.Stop()
			return 0, context.Cause(rr.ctx)
		}
		rr.tokens = 0
		rr.last = time.Now()
	}
	if max := int(rr.rate); len(p) > max && max > 0 {
		p = p[:max]
	}
	n, err := rr.r.Read(p)
	rr.tokens -= float64(n)
	return n, err
}
