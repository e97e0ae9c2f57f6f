package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// The audience is read the way a lean WebSocket client reads, so that the
// benchmark measures the server's fan-out rather than its own reading (a
// real audience reads on its own machines, not on the server's two
// cores). Each socket is opened and upgraded with an ordinary HTTP/1.1
// handshake (its Sec-WebSocket-Accept checked), then handed from Go's
// network poller to one of a few readers, one a core, each waiting on an
// epoll set of its own: a reader wakes once for many sockets that became
// readable, reads each with one read(2) into its own buffer and parses
// the frames there. Every frame is checked (unmasked, final, a known
// opcode, its length), every text message is counted and told apart by
// its type, the sampled sockets take each chat message's send time from
// its text, pings are answered with pongs (masked, as a client must), and
// a close frame, a bad frame, a reset or an end of file marks the socket
// closed by the server. Nothing is allocated per message; a socket keeps
// only the start of a frame that a read cut (carry).

// viewer is one anonymous WebSocket client of the room. Its reader counts
// every event; a sampled viewer also records the delivery latency of each
// chat message from the send time embedded in its text.
type viewer struct {
	fd       int
	sampled  bool
	chats    atomic.Int64
	presence atomic.Int64
	other    atomic.Int64
	closed   atomic.Bool // the server closed it (dropped as slow, or an error)
	// carry is the start of a frame the last read cut; lat the sampled
	// latencies. Only the socket's reader touches them until it stops.
	carry []byte
	lat   []time.Duration
	// why tells how the socket ended when the server ended it.
	why string
}

var (
	chatPrefix     = []byte(`{"type":"chat.created"`)
	presencePrefix = []byte(`{"type":"presence"`)
	stampMarker    = []byte("bench t=")
)

// maxFrame bounds a frame the viewers accept (the server's events are a
// few hundred bytes; a larger one is an error).
const maxFrame = 1 << 20

// readBuf is each reader's buffer: one read(2) of a socket takes at most
// this much.
const readBuf = 64 << 10

// frames parses the complete frames at the start of data and returns the
// bytes of the frame it cut (the rest), or an error for a frame no server
// may send.
func (v *viewer) frames(data []byte) (rest []byte, err error) {
	for len(data) >= 2 {
		b0, b1 := data[0], data[1]
		if b1&0x80 != 0 {
			return nil, errors.New("masked frame from the server")
		}
		if b0&0x70 != 0 {
			return nil, errors.New("reserved bits set (no extension was agreed)")
		}
		head, n := 2, uint64(b1&0x7f)
		switch n {
		case 126:
			if len(data) < 4 {
				return data, nil
			}
			head, n = 4, uint64(binary.BigEndian.Uint16(data[2:]))
		case 127:
			if len(data) < 10 {
				return data, nil
			}
			head, n = 10, binary.BigEndian.Uint64(data[2:])
		}
		if n > maxFrame {
			return nil, fmt.Errorf("frame of %d bytes", n)
		}
		if uint64(len(data)-head) < n {
			return data, nil
		}
		payload := data[head : head+int(n)]
		data = data[head+int(n):]
		switch op := b0 & 0x0f; {
		case b0&0x80 == 0 || op == 0:
			return nil, errors.New("fragmented message (the server never fragments)")
		case op == 0x1:
			v.message(payload)
		case op == 0x8:
			code := 0
			if len(payload) >= 2 {
				code = int(binary.BigEndian.Uint16(payload))
			}
			return nil, fmt.Errorf("close %d", code)
		case op == 0x9:
			v.pong(payload)
		case op == 0xa:
		default:
			return nil, fmt.Errorf("opcode %#x", op)
		}
	}
	return data, nil
}

// message counts one text message by its type and takes a sampled chat
// message's latency from the send time in its text.
func (v *viewer) message(data []byte) {
	switch {
	case bytes.HasPrefix(data, chatPrefix):
		v.chats.Add(1)
		if v.sampled {
			if sent, ok := stamp(data); ok {
				v.lat = append(v.lat, time.Duration(time.Now().UnixNano()-sent))
			}
		}
	case bytes.HasPrefix(data, presencePrefix):
		v.presence.Add(1)
	default:
		v.other.Add(1)
	}
}

// pong answers a ping with its payload, masked as a client's frames are
// (RFC 6455 §5.3; the mask need not be secret for a benchmark).
func (v *viewer) pong(payload []byte) {
	var f [2 + 4 + 125]byte
	f[0], f[1] = 0x8a, 0x80|byte(len(payload))
	mask := [4]byte{0x5a, 0xa5, 0x3c, 0xc3}
	copy(f[2:], mask[:])
	for i, b := range payload {
		f[6+i] = b ^ mask[i%4]
	}
	unix.Write(v.fd, f[:6+len(payload)]) // a few bytes: the kernel's buffer takes them
}

// stamp finds the send time (Unix ns) in a chat event's text.
func stamp(data []byte) (int64, bool) {
	i := bytes.Index(data, stampMarker)
	if i < 0 {
		return 0, false
	}
	rest := data[i+len(stampMarker):]
	var n int64
	j := 0
	for ; j < len(rest) && j < 19 && rest[j] >= '0' && rest[j] <= '9'; j++ {
		n = n*10 + int64(rest[j]-'0')
	}
	return n, j > 0
}

// reader reads the sockets of its epoll set until the crowd quits.
type reader struct {
	epfd int
	buf  []byte
	// sockets is this reader's viewers by descriptor.
	mu      sync.Mutex
	sockets map[int32]*viewer
	done    chan struct{}
}

func newReader() (*reader, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll: %w", err)
	}
	return &reader{epfd: epfd, buf: make([]byte, readBuf), sockets: map[int32]*viewer{}, done: make(chan struct{})}, nil
}

// add starts reading v (level-triggered: a socket read only in part is
// reported again).
func (r *reader) add(v *viewer) error {
	r.mu.Lock()
	r.sockets[int32(v.fd)] = v
	r.mu.Unlock()
	return unix.EpollCtl(r.epfd, unix.EPOLL_CTL_ADD, v.fd, &unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(v.fd)})
}

// napAfterRound is how long a reader waits after a round that did not
// fill its events: the server writes a flush socket by socket a few
// microseconds apart, and a reader back in epoll_wait at once would be
// woken (by the server's write, on the server's CPU) for each socket,
// where after a nap it finds a few hundred ready together. A message
// reaches the benchmark at most this much later than it could.
const napAfterRound = time.Millisecond

// run waits for readable sockets and reads each once per round.
func (r *reader) run(quitting *atomic.Bool) {
	defer close(r.done)
	events := make([]unix.EpollEvent, 1024)
	var ready []*viewer
	for !quitting.Load() {
		n, err := unix.EpollWait(r.epfd, events, 100)
		if err != nil && err != unix.EINTR {
			return
		}
		ready = ready[:0]
		r.mu.Lock()
		for _, ev := range events[:max(n, 0)] {
			if v := r.sockets[ev.Fd]; v != nil {
				ready = append(ready, v)
			}
		}
		r.mu.Unlock()
		for _, v := range ready {
			r.read(v, quitting)
		}
		if n > 0 && n < len(events) {
			time.Sleep(napAfterRound)
		}
	}
}

// read takes what one read(2) gives of v and parses its frames.
func (r *reader) read(v *viewer, quitting *atomic.Bool) {
	n, err := unix.Read(v.fd, r.buf)
	switch {
	case err == unix.EAGAIN || err == unix.EINTR:
		return
	case err != nil:
		r.end(v, err.Error(), quitting)
		return
	case n == 0:
		r.end(v, "end of file", quitting)
		return
	}
	data := r.buf[:n]
	if len(v.carry) > 0 {
		v.carry = append(v.carry, data...)
		data = v.carry
	}
	rest, err := v.frames(data)
	if err != nil {
		r.end(v, err.Error(), quitting)
		return
	}
	// Keep the cut frame's start (in place when it is carry's own tail).
	v.carry = append(v.carry[:0], rest...)
}

// end stops reading v; unless the benchmark is quitting, the server
// closed it.
func (r *reader) end(v *viewer, why string, quitting *atomic.Bool) {
	unix.EpollCtl(r.epfd, unix.EPOLL_CTL_DEL, v.fd, nil)
	r.mu.Lock()
	delete(r.sockets, int32(v.fd))
	r.mu.Unlock()
	if !quitting.Load() {
		v.why = why
		v.closed.Store(true)
	}
}

// crowd is the viewers of one phase.
type crowd struct {
	viewers  []*viewer
	readers  []*reader
	quitting atomic.Bool
	failed   []string
	once     sync.Once
}

// connect opens n anonymous sockets on the show's public room route,
// concurrency at a time, each with the viewer cookie viewerID gives, from
// loopback source addresses in turn (so ephemeral ports are no limit). It
// gives up dialling at the deadline.
func connect(ctx context.Context, wsURL string, n, concurrency, sample int, within time.Duration, viewerID func() string) (*crowd, error) {
	c := &crowd{viewers: make([]*viewer, 0, n)}
	for range runtime.GOMAXPROCS(0) {
		r, err := newReader()
		if err != nil {
			c.close()
			return nil, err
		}
		c.readers = append(c.readers, r)
		go r.run(&c.quitting)
	}
	u, err := url.Parse(wsURL)
	if err != nil {
		return nil, err
	}
	stride := max(1, (n+sample-1)/sample)
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		next atomic.Int64
	)
	deadline := time.Now().Add(within)
	for range concurrency {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || time.Now().After(deadline) || ctx.Err() != nil {
					return
				}
				local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+i%8))}
				v, err := dial(ctx, u, local, viewerID())
				if err == nil {
					v.sampled = i%stride == 0
					if v.sampled {
						v.lat = make([]time.Duration, 0, 512)
					}
					// What came behind the server's answer (its greeting).
					var rest []byte
					if rest, err = v.frames(v.carry); err == nil {
						v.carry = append(v.carry[:0], rest...)
						err = c.readers[i%len(c.readers)].add(v)
					}
					if err != nil && v.fd >= 0 {
						unix.Close(v.fd)
					}
				}
				mu.Lock()
				if err != nil {
					c.failed = append(c.failed, err.Error())
				} else {
					c.viewers = append(c.viewers, v)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return c, nil
}

// dial opens one socket and upgrades it; the socket's descriptor is then
// the viewer's alone (a duplicate, out of Go's network poller), and what
// the server sent behind its answer is the start of the first frame.
func dial(ctx context.Context, u *url.URL, local *net.TCPAddr, cookie string) (*viewer, error) {
	d := net.Dialer{LocalAddr: local, Timeout: 10 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return nil, fmt.Errorf("%v (status 0)", err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	var nonce [16]byte
	rand.Read(nonce[:])
	key := base64.StdEncoding.EncodeToString(nonce[:])
	req := "GET " + u.RequestURI() + " HTTP/1.1\r\nHost: " + u.Host +
		"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: " + key +
		"\r\nCookie: onair_viewer=" + cookie + "\r\n\r\n"
	if _, err := conn.Write([]byte(req)); err != nil {
		return nil, fmt.Errorf("handshake: %v (status 0)", err)
	}
	buf := make([]byte, 0, 2048)
	end := -1
	for end < 0 {
		if len(buf) == cap(buf) {
			return nil, errors.New("handshake: answer too long (status 0)")
		}
		m, err := conn.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if end = bytes.Index(buf, []byte("\r\n\r\n")); end < 0 && err != nil {
			return nil, fmt.Errorf("handshake: %v (status 0)", err)
		}
	}
	head := string(buf[:end])
	status, _, _ := strings.Cut(head, "\r\n")
	if !strings.HasPrefix(status, "HTTP/1.1 101 ") {
		code := 0
		fmt.Sscanf(status, "HTTP/1.1 %d", &code)
		return nil, fmt.Errorf("websocket: bad handshake (status %d)", code)
	}
	sum := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	if !strings.Contains(strings.ToLower(head), "\r\nsec-websocket-accept: "+strings.ToLower(base64.StdEncoding.EncodeToString(sum[:]))) {
		return nil, errors.New("handshake: wrong Sec-WebSocket-Accept (status 101)")
	}
	raw, err := conn.(*net.TCPConn).SyscallConn()
	if err != nil {
		return nil, err
	}
	fd := -1
	raw.Control(func(s uintptr) { fd, err = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) })
	if err != nil {
		return nil, fmt.Errorf("dup: %v (status 101)", err)
	}
	// The duplicate shares the socket (and its non-blocking mode); closing
	// conn takes the original out of Go's poller without closing the socket.
	v := &viewer{fd: fd}
	if rest := buf[end+4:]; len(rest) > 0 {
		v.carry = append([]byte(nil), rest...)
	}
	return v, nil
}

// totals sums the viewers' counters.
func (c *crowd) totals() (chats, presence, other int64, closed int) {
	for _, v := range c.viewers {
		chats += v.chats.Load()
		presence += v.presence.Load()
		other += v.other.Load()
		if v.closed.Load() {
			closed++
		}
	}
	return
}

// settle waits until no viewer has received anything for quiet (or until
// within has passed); it reports whether it got quiet and when the last
// event arrived (to 100 ms).
func settle(c audience, quiet, within time.Duration) (bool, time.Time) {
	deadline := time.Now().Add(within)
	last := int64(-1)
	since := time.Now()
	for time.Now().Before(deadline) {
		a, b, o, _ := c.totals()
		if sum := a + b + o; sum != last {
			last, since = sum, time.Now()
		} else if time.Since(since) >= quiet {
			return true, since
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false, since
}

// close stops the readers, then closes every socket (once).
func (c *crowd) close() {
	c.once.Do(func() {
		c.quitting.Store(true)
		for _, r := range c.readers {
			<-r.done
			unix.Close(r.epfd)
		}
		for _, v := range c.viewers {
			unix.Close(v.fd)
		}
	})
}

// latencies gathers the sampled viewers' delivery latencies (after close).
func (c *crowd) latencies() []time.Duration {
	var all []time.Duration
	for _, v := range c.viewers {
		if v.sampled {
			all = append(all, v.lat...)
		}
	}
	return all
}

// closedWhy summarizes how the server ended the sockets it closed (after
// close).
func (c *crowd) closedWhy() string {
	var why []string
	for _, v := range c.viewers {
		if v.why != "" {
			why = append(why, v.why)
		}
	}
	return summarizeFailures(why)
}

func summarizeFailures(failed []string) string {
	if len(failed) == 0 {
		return ""
	}
	counts := map[string]int{}
	for _, f := range failed {
		counts[f]++
	}
	var parts []string
	for f, n := range counts {
		parts = append(parts, fmt.Sprintf("%d× %s", n, f))
		if len(parts) == 3 {
			break
		}
	}
	return strings.Join(parts, "; ")
}
