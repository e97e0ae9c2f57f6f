package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
)

// Connection limits of the HTTP listener (docs/operations.md).
//
// connGuard wraps the listener the Fiber app serves on. Its Accept never
// fails for a passing reason: an error (no descriptor left, a connection
// reset before it was accepted...) is logged, at most every few seconds,
// and retried with a capped exponential backoff, so the process keeps
// serving what it holds. It also caps the open connections of the process
// (ONAIR_MAX_CONNS) and of one client address (ONAIR_MAX_CONNS_PER_IP):
// a connection over a cap is answered at once, 503 or 429 in the API's
// error shape with Connection: close, and closed.
type connGuard struct {
	log     *slog.Logger
	max     int
	perIP   int
	trusted trustedProxies

	slots  chan struct{} // one token per open connection; len() is the count
	mu     sync.Mutex
	perKey map[string]int

	// refusing bounds the goroutines answering refused connections, so a
	// flood of them costs at most this many descriptors at once.
	refusing chan struct{}

	refused      *prometheus.CounterVec
	acceptErrors prometheus.Counter
}

// Backoff of Accept after an error: from acceptBackoffMin, doubling, never
// more than acceptBackoffMax; an error is logged at most every acceptLogEvery.
const (
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
	acceptLogEvery   = 5 * time.Second
	refusers         = 64
)

// descriptorReserve is what ONAIR_MAX_CONNS=0 keeps free of connections
// out of the soft descriptor limit: max(128, limit/8) descriptors for the
// database, media files, logs, Redis, RTMP and the refused connections on
// their way out.
func descriptorReserve(limit uint64) uint64 { return max(128, limit/8) }

// derivedMaxConns is the connection cap for ONAIR_MAX_CONNS=0: the soft
// descriptor limit minus descriptorReserve, at least 32.
func derivedMaxConns(soft uint64) int {
	if soft == 0 {
		return 1 << 16 // no limit known (not Unix)
	}
	reserve := descriptorReserve(soft)
	if soft <= reserve+32 {
		return 32
	}
	return int(min(soft-reserve, 1<<30))
}

func newConnGuard(cfg *Config, log *slog.Logger, reg prometheus.Registerer) (*connGuard, error) {
	g := &connGuard{
		log: log, max: cfg.MaxConns, perIP: cfg.MaxConnsPerIP, trusted: cfg.TrustedProxies,
		perKey:   map[string]int{},
		refusing: make(chan struct{}, refusers),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "onair_http_connections_refused_total",
			Help: "HTTP connections answered and closed at once because a cap was reached, by reason (max_conns, max_conns_per_ip).",
		}, []string{"reason"}),
		acceptErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "onair_http_accept_errors_total",
			Help: "Errors accepting HTTP connections (such as no descriptor left); each is retried after a backoff.",
		}),
	}
	if g.max == 0 {
		soft, _ := descriptorLimit()
		g.max = derivedMaxConns(soft)
	}
	g.slots = make(chan struct{}, g.max)
	// Both reasons exist from the start, at 0, so a query over them works
	// before the first refusal.
	g.refused.WithLabelValues(reasonMaxConns)
	g.refused.WithLabelValues(reasonMaxConnsPerIP)
	err := errors.Join(
		reg.Register(g.refused),
		reg.Register(g.acceptErrors),
		reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "onair_http_connections_open",
			Help: "HTTP connections open (web sockets included).",
		}, func() float64 { return float64(len(g.slots)) })),
		reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "onair_http_connections_max",
			Help: "The cap on open HTTP connections (ONAIR_MAX_CONNS, or derived from the descriptor limit).",
		}, func() float64 { return float64(g.max) })),
	)
	if err != nil {
		return nil, fmt.Errorf("app: connection metrics: %w", err)
	}
	return g, nil
}

const (
	reasonMaxConns      = "max_conns"
	reasonMaxConnsPerIP = "max_conns_per_ip"
)

// listener wraps ln with the guard.
func (g *connGuard) listener(ln net.Listener) net.Listener {
	return &guardedListener{Listener: ln, g: g, closed: make(chan struct{})}
}

type guardedListener struct {
	net.Listener
	g         *connGuard
	closed    chan struct{}
	closeOnce sync.Once
	// Accept runs on one goroutine (the server's accept loop): these need
	// no lock.
	backoff  time.Duration
	lastLog  time.Time
	unlogged int
}

func (l *guardedListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// Accept returns the next connection within the caps. It returns an error
// only once the listener is closed.
func (l *guardedListener) Accept() (net.Conn, error) {
	g := l.g
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil, err
			}
			select {
			case <-l.closed:
				return nil, err
			default:
			}
			g.acceptErrors.Inc()
			l.backoff = min(max(2*l.backoff, acceptBackoffMin), acceptBackoffMax)
			if time.Since(l.lastLog) >= acceptLogEvery {
				g.log.Error("accepting connections failed; retrying", "err", err, "retry_in", l.backoff,
					"errors_since_last_line", l.unlogged, "open", len(g.slots), "max_conns", g.max)
				l.lastLog, l.unlogged = time.Now(), 0
			} else {
				l.unlogged++
			}
			select {
			case <-time.After(l.backoff):
			case <-l.closed:
				return nil, net.ErrClosed
			}
			continue
		}
		l.backoff = 0
		if tc, ok := g.admit(c); ok {
			return tc, nil
		}
	}
}

// admit counts c against the caps. Over one, it is answered and closed
// (by a refuser goroutine) and admit reports false.
func (g *connGuard) admit(c net.Conn) (net.Conn, bool) {
	select {
	case g.slots <- struct{}{}:
	default:
		g.refuse(c, reasonMaxConns, &Error{Status: http.StatusServiceUnavailable, Code: "server_busy",
			Message: "the server has as many connections open as it can hold; retry shortly", RetryAfter: 1})
		return nil, false
	}
	key := ""
	if a, ok := addrOf(c.RemoteAddr()); ok && !g.trusted.trusts(a) {
		key = clientKey(a)
	}
	if key != "" {
		g.mu.Lock()
		n := g.perKey[key]
		if n >= g.perIP {
			g.mu.Unlock()
			<-g.slots
			g.refuse(c, reasonMaxConnsPerIP, g.perIPError())
			return nil, false
		}
		g.perKey[key] = n + 1
		g.mu.Unlock()
	}
	return &trackedConn{Conn: c, g: g, counted: key != "", release: func() { g.release(key) }}, true
}

func (g *connGuard) release(key string) {
	g.put(key)
	<-g.slots
}

// put gives back a place of key under ONAIR_MAX_CONNS_PER_IP.
func (g *connGuard) put(key string) {
	if key == "" {
		return
	}
	g.mu.Lock()
	if g.perKey[key] <= 1 {
		delete(g.perKey, key)
	} else {
		g.perKey[key]--
	}
	g.mu.Unlock()
}

// HoldClient counts a request that keeps its connection for long (an
// event stream, an LL-HLS blocking playlist reload, a chat web socket)
// under ONAIR_MAX_CONNS_PER_IP of its client address, when its connection
// is not counted there already: a connection from a trusted proxy carries
// many clients' requests and is exempt itself, so each such request counts
// for the client the proxy forwards (c.IP()). A client's own connection
// counts once, whatever its requests do. Over the cap it returns the
// refusal a connection over the cap gets (429 too_many_connections,
// Retry-After: 1); otherwise release, which the caller runs (once) when
// the request lets go of the connection.
func HoldClient(c *fiber.Ctx) (release func(), err error) {
	none := func() {}
	tc, ok := c.Context().Conn().(*trackedConn)
	if !ok || tc.counted {
		return none, nil
	}
	g := tc.g
	a, err := netip.ParseAddr(c.IP())
	if err != nil || g.trusted.trusts(a) {
		return none, nil // no client named, or the proxy itself
	}
	key := clientKey(a)
	g.mu.Lock()
	if g.perKey[key] >= g.perIP {
		g.mu.Unlock()
		g.refused.WithLabelValues(reasonMaxConnsPerIP).Inc()
		return nil, g.perIPError()
	}
	g.perKey[key]++
	g.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { g.put(key) }) }, nil
}

func (g *connGuard) perIPError() *Error {
	return &Error{Status: http.StatusTooManyRequests, Code: "too_many_connections",
		Message: fmt.Sprintf("at most %d connections per client address", g.perIP), RetryAfter: 1}
}

// refuse answers c with e and closes it. The answer goes out before the
// request is read; the refuser then reads and drops what the client sends
// until it closes (or a second passes), so the close does not reset the
// connection under a response the client has not read yet.
func (g *connGuard) refuse(c net.Conn, reason string, e *Error) {
	g.refused.WithLabelValues(reason).Inc()
	select {
	case g.refusing <- struct{}{}:
	default:
		c.Close() // too many refusals in flight: no answer
		return
	}
	go func() {
		defer func() { <-g.refusing }()
		defer c.Close()
		c.SetDeadline(time.Now().Add(time.Second))
		body, _ := json.Marshal(map[string]*Error{"error": e})
		fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nRetry-After: %d\r\nConnection: close\r\n\r\n%s",
			e.Status, http.StatusText(e.Status), len(body), e.RetryAfter, body)
		if tc, ok := c.(interface{ CloseWrite() error }); ok {
			tc.CloseWrite()
		}
		io.Copy(io.Discard, io.LimitReader(c, 64<<10))
	}()
}

// trackedConn gives its place back under the caps when closed (once).
type trackedConn struct {
	net.Conn
	g *connGuard
	// counted: the connection holds a place of its peer's address under
	// ONAIR_MAX_CONNS_PER_IP (false for a trusted proxy's).
	counted bool
	release func()
	once    sync.Once
	// ahead holds what a one-byte Read got beyond its byte, ahead[off:]
	// still to be read; nil when there is none (see Read).
	ahead *[readAheadSize]byte
	off   int
	end   int
}

// readAheadSize is what a one-byte Read asks the kernel for: a request's
// line and usual headers.
const readAheadSize = 4 << 10

var readAheadPool = sync.Pool{New: func() any { return new([readAheadSize]byte) }}

// Read is the connection's Read, but for one thing. With
// ReduceMemoryUsage (NewServer), fasthttp waits for a keep-alive
// connection's next request by reading one byte, so that an idle
// connection holds no buffer, then reads the rest into a buffer of its
// pool: two read(2)s a request where one would do (a live playlist polled
// several times a second by every player). A one-byte Read here asks the
// kernel for up to readAheadSize bytes into a pooled buffer and keeps
// what is beyond the byte for the next Reads, which drain it before they
// read the connection again; drained, the buffer goes back to the pool,
// so an idle connection still holds none.
func (c *trackedConn) Read(p []byte) (int, error) {
	if c.ahead != nil {
		n := copy(p, c.ahead[c.off:c.end])
		if c.off += n; c.off == c.end {
			readAheadPool.Put(c.ahead)
			c.ahead = nil
		}
		return n, nil
	}
	if len(p) != 1 {
		return c.Conn.Read(p)
	}
	buf := readAheadPool.Get().(*[readAheadSize]byte)
	n, err := c.Conn.Read(buf[:])
	if n <= 1 {
		copy(p, buf[:n])
		readAheadPool.Put(buf)
		return n, err
	}
	p[0] = buf[0]
	c.ahead, c.off, c.end = buf, 1, n
	return 1, nil
}

func (c *trackedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// SyscallConn gives the socket to a handler's body stream that sends with
// sendfile(2) itself (live media held in memory), which embedding would
// hide too.
func (c *trackedConn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := c.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, errors.ErrUnsupported
}

// ReadFrom keeps sendfile(2): fasthttp sends file bodies (media segments)
// through the connection's io.ReaderFrom, which embedding would hide.
func (c *trackedConn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c.Conn}, r)
}
