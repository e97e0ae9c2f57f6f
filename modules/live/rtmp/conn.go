package rtmp

import (
	"bufio"
	"container/list"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync/atomic"
	"time"
)

// Window sizes the server announces in its connect reply. 2.5 MB is what
// FMS, nginx-rtmp and FFmpeg use, so clients are tuned for it.
const (
	serverWindowAckSize = 2_500_000
	serverPeerBandwidth = 2_500_000
	// serverChunkSize is the chunk size of the server's own messages.
	serverChunkSize = 4096
)

// conn is one client connection. Only its own goroutine touches its fields,
// except kill, which other goroutines use to cut it off, and the admission
// state.
type conn struct {
	srv    *Server
	nc     net.Conn
	idle   *idleConn
	remote net.Addr
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelCauseFunc

	cr *ChunkReader
	cw *ChunkWriter

	app          string
	connected    bool
	nextStreamID uint32
	ackWindow    uint32
	lastAck      uint64
	pub          *publication
	published    bool // a publication was accepted on this connection

	// Admission state, guarded by srv.mu (see admission.go). handshook is
	// set by the connection's goroutine and read under srv.mu, hence atomic.
	addr      string // the client address as counted
	adm       admState
	elem      *list.Element // in the pending pool
	admTimer  *time.Timer
	deciding  bool // the Handler is deciding on its publish: no deadline
	handshook atomic.Bool
}

// publication is the accepted publish of a connection.
type publication struct {
	streamID uint32
	sink     Sink
	unwrap   Unwrapper
	closed   bool
}

func newConn(s *Server, nc net.Conn) *conn {
	ctx, cancel := context.WithCancelCause(context.Background())
	c := &conn{
		srv:          s,
		nc:           nc,
		remote:       nc.RemoteAddr(),
		ctx:          ctx,
		cancel:       cancel,
		nextStreamID: 1,
	}
	c.log = s.logger().With("remote", c.remote)
	c.idle = newIdleConn(nc)
	var r io.Reader = c.idle
	rate := s.MaxByteRate
	if rate == 0 {
		rate = DefaultMaxByteRate
	}
	if rate > 0 {
		r = newRateReader(ctx, r, rate)
	}
	c.cr = NewChunkReader(bufio.NewReaderSize(r, 64<<10), s.Limits)
	c.cw = NewChunkWriter(bufio.NewWriterSize(&deadlineWriter{nc, durationOr(s.WriteTimeout, DefaultWriteTimeout)}, 16<<10))
	return c
}

// deadlineWriter bounds every write, so a client that stops reading cannot
// block the connection's goroutine forever.
type deadlineWriter struct {
	nc      net.Conn
	timeout time.Duration
}

func (w *deadlineWriter) Write(p []byte) (int, error) {
	if err := w.nc.SetWriteDeadline(time.Now().Add(w.timeout)); err != nil {
		return 0, err
	}
	return w.nc.Write(p)
}

// kill cuts the connection off from another goroutine; the first reason
// given wins.
func (c *conn) kill(reason error) {
	c.cancel(reason)
	c.nc.Close()
}

func (c *conn) run() error {
	hs := min(durationOr(c.srv.HandshakeTimeout, DefaultHandshakeTimeout), durationOr(c.srv.AdmissionTimeout, DefaultAdmissionTimeout))
	if err := c.nc.SetDeadline(time.Now().Add(hs)); err != nil {
		return err
	}
	if err := serverHandshake(c.cr.r, c.cw.w, c.srv.epoch); err != nil {
		return fmt.Errorf("handshake: %w", err)
	}
	if err := c.nc.SetDeadline(time.Time{}); err != nil {
		return err
	}
	c.handshook.Store(true)
	c.idle.timeout = durationOr(c.srv.IdleTimeout, DefaultIdleTimeout)
	for {
		m, err := c.cr.ReadMessage()
		if err != nil {
			return err
		}
		if err := c.handle(m); err != nil {
			return err
		}
		if c.ackWindow > 0 && c.cr.BytesRead()-c.lastAck >= uint64(c.ackWindow) {
			c.lastAck = c.cr.BytesRead()
			if err := c.send(AckMessage(uint32(c.lastAck))); err != nil {
				return err
			}
		}
	}
}

// finish releases everything once run has returned for whatever reason.
func (c *conn) finish(err error) {
	if cause := context.Cause(c.ctx); cause != nil {
		// Cut off by Disconnect or Server.Close: that is the real reason,
		// not the read error it provoked.
		err = cause
	}
	if err == nil {
		err = io.EOF
	}
	c.kill(err)
	if c.pub != nil {
		c.endPublication(err)
	}
	switch {
	case !c.handshook.Load(), errors.Is(err, io.EOF), errors.Is(err, ErrServerClosed), errors.Is(err, errRefused),
		errors.Is(err, ErrEvicted), errors.Is(err, ErrAdmissionTimeout):
		// Port scanners and health checks fail the handshake all day, and
		// a flood of idle sockets is counted in Stats, not logged.
		c.log.Debug("rtmp connection closed", "reason", err)
	default:
		c.log.Info("rtmp connection closed", "reason", err)
	}
}

// endPublication closes the Sink exactly once, shielding the connection
// from a panic inside it.
func (c *conn) endPublication(err error) {
	p := c.pub
	c.pub = nil
	if p == nil || p.closed {
		return
	}
	p.closed = true
	defer func() {
		if r := recover(); r != nil {
			c.log.Error("rtmp sink close panicked", "panic", r)
		}
	}()
	p.sink.Close(err)
}

// send writes messages and flushes them.
func (c *conn) send(msgs ...*Message) error {
	for _, m := range msgs {
		if err := c.cw.WriteMessage(m); err != nil {
			return err
		}
	}
	return c.cw.Flush()
}

func (c *conn) handle(m *Message) error {
	switch m.Type {
	case TypeCommandAMF0:
		return c.command(m, m.Payload)
	case TypeCommandAMF3:
		// An AMF3 command starts with a format byte, then AMF0 values.
		if len(m.Payload) == 0 {
			return nil
		}
		return c.command(m, m.Payload[1:])
	case TypeDataAMF0:
		return c.data(m.Payload)
	case TypeDataAMF3:
		if len(m.Payload) == 0 {
			return nil
		}
		return c.data(m.Payload[1:])
	case TypeAudio, TypeVideo:
		return c.media(m.Type, m.Timestamp, m.Payload)
	case TypeAggregate:
		return c.aggregate(m)
	case TypeUserControl:
		return c.userControl(m.Payload)
	case TypeWindowAckSize:
		if len(m.Payload) < 4 {
			return fmt.Errorf("window ack size of %d bytes: %w", len(m.Payload), ErrMalformedControl)
		}
		c.ackWindow = be32(m.Payload)
		return nil
	default:
		// Acknowledgement, Set Peer Bandwidth, shared objects: nothing a
		// publisher needs from us.
		return nil
	}
}

func (c *conn) userControl(p []byte) error {
	if len(p) < 2 {
		return nil
	}
	event := uint16(p[0])<<8 | uint16(p[1])
	if event == EventPingRequest && len(p) >= 6 {
		return c.send(UserControlMessage(EventPingResponse, be32(p[2:6])))
	}
	return nil
}

func (c *conn) media(typ uint8, ts uint32, body []byte) error {
	p := c.pub
	if p == nil || len(body) == 0 {
		return nil // before publish, or an empty keep-alive tag
	}
	t := p.unwrap.Unwrap(ts)
	var err error
	if typ == TypeVideo {
		err = p.sink.Video(t, body)
	} else {
		err = p.sink.Audio(t, body)
	}
	if err != nil {
		var se *StatusError
		if errors.As(err, &se) {
			return c.refuse(p.streamID, se.Code, se.Description, err)
		}
		return fmt.Errorf("sink: %w", err)
	}
	return nil
}

// aggregate unpacks an aggregate message: FLV tags whose timestamps are
// relative to the first one, rebased on the message timestamp.
func (c *conn) aggregate(m *Message) error {
	p := m.Payload
	var first uint32
	for i := 0; len(p) >= 11; i++ {
		typ := p[0]
		size := int(be24(p[1:4]))
		ts := be24(p[4:7]) | uint32(p[7])<<24
		if len(p) < 11+size {
			return nil // truncated trailing tag: drop it
		}
		if i == 0 {
			first = ts
		}
		body := p[11 : 11+size]
		if typ == TypeAudio || typ == TypeVideo {
			if err := c.media(typ, m.Timestamp+(ts-first), body); err != nil {
				return err
			}
		}
		p = p[min(len(p), 11+size+4):] // skip the back pointer
	}
	return nil
}

func be32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}
