package rtmp

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/onair/onair/modules/live/amf0"
)

// The client side: a publisher that sends one stream to an RTMP or RTMPS
// server (a platform's ingest, another OnAir, nginx-rtmp), on the same
// handshake and chunk layer as the server. The restream module pushes
// live shows with it.

// Target is a publish URL split the way encoders split it:
// rtmp://host[:port]/app[/more]/KEY publishes KEY (the last path
// element, with any query) to the application "app[/more]".
type Target struct {
	Scheme string // rtmp or rtmps
	// Address is host:port, with the scheme's default port (1935 for
	// rtmp, 443 for rtmps) when the URL has none.
	Address string
	// Host is the host without the port (the TLS server name).
	Host string
	App  string
	Key  string
	// TCURL is what connect announces: scheme://host[:port]/app.
	TCURL string
}

// Errors of ParseTarget.
var (
	ErrBadURL = errors.New("rtmp: not an rtmp:// or rtmps:// URL with a host")
	ErrNoKey  = errors.New("rtmp: the URL has no stream key (rtmp://host/app/KEY)")
	ErrNoApp  = errors.New("rtmp: the URL has no application (rtmp://host/app/KEY)")
)

// MaxTargetURL bounds a publish URL: a command object carries it.
const MaxTargetURL = 2000

// ParseTarget reads a publish URL. The key is the last path element
// (what follows the last '/', query included); the application is the
// path before it.
func ParseTarget(raw string) (Target, error) {
	if len(raw) > MaxTargetURL {
		return Target{}, ErrBadURL
	}
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" || u.User != nil || u.Fragment != "" {
		return Target{}, ErrBadURL
	}
	t := Target{Scheme: strings.ToLower(u.Scheme), Host: u.Hostname()}
	port := u.Port()
	switch {
	case t.Scheme != "rtmp" && t.Scheme != "rtmps":
		return Target{}, ErrBadURL
	case t.Host == "" || strings.HasSuffix(u.Host, ":"):
		return Target{}, ErrBadURL
	case port == "" && t.Scheme == "rtmp":
		port = "1935"
	case port == "":
		port = "443"
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return Target{}, ErrBadURL
	}
	t.Address = net.JoinHostPort(t.Host, port)
	path := strings.TrimPrefix(u.EscapedPath(), "/")
	i := strings.LastIndexByte(path, '/')
	if i < 0 {
		if path == "" {
			return Target{}, ErrNoApp
		}
		return Target{}, ErrNoKey
	}
	app, key := path[:i], path[i+1:]
	if u.RawQuery != "" {
		key += "?" + u.RawQuery
	}
	if app = strings.Trim(app, "/"); app == "" {
		return Target{}, ErrNoApp
	}
	if key == "" || strings.HasPrefix(key, "?") {
		return Target{}, ErrNoKey
	}
	if a, err := url.PathUnescape(app); err == nil {
		app = a
	}
	if k, err := url.PathUnescape(key); err == nil {
		key = k
	}
	t.App, t.Key = app, key
	t.TCURL = t.Scheme + "://" + u.Host + "/" + app
	return t, nil
}

// ClientOptions tune a Client. Zero fields take the defaults.
type ClientOptions struct {
	// Dialer connects (its Control can refuse addresses); default a
	// net.Dialer with Timeout.
	Dialer *net.Dialer
	// TLS is the RTMPS configuration; ServerName defaults to the URL's
	// host.
	TLS *tls.Config
	// Timeout bounds connecting, the handshake and the commands up to an
	// accepted publish (default 10 s).
	Timeout time.Duration
	// WriteTimeout bounds each write of media (default 10 s): a server
	// that stops reading ends the connection.
	WriteTimeout time.Duration
	// Limits bound what the server can make the client hold.
	Limits Limits
}

// PublishError is the server's refusal of connect or publish: its
// status code and description.
type PublishError struct {
	Code, Description string
}

func (e *PublishError) Error() string {
	if e.Description == "" {
		return "rtmp: refused: " + e.Code
	}
	return "rtmp: refused: " + e.Code + ": " + e.Description
}

// Chunk streams the client sends on (control is csidControl).
const (
	csidClientCommand = 3
	csidClientData    = 4
	csidClientAudio   = 6
	csidClientVideo   = 7
)

// Client is one publication to a server. WriteVideo, WriteAudio and
// WriteMetadata are safe for concurrent use with its own goroutine,
// which answers the server's pings and acknowledges what it received.
type Client struct {
	nc           net.Conn
	writeTimeout time.Duration
	streamID     uint32

	mu sync.Mutex // the writer
	bw *bufio.Writer
	cw *ChunkWriter

	sent     atomic.Uint64
	done     chan struct{}
	closeErr atomic.Pointer[error]
	once     sync.Once
}

// Publish connects to the server of raw, publishes its key and returns
// the Client ready for media. ctx bounds the connection's setup only.
func Publish(ctx context.Context, raw string, o ClientOptions) (*Client, error) {
	t, err := ParseTarget(raw)
	if err != nil {
		return nil, err
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 10 * time.Second
	}
	d := o.Dialer
	if d == nil {
		d = &net.Dialer{Timeout: o.Timeout}
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	nc, err := d.DialContext(ctx, "tcp", t.Address)
	if err != nil {
		return nil, err
	}
	if t.Scheme == "rtmps" {
		cfg := &tls.Config{}
		if o.TLS != nil {
			cfg = o.TLS.Clone()
		}
		if cfg.ServerName == "" {
			cfg.ServerName = t.Host
		}
		nc = tls.Client(nc, cfg)
	}
	deadline, _ := ctx.Deadline()
	nc.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Unix(1, 0)) })
	c := &Client{nc: nc, writeTimeout: o.WriteTimeout, done: make(chan struct{})}
	cr, err := c.setup(t, o.Limits)
	if !stop() || err != nil {
		nc.Close()
		if err == nil || ctx.Err() != nil && !errors.As(err, new(*PublishError)) {
			err = fmt.Errorf("rtmp: publish to %s: %w", t.Address, errors.Join(ctx.Err(), err))
		}
		return nil, err
	}
	nc.SetDeadline(time.Time{})
	go c.read(cr)
	return c, nil
}

// setup runs the handshake and the commands of a publisher: connect,
// releaseStream, FCPublish, createStream, publish.
func (c *Client) setup(t Target, limits Limits) (*ChunkReader, error) {
	br := bufio.NewReader(c.nc)
	c.bw = bufio.NewWriterSize(c.nc, 64<<10)
	c.cw = NewChunkWriter(c.bw)
	if err := publisherHandshake(br, c.bw); err != nil {
		return nil, fmt.Errorf("rtmp: handshake: %w", err)
	}
	cr := NewChunkReader(br, limits)
	const chunk = 4096
	if err := c.cw.WriteMessage(SetChunkSizeMessage(chunk)); err != nil {
		return nil, err
	}
	c.cw.SetChunkSize(chunk)
	connect := amf0.Object{
		{Key: "app", Value: t.App},
		{Key: "type", Value: "nonprivate"},
		{Key: "flashVer", Value: "FMLE/3.0 (compatible; OnAir)"},
		{Key: "tcUrl", Value: t.TCURL},
	}
	if err := c.command(0, "connect", 1, connect); err != nil {
		return nil, err
	}
	if _, err := c.await(cr, 1); err != nil {
		return nil, err
	}
	if err := c.command(0, "releaseStream", 2, nil, t.Key); err != nil {
		return nil, err
	}
	if err := c.command(0, "FCPublish", 3, nil, t.Key); err != nil {
		return nil, err
	}
	if err := c.command(0, "createStream", 4, nil); err != nil {
		return nil, err
	}
	res, err := c.await(cr, 4)
	if err != nil {
		return nil, err
	}
	id, _ := res[len(res)-1].(float64)
	if id < 1 || id > 1<<24 {
		return nil, fmt.Errorf("rtmp: createStream answered stream %v", res[len(res)-1])
	}
	c.streamID = uint32(id)
	if err := c.command(c.streamID, "publish", 5, nil, t.Key, "live"); err != nil {
		return nil, err
	}
	return cr, c.awaitPublish(cr)
}

// publisherHandshake is the simple handshake of a client: C0+C1, then
// S0+S1+S2, then C2 echoing S1. S2 is not checked: servers that speak the
// digest handshake (nginx-rtmp, some platforms) answer a plain C1 with an
// S2 of their own making.
func publisherHandshake(r io.Reader, w *bufio.Writer) error {
	c0c1 := make([]byte, 1+handshakeSize)
	c0c1[0] = handshakeVersion
	if _, err := rand.Read(c0c1[9:]); err != nil {
		return err
	}
	if err := writeFlush(w, c0c1); err != nil {
		return err
	}
	s := make([]byte, 1+2*handshakeSize)
	if _, err := io.ReadFull(r, s); err != nil {
		return fmt.Errorf("read s0s1s2: %w", err)
	}
	if s[0] != handshakeVersion {
		return fmt.Errorf("s0 version %d: %w", s[0], ErrBadVersion)
	}
	return writeFlush(w, s[1:1+handshakeSize])
}

func (c *Client) command(streamID uint32, name string, txn float64, args ...any) error {
	p, err := amf0.Encode(nil, append([]any{name, txn}, args...)...)
	if err != nil {
		return err
	}
	m := &Message{ChunkStreamID: csidClientCommand, Type: TypeCommandAMF0, StreamID: streamID, Payload: p}
	if err := c.cw.WriteMessage(m); err != nil {
		return err
	}
	return c.cw.Flush()
}

// await reads until the answer to txn: its values after the name and the
// transaction id, or the server's _error as a *PublishError.
func (c *Client) await(cr *ChunkReader, txn float64) ([]any, error) {
	for {
		name, vals, err := c.next(cr)
		if err != nil {
			return nil, err
		}
		if len(vals) < 1 || vals[0] != txn {
			continue
		}
		switch name {
		case "_result":
			if len(vals) < 2 {
				return nil, errors.New("rtmp: an empty _result")
			}
			return vals[1:], nil
		case "_error":
			return nil, statusOf(vals, "NetConnection.Call.Failed")
		}
	}
}

// awaitPublish reads until the publish's onStatus: NetStream.Publish.Start
// accepts, an error refuses.
func (c *Client) awaitPublish(cr *ChunkReader) error {
	for {
		name, vals, err := c.next(cr)
		if err != nil {
			return err
		}
		switch name {
		case "_error":
			return statusOf(vals, "NetStream.Publish.Failed")
		case "onStatus":
			st := statusOf(vals, "")
			switch {
			case st.Code == "NetStream.Publish.Start":
				return nil
			case strings.Contains(st.Code, "Publish") || strings.HasSuffix(st.Code, ".Failed") || strings.HasSuffix(st.Code, ".Rejected"):
				return st
			}
		}
	}
}

// statusOf reads the info object of an onStatus or _error answer.
func statusOf(vals []any, code string) *PublishError {
	e := &PublishError{Code: code}
	if len(vals) == 0 {
		return e
	}
	if obj, ok := vals[len(vals)-1].(map[string]any); ok {
		if s, ok := obj["code"].(string); ok && s != "" {
			e.Code = s
		}
		if s, ok := obj["description"].(string); ok {
			e.Description = s
		}
	}
	if len(e.Description) > 200 {
		e.Description = e.Description[:200]
	}
	return e
}

// next reads messages, answering control ones, until a command; it
// returns its name and the values after the name.
func (c *Client) next(cr *ChunkReader) (string, []any, error) {
	var window, acked uint64
	for {
		m, err := cr.ReadMessage()
		if err != nil {
			return "", nil, err
		}
		if err := c.control(m, &window, &acked, cr.BytesRead()); err != nil {
			return "", nil, err
		}
		if m.Type != TypeCommandAMF0 {
			continue
		}
		vals, err := amf0.DecodeAll(m.Payload)
		if err != nil || len(vals) == 0 {
			continue
		}
		name, _ := vals[0].(string)
		return name, vals[1:], nil
	}
}

// control answers pings and acknowledges every window of bytes received.
func (c *Client) control(m *Message, window, acked *uint64, read uint64) error {
	switch m.Type {
	case TypeWindowAckSize:
		if len(m.Payload) >= 4 {
			*window = uint64(be32(m.Payload))
		}
	case TypeUserControl:
		if len(m.Payload) >= 6 && m.Payload[0] == 0 && m.Payload[1] == EventPingRequest {
			return c.send(UserControlMessage(EventPingResponse, be32(m.Payload[2:6])))
		}
	}
	if *window > 0 && read-*acked >= *window {
		*acked = read
		return c.send(AckMessage(uint32(read)))
	}
	return nil
}

// read is the client's goroutine after the publish: it answers the
// server until the connection ends, and ends it on a refusal sent late.
func (c *Client) read(cr *ChunkReader) {
	var window, acked uint64
	for {
		m, err := cr.ReadMessage()
		if err == nil {
			err = c.control(m, &window, &acked, cr.BytesRead())
		}
		if err == nil && m.Type == TypeCommandAMF0 {
			vals, _ := amf0.DecodeAll(m.Payload)
			if len(vals) > 1 && vals[0] == "onStatus" {
				if st := statusOf(vals[1:], ""); st.Code != "" && st.Code != "NetStream.Publish.Start" &&
					(strings.Contains(st.Code, "Publish") || strings.HasSuffix(st.Code, "Failed")) {
					err = st
				}
			}
		}
		if err != nil {
			c.fail(err)
			return
		}
	}
}

// send writes one message now, under the writer's lock.
func (c *Client) send(m *Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nc.SetWriteDeadline(time.Now().Add(c.writeTimeout))
	if err := c.cw.WriteMessage(m); err != nil {
		return err
	}
	return c.cw.Flush()
}

// write sends one media or data message of the published stream.
func (c *Client) write(csid uint32, typ uint8, ts uint32, body []byte) error {
	select {
	case <-c.done:
		return c.Err()
	default:
	}
	err := c.send(&Message{ChunkStreamID: csid, Type: typ, StreamID: c.streamID, Timestamp: ts, Payload: body})
	if err != nil {
		c.fail(err)
		return err
	}
	c.sent.Add(uint64(len(body)))
	return nil
}

// WriteVideo sends an FLV video tag body at ts milliseconds.
func (c *Client) WriteVideo(ts uint32, body []byte) error {
	return c.write(csidClientVideo, TypeVideo, ts, body)
}

// WriteAudio sends an FLV audio tag body at ts milliseconds.
func (c *Client) WriteAudio(ts uint32, body []byte) error {
	return c.write(csidClientAudio, TypeAudio, ts, body)
}

// WriteMetadata sends onMetaData (with @setDataFrame, as encoders do).
func (c *Client) WriteMetadata(meta amf0.Object) error {
	p, err := amf0.Encode(nil, "@setDataFrame", "onMetaData", meta)
	if err != nil {
		return err
	}
	return c.write(csidClientData, TypeDataAMF0, 0, p)
}

// Sent is the bytes of media and data sent so far.
func (c *Client) Sent() uint64 { return c.sent.Load() }

// Done is closed when the connection has ended; Err says why.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err is why the connection ended (nil while it runs, ErrDisconnected
// after Close).
func (c *Client) Err() error {
	if p := c.closeErr.Load(); p != nil {
		return *p
	}
	return nil
}

func (c *Client) fail(err error) {
	c.once.Do(func() {
		c.closeErr.Store(&err)
		c.nc.Close()
		close(c.done)
	})
}

// Close unpublishes (best effort, without waiting) and closes the
// connection.
func (c *Client) Close() error {
	select {
	case <-c.done:
		return nil
	default:
	}
	if c.mu.TryLock() {
		c.nc.SetWriteDeadline(time.Now().Add(time.Second))
		p, _ := amf0.Encode(nil, "deleteStream", 0.0, nil, float64(c.streamID))
		if c.cw.WriteMessage(&Message{ChunkStreamID: csidClientCommand, Type: TypeCommandAMF0, Payload: p}) == nil {
			c.cw.Flush()
		}
		c.mu.Unlock()
	}
	c.fail(ErrDisconnected)
	return nil
}
