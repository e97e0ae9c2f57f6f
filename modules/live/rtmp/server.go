package rtmp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime/debug"
	"sync"
	"time"
)

// Defaults for the zero fields of Server.
const (
	DefaultHandshakeTimeout = 10 * time.Second
	DefaultIdleTimeout      = 30 * time.Second
	DefaultWriteTimeout     = 10 * time.Second
	DefaultMaxByteRate      = 50_000_000 / 8 // 50 Mbit/s, several times a 1080p60 stream
	// DefaultMaxConnections leaves room for every encoder of a node with
	// 300 live shows to reconnect at once after a restart.
	DefaultMaxConnections = 512
)

// Server accepts RTMP publishers. Set the fields before calling Serve; the
// zero value of each optional field picks the default named after it.
type Server struct {
	// Handler authorises publishers and receives their media. Required.
	Handler Handler
	// Logger receives connection events; slog.Default() when nil.
	Logger *slog.Logger
	// HandshakeTimeout bounds the handshake (DefaultHandshakeTimeout);
	// AdmissionTimeout, when shorter, bounds it too.
	HandshakeTimeout time.Duration
	// AdmissionTimeout is how long a new connection has to complete the
	// handshake, connect and have a publish accepted
	// (DefaultAdmissionTimeout); past it the connection is closed and its
	// slot freed.
	AdmissionTimeout time.Duration
	// IdleTimeout closes a connection that sends nothing for this long
	// (DefaultIdleTimeout).
	IdleTimeout time.Duration
	// WriteTimeout bounds each write to a client (DefaultWriteTimeout).
	WriteTimeout time.Duration
	// MaxByteRate caps the bytes per second read from one connection
	// (DefaultMaxByteRate); a negative value disables the cap. Faster
	// senders are slowed through TCP flow control, not disconnected.
	MaxByteRate int64
	// MaxConnections caps concurrent connections (DefaultMaxConnections).
	// When it is reached, the oldest connection not yet publishing is
	// dropped for a new one; when all are publishers, the new one is
	// closed at once.
	MaxConnections int
	// MaxPending caps connections not yet publishing, from all addresses
	// (DefaultMaxPending); MaxPendingPerAddr caps them per client address
	// (DefaultMaxPendingPerAddr). A full pool drops its oldest member to
	// admit a newcomer; see admission.go.
	MaxPending        int
	MaxPendingPerAddr int
	// MaxPublishersPerAddr caps the publishers of one client address
	// (DefaultMaxPublishersPerAddr); further publishes are refused with
	// NetStream.Publish.Rejected.
	MaxPublishersPerAddr int
	// KeyThrottle is the window of the stream key throttle
	// (DefaultKeyThrottle): after three publishes with one key refused
	// as unauthorised from one address within it, that key is refused
	// there for the window without asking the Handler.
	KeyThrottle time.Duration
	// Limits caps message sizes and chunk streams; see Limits.
	Limits Limits

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	conns     map[*conn]struct{}
	closed    bool
	draining  bool // CloseListeners: no new connections
	wg        sync.WaitGroup
	epoch     time.Time
	adm       admission
	counts    counters
}

// Conns counts the connections open now, publishers or not.
func (s *Server) Conns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

func (s *Server) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

func durationOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// Serve accepts connections on ln until Close is called, then returns
// ErrServerClosed. Other accept errors are returned after closing ln;
// temporary ones are retried with a short backoff.
func (s *Server) Serve(ln net.Listener) error {
	if s.Handler == nil {
		return errors.New("rtmp: server has no handler")
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return ErrServerClosed
	}
	if s.listeners == nil {
		s.listeners = map[net.Listener]struct{}{}
		s.conns = map[*conn]struct{}{}
		s.epoch = time.Now()
	}
	s.listeners[ln] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, ln)
		s.mu.Unlock()
		ln.Close()
	}()

	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed || s.draining
			s.mu.Unlock()
			if closed {
				return ErrServerClosed
			}
			if isTemporary(err) {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.logger().Warn("rtmp accept failed; retrying", "err", err, "backoff", backoff)
				time.Sleep(backoff)
				continue
			}
			return fmt.Errorf("rtmp accept: %w", err)
		}
		backoff = 0
		s.track(nc)
	}
}

// isTemporary treats timeouts and resource exhaustion (EMFILE and friends,
// which net still reports as Temporary) as worth retrying, like net/http.
func isTemporary(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}

// track registers a new connection and starts its goroutine, or closes it
// at once when the server is closed or full (see admit).
func (s *Server) track(nc net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var c *conn
	if !s.closed {
		c = s.admit(nc)
	}
	if c == nil {
		s.logger().Debug("rtmp connection refused", "remote", nc.RemoteAddr(), "closed", s.closed)
		nc.Close()
		return
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	go s.serveConn(c)
}

func (s *Server) serveConn(c *conn) {
	defer s.wg.Done()
	var err error
	defer func() {
		s.release(c, err)
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
	}()
	defer func() {
		if r := recover(); r != nil {
			s.logger().Error("rtmp connection panicked", "remote", c.remote, "panic", r, "stack", string(debug.Stack()))
			err = fmt.Errorf("rtmp: panic: %v", r)
		}
		c.finish(err)
	}()
	err = c.run()
}

// Close stops every listener and connection. Publishers' Sinks are closed
// with ErrServerClosed before Close returns.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	var err error
	for ln := range s.listeners {
		if e := ln.Close(); e != nil && err == nil {
			err = e
		}
	}
	for c := range s.conns {
		c.kill(ErrServerClosed)
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}

// CloseListeners stops accepting connections; those open carry on (a
// publisher keeps streaming) until Close. Serve returns ErrServerClosed.
func (s *Server) CloseListeners() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.draining = true
	var err error
	for ln := range s.listeners {
		if e := ln.Close(); e != nil && err == nil {
			err = e
		}
	}
	return err
}

// Shutdown is Close bounded by ctx: it returns ctx's error if some
// connection (typically a Sink that blocks) has not ended in time.
func (s *Server) Shutdown(ctx context.Context) error {
	done := make(chan error, 1)
	go func() { done <- s.Close() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}
