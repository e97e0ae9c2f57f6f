package rtmp

import (
	"context"
	"io"
	"net"
	"time"
)

// idleConn pushes the read deadline forward on every read, so a peer that
// sends nothing for the idle timeout is cut off while a steady publisher is
// never interrupted. The deadline is refreshed at most once a second to
// keep the syscall count low; the effective timeout is therefore between
// timeout-1s and timeout. A zero timeout leaves deadlines alone (during the
// handshake, which has an overall deadline instead).
type idleConn struct {
	net.Conn
	timeout time.Duration
	set     time.Time
}

func (c *idleConn) Read(p []byte) (int, error) {
	if now := time.Now(); c.timeout > 0 && now.Sub(c.set) >= time.Second {
		if err := c.Conn.SetReadDeadline(now.Add(c.timeout)); err != nil {
			return 0, err
		}
		c.set = now
	}
	return c.Conn.Read(p)
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
