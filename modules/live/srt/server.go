package srt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	gosrt "github.com/datarhei/gosrt"

	"github.com/onair/onair/modules/live/rtmp"
	"github.com/onair/onair/modules/live/streamcore"
)

// Defaults for the zero fields of Server.
const (
	// DefaultLatency is SRT's own default receive latency: a caller asking
	// for more (ffmpeg's latency=, OBS's) gets what it asks.
	DefaultLatency     = 120 * time.Millisecond
	DefaultIdleTimeout = 30 * time.Second
)

// Handler decides who may publish and receives their media.
type Handler interface {
	// Publish is asked during the SRT handshake of a caller in publish
	// mode, with the key of its streamid; an error refuses it with an SRT
	// rejection: ErrUnauthorized (wrapped) as REJX_UNAUTHORIZED, counted
	// by the stream key throttle; ErrUnavailable (wrapped) as REJX_DOWN;
	// others as REJX_FORBIDDEN. ctx ends with the connection.
	Publish(ctx context.Context, req PublishRequest) (Sink, error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, req PublishRequest) (Sink, error)

// Publish calls f.
func (f HandlerFunc) Publish(ctx context.Context, req PublishRequest) (Sink, error) {
	return f(ctx, req)
}

// Handler refusals.
var (
	ErrUnauthorized = errors.New("srt: unauthorized")
	ErrUnavailable  = errors.New("srt: unavailable, try again")
)

// PublishRequest describes a caller asking to publish.
type PublishRequest struct {
	// Key is the stream key of the streamid.
	Key string
	// RemoteAddr is the caller's UDP address.
	RemoteAddr net.Addr
	// Disconnect cuts the publisher off; the Sink's Close receives reason
	// (rtmp.ErrDisconnected when nil). Safe from any goroutine, any
	// number of times.
	Disconnect func(reason error)
	// Link measures the SRT connection now (zero before it is accepted).
	Link func() LinkStats
}

// Sink receives one publication, from the connection's goroutine.
type Sink interface {
	// Tracks tells which tracks the program map announces (H.264 video,
	// AAC audio), before any unit.
	Tracks(video, audio bool) error
	// Write takes a unit of the stream, which it then owns. An error ends
	// the publication.
	Write(u streamcore.Unit) error
	// Close is called once when the publisher leaves or is cut off, with
	// the reason (io.EOF when the caller closed the connection).
	Close(err error)
}

// InlineSink is a Sink that can tell when its Write stops waiting on
// anything: a stream core source once its tracks are decided, which only
// queues each unit for its readers and drops for a reader that falls
// behind (streamcore.ReaderOptions). From then on the server demuxes the
// connection on the socket's goroutine at each tick, instead of waking
// the connection's goroutine for each tick's packets: on a small VM each
// wake of a second thread costs about 0.1 ms of CPU, a tenth of a
// stream's whole ingest each second at 25 ticks a second. A Write that
// blocks then stalls every connection of the socket, so Inline must
// report true only when none will; Tracks and Close are still called on
// the connection's goroutine.
type InlineSink interface {
	Sink
	// Inline reports whether Write no longer blocks, from now on. It is
	// asked on the connection's goroutine after each unit written there,
	// until it reports true.
	Inline() bool
}

// LinkStats is the state of an SRT connection, for the stream's health.
type LinkStats struct {
	// RTT is the smoothed round-trip time.
	RTT time.Duration
	// Received counts the data packets received, retransmissions included.
	Received uint64
	// Lost counts the packets found missing (and then asked again).
	Lost uint64
	// Retransmitted counts the retransmitted packets received.
	Retransmitted uint64
	// Dropped counts the packets that never came in time: what SRT could
	// not recover.
	Dropped uint64
}

// Reasons a connection ends.
var (
	ErrServerClosed = errors.New("srt: server closed")
	ErrIdle         = errors.New("srt: nothing received within the idle timeout")
)

// Server accepts SRT publishers. Set the fields, then Listen and Serve.
// The admission fields mean what rtmp.Server's do (admission.go).
type Server struct {
	Handler Handler
	Logger  *slog.Logger
	// Passphrase, when set, is required of every caller (AES, SRT's
	// passphrase= option); when empty an encrypting caller is refused.
	Passphrase string
	// Latency is the least receive latency (DefaultLatency); a caller may
	// ask for more.
	Latency time.Duration
	// IdleTimeout closes a connection that delivers nothing for this long
	// (DefaultIdleTimeout).
	IdleTimeout          time.Duration
	AdmissionTimeout     time.Duration
	MaxConnections       int
	MaxPending           int
	MaxPendingPerAddr    int
	MaxPublishersPerAddr int
	KeyThrottle          time.Duration

	ln       *listener
	mu       sync.Mutex
	conns    map[*conn]struct{}
	closed   bool
	draining bool
	wg       sync.WaitGroup
	adm      admission
	counts   counters
}

// conn is one caller, from its request to its end.
type conn struct {
	s      *Server
	addr   string // admission key of the remote address
	key    string
	remote net.Addr
	srt    atomic.Pointer[lconn]
	sink   Sink
	ctx    context.Context
	cancel context.CancelCauseFunc
	last   atomic.Int64 // unix nanoseconds of the last read

	// Admission, under Server.mu.
	state    admState
	pendingE *pendingElem
	timer    *time.Timer
}

// Config is the gosrt configuration of a listener with the least receive
// latency (DefaultLatency when 0), requiring encryption when passphrase is
// set: the Server's, and bench/live's bare listener's.
func Config(latency time.Duration, passphrase string) gosrt.Config {
	cfg := gosrt.DefaultConfig()
	lat := durationOr(latency, DefaultLatency)
	cfg.ReceiverLatency, cfg.PeerLatency = lat, lat
	cfg.EnforcedEncryption = passphrase != ""
	return cfg
}

// Listen opens the UDP socket at addr.
func (s *Server) Listen(addr string) error {
	ln, err := listen(addr, durationOr(s.Latency, DefaultLatency))
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.ln, s.conns = ln, map[*conn]struct{}{}
	s.mu.Unlock()
	return nil
}

// Addr is the listening address (after Listen).
func (s *Server) Addr() net.Addr {
	if s.ln == nil {
		return nil
	}
	return s.ln.addr
}

// Conns counts the connections open or being admitted.
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

// Serve answers callers until Close, then returns ErrServerClosed.
func (s *Server) Serve() error {
	if s.Handler == nil || s.ln == nil {
		return errors.New("srt: server without handler or listener")
	}
	for {
		req, err := s.ln.accept()
		if err != nil {
			return ErrServerClosed
		}
		s.wg.Add(1)
		go s.handle(req)
	}
}

// handle runs one caller: the handshake's decision, then its stream.
func (s *Server) handle(req *request) {
	defer s.wg.Done()
	c, reason := s.admitRequest(req)
	if c == nil {
		req.Reject(reason)
		return
	}
	var err error
	defer func() {
		if r := recover(); r != nil {
			s.logger().Error("srt connection panicked", "remote", c.remote, "panic", r, "stack", string(debug.Stack()))
			err = fmt.Errorf("srt: panic: %v", r)
		}
		if cause := context.Cause(c.ctx); cause != nil && !errors.Is(cause, context.Canceled) {
			err = cause // the reason it was cut off, not the read error that followed
		}
		c.cancel(err)
		if sc := c.srt.Load(); sc != nil {
			sc.Close()
		}
		if c.sink != nil {
			c.sink.Close(err)
		}
		s.release(c, err)
	}()
	err = s.publish(c, req)
	if err != nil {
		return
	}
	err = c.run()
}

// publish checks the caller's secrets and asks the Handler, then accepts
// the connection; a refusal is sent as an SRT rejection.
func (s *Server) publish(c *conn, req *request) error {
	switch {
	case s.Passphrase == "" && req.IsEncrypted():
		req.Reject(rejUnsecure)
		return errRefused
	case s.Passphrase != "" && !req.IsEncrypted():
		req.Reject(rejUnsecure)
		return errRefused
	case s.Passphrase != "":
		if err := req.SetPassphrase(s.Passphrase); err != nil {
			req.Reject(rejBadSecret)
			return errRefused
		}
	}
	if err := s.publisherRoom(c); err != nil {
		req.Reject(rejxOverload)
		return err
	}
	sink, err := s.Handler.Publish(c.ctx, PublishRequest{Key: c.key, RemoteAddr: c.remote,
		Disconnect: c.kill, Link: c.link})
	s.keyResult(c.addr, c.key, !errors.Is(err, ErrUnauthorized), time.Now())
	if err != nil {
		switch {
		case errors.Is(err, ErrUnauthorized):
			req.Reject(rejxUnauth)
		case errors.Is(err, ErrUnavailable):
			req.Reject(rejxDown)
		default:
			req.Reject(rejxForbidden)
		}
		return errRefused
	}
	c.sink = sink
	sc, err := req.Accept()
	if err != nil {
		return err
	}
	c.srt.Store(sc)
	if err := context.Cause(c.ctx); err != nil {
		return err // cut off during the handshake
	}
	return nil
}

// errRefused ends a caller refused in the handshake.
var errRefused = errors.New("srt: refused")

// run reads the caller's MPEG-TS into the sink until the end.
func (c *conn) run() error {
	c.last.Store(time.Now().UnixNano())
	stop := c.watch()
	defer stop()
	sc := c.srt.Load()
	// Written before handOver, read by the socket's goroutine after: once
	// inline, the pump stamps the last read once a tick, not each read.
	inline, read := false, false
	r := readerFunc(func(p []byte) (int, error) {
		if inline {
			n, err := sc.readNow(p)
			read = read || n > 0
			return n, err
		}
		n, err := sc.Read(p)
		if n > 0 {
			c.last.Store(time.Now().UnixNano())
		}
		return n, err
	})
	d, err := NewDemuxer(r, c.sink.Write, nil)
	if err != nil {
		return err
	}
	if err := c.s.promote(c); err != nil {
		return err
	}
	if err := c.sink.Tracks(d.Tracks()); err != nil {
		return err
	}
	is, _ := c.sink.(InlineSink)
	for {
		if err := d.Read(); err != nil {
			return err
		}
		if is != nil && is.Inline() {
			break
		}
	}
	// From here the socket's goroutine demuxes each tick's packets; this
	// one waits for the end.
	inline = true
	pump := func() error {
		defer func() {
			if read {
				read = false
				c.last.Store(time.Now().UnixNano())
			}
		}()
		for {
			if err := d.Read(); err != nil {
				if err == errDrained {
					return nil
				}
				return err
			}
		}
	}
	if sc.handOver(pump) {
		<-sc.gone
	}
	return *sc.err.Load()
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

// watch closes the connection when it delivers nothing for the idle
// timeout; the returned func stops watching. Its timer is set for when
// the connection would have been idle that long since its last read,
// and set again from there when it has read since: one wake an idle
// timeout for a live stream, where a ticker of a second woke the process
// (a second thread, and sysmon) thirty times a stream for nothing.
func (c *conn) watch() func() {
	idle := durationOr(c.s.IdleTimeout, DefaultIdleTimeout)
	t := time.NewTimer(idle)
	done := make(chan struct{})
	go func() {
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-c.ctx.Done():
				return
			case now := <-t.C:
				quiet := now.Sub(time.Unix(0, c.last.Load()))
				if quiet >= idle {
					c.kill(ErrIdle)
					return
				}
				t.Reset(idle - quiet)
			}
		}
	}()
	return func() { close(done) }
}

// kill cuts the connection off with reason.
func (c *conn) kill(reason error) {
	if reason == nil {
		reason = rtmp.ErrDisconnected
	}
	c.cancel(reason)
	if sc := c.srt.Load(); sc != nil {
		(*sc).Close()
	}
}

// link measures the connection.
func (c *conn) link() LinkStats {
	sc := c.srt.Load()
	if sc == nil {
		return LinkStats{}
	}
	return sc.Stats()
}

// CloseListener stops admitting callers (they are refused with
// REJX_DOWN); publishers carry on until Close. SRT multiplexes every
// connection on the one UDP socket, so the socket stays open.
func (s *Server) CloseListener() {
	s.mu.Lock()
	s.draining = true
	s.mu.Unlock()
}

// Close cuts every publisher off (their Sinks get ErrServerClosed),
// closes the socket and waits for the connections to end.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	list := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		list = append(list, c)
	}
	s.mu.Unlock()
	for _, c := range list {
		c.kill(ErrServerClosed)
	}
	if s.ln != nil {
		s.ln.close()
	}
	s.wg.Wait()
	return nil
}

var _ io.Reader = readerFunc(nil)
