package chat

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/url"
	"reflect"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/onair/onair/app"
)

// Heartbeats: the server pings every pingEvery and drops a peer that has
// not answered (or sent anything) within pongWait.
var (
	pingEvery = 25 * time.Second
	pongWait  = 60 * time.Second
	writeWait = 10 * time.Second
	readLimit = int64(4096)
)

// A socket's place under ONAIR_MAX_SOCKETS_PER_IP is taken before the
// upgrade and kept, with who joins which room, in the request's locals
// under startKey; unless its socket starts within slotGrace, the place is
// given back.
const (
	startKey  = "onair.chat.socket"
	slotGrace = 30 * time.Second
)

// socketStart is what prepareSocket found out for the socket it upgrades.
type socketStart struct {
	slot   *socketSlot
	viewer Viewer
	showID int64
	who    *app.Principal
}

// apiSocket prepares GET /v1/shows/:id/chat/socket: the Bearer-token
// client joins as its user.
func (m *Module) apiSocket(c *fiber.Ctx) error {
	p := app.CurrentPrincipal(c)
	return m.prepareSocket(c, p, m.userViewer(c, p))
}

// userViewer is a registered user in a room.
func (m *Module) userViewer(c *fiber.Ctx, p *app.Principal) func(int64) (Viewer, error) {
	return func(int64) (Viewer, error) {
		u, err := m.users.Get(c.UserContext(), p.UserID)
		if err != nil {
			return Viewer{}, err
		}
		return Viewer{UserID: u.ID, Name: u.Name}, nil
	}
}

// webSocket prepares GET /ws/shows/:id for web pages: the signed-in user of
// the session cookie, or an anonymous viewer known by the viewer cookie
// the server issued (viewer.go); the upgrade's answer sets a fresh one
// when the request has none.
func (m *Module) webSocket(c *fiber.Ctx) error {
	// The web socket rides on the session cookie, so only pages of this
	// site may open it (no cross-site WebSocket hijacking); clients that
	// send no Origin are not browsers and carry no one's cookie by accident.
	if origin := c.Get(fiber.HeaderOrigin); origin != "" && !sameOrigin(origin, m.core.Config.PublicURL) {
		return app.Forbidden("web sockets of this site open from its own pages only")
	}
	var p *app.Principal
	for _, mod := range m.core.Modules {
		if sr, ok := mod.(app.SessionReader); ok {
			if got, err := sr.SessionPrincipal(c); err == nil && got != nil {
				p = got
				break
			}
		}
	}
	if p != nil {
		return m.prepareSocket(c, p, m.userViewer(c, p))
	}
	// An anonymous viewer is an empty principal: it sees public shows
	// only, under the id its cookie has in this show's room.
	id := m.Service.viewers.viewer(c)
	return m.prepareSocket(c, &app.Principal{}, func(showID int64) (Viewer, error) {
		room := m.Service.viewers.roomID(id, showID)
		return Viewer{AnonID: room, Name: AnonymousName(room)}, nil
	})
}

// prepareSocket takes the socket's place under the per-address cap and
// checks the show is visible to the viewer before upgrading.
func (m *Module) prepareSocket(c *fiber.Ctx, p *app.Principal, viewer func(showID int64) (Viewer, error)) (err error) {
	if !websocket.FastHTTPIsWebSocketUpgrade(c.Context()) {
		return &app.Error{Status: fiber.StatusUpgradeRequired, Code: "upgrade_required", Message: "this route speaks WebSocket"}
	}
	// Through a trusted proxy the socket also counts for its client under
	// ONAIR_MAX_CONNS_PER_IP, for as long as its place here is held.
	hold, err := app.HoldClient(c)
	if err != nil {
		return err
	}
	slot := m.sockets.reserve(app.ClientKey(c.IP()), m.maxSockets, hold)
	if slot == nil {
		hold()
		m.refused.Inc()
		return m.tooManySockets()
	}
	// The place passes to serveSocket once the upgrade is answered;
	// anything else gives it back now.
	defer func() {
		if err != nil || c.Response().StatusCode() != fiber.StatusSwitchingProtocols {
			slot.release()
		}
	}()
	showID, err := showIDParam(c, "id")
	if err != nil {
		return err
	}
	if _, err := m.shows.Visible(c.UserContext(), showID, p); err != nil {
		return err
	}
	v, err := viewer(showID)
	if err != nil {
		return err
	}
	c.Locals(startKey, &socketStart{slot: slot, viewer: v, showID: showID, who: p})
	return c.Next()
}

// upgrader answers a room's upgrade. Origins are checked before
// (webSocket); the socket's own buffers are small: it reads only control
// frames, and its frames are written without the library's write buffer,
// which is borrowed from a pool for the rare write that does use it.
var upgrader = websocket.FastHTTPUpgrader{
	ReadBufferSize:  256,
	WriteBufferSize: 256,
	WriteBufferPool: &sync.Pool{},
	CheckOrigin:     func(*fasthttp.RequestCtx) bool { return true },
}

// upgrade answers the upgrade prepareSocket let through and starts the
// socket. It uses the WebSocket library's upgrader itself, not a
// middleware that copies every header, cookie and local of the request
// into maps the socket keeps for its whole life (a viewer's memory:
// docs/benchmarks.md, "Chat fan-out").
func (m *Module) upgrade(c *fiber.Ctx) error {
	start, _ := c.Locals(startKey).(*socketStart)
	if start == nil {
		return fiber.ErrUpgradeRequired
	}
	err := upgrader.Upgrade(c.Context(), func(conn *websocket.Conn) {
		defer m.recoverSocket(conn)
		m.serveSocket(conn, start)
	})
	if err != nil {
		return fiber.ErrUpgradeRequired
	}
	return nil
}

// recoverSocket logs a socket's panic and closes its connection (the
// server keeps hijacked connections open: app.NewServer).
func (m *Module) recoverSocket(conn *websocket.Conn) {
	if r := recover(); r != nil {
		m.core.Log.Error("chat: socket panicked", "panic", r, "stack", string(debug.Stack()))
		conn.Close()
	}
}

func (m *Module) tooManySockets() *app.Error {
	return &app.Error{Status: fiber.StatusTooManyRequests, Code: "too_many_connections", RetryAfter: 5,
		Message: fmt.Sprintf("at most %d chat sockets per client address", m.maxSockets)}
}

// serveSocket starts one socket: it joins the room, whose fan-out writes
// the room's events and heartbeats, then reads only to notice the peer
// leaving. The reading runs on a goroutine of its own and serveSocket
// returns (when the connection allows: detachable), so that fasthttp's
// hijack goroutine ends and gives back the upgrade request's context (its
// headers, a few KB a socket), and the reader's stack holds the read loop
// alone.
func (m *Module) serveSocket(conn *websocket.Conn, start *socketStart) {
	// The place prepareSocket took is held for as long as the socket
	// lives. (It is gone only if the socket started more than slotGrace
	// after its upgrade was answered.)
	slot := start.slot
	if slot == nil || !slot.claim() {
		conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseTryAgainLater, "try again"), time.Now().Add(writeWait))
		conn.Close()
		return
	}
	v, showID, who := start.viewer, start.showID, start.who
	ctx := m.ctx
	if who == nil {
		who = &app.Principal{}
	}
	// The room's frames are written straight to the TCP connection (one
	// write for what waits, from the room's fan-out workers without
	// blocking), not through the WebSocket library's per-message copy;
	// the library only reads (its answers to pings and closes are ours
	// too, below).
	raw := conn.NetConn()
	if u, ok := raw.(interface{ UnsafeConn() net.Conn }); ok {
		raw = u.UnsafeConn()
	}
	cl := m.hub.join(ctx, showID, v, who, raw)

	// Every write to the connection is the hub's (a frame the library
	// wrote could land inside a frame a fan-out worker has half written):
	// a ping's pong and a close's echo go through the socket's queue.
	conn.SetPingHandler(func(data string) error {
		w := getFanWriter()
		cl.offer(w, controlFrame(0x8a, []byte(data)), nil, false)
		putFanWriter(w)
		return nil
	})
	conn.SetCloseHandler(func(code int, _ string) error {
		echo := []byte{0x88, 0}
		if code != websocket.CloseNoStatusReceived {
			echo = closeFrame(code, "")
		}
		cl.drop(echo)
		return nil
	})
	conn.SetReadLimit(readLimit)
	silence := m.hub.silence()
	conn.SetReadDeadline(time.Now().Add(silence))
	conn.SetPongHandler(func(string) error { return conn.SetReadDeadline(time.Now().Add(silence)) })
	if !detachable(conn.NetConn()) {
		m.readSocket(conn, cl, slot, showID)
		return
	}
	go func() {
		defer m.recoverSocket(conn)
		m.readSocket(conn, cl, slot, showID)
	}()
}

// readSocket reads the socket until the peer leaves or goes silent, then
// ends it: the client's writer closes the connection, the socket leaves
// the room and gives its place back.
func (m *Module) readSocket(conn *websocket.Conn, cl *client, slot *socketSlot, showID int64) {
	defer slot.release()
	defer m.hub.leave(m.ctx, showID, cl)
	silence := m.hub.silence()
	var err error
	for {
		if _, _, err = conn.ReadMessage(); err != nil {
			break
		}
		conn.SetReadDeadline(time.Now().Add(silence))
	}
	// A peer silent for pongWait has not read our pings: it stopped
	// reading (or is gone). It is told 4008, should it read again.
	var farewell []byte
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		farewell = tooSlowFrame
	}
	cl.drop(farewell)
	<-cl.stopped
}

// detachable tells whether the socket may still be read after the hijack
// handler returned. fasthttp gives back then the request's reader that
// the hijacked connection reads through when it has one: a client that
// sent bytes behind its upgrade request before the answer (with
// ReduceMemoryUsage, app.NewServer, it has none otherwise). That reader
// is not exported, so its type is looked at through reflect; should
// fasthttp's hijacked connection change shape, nothing is detachable and
// every socket reads on the hijack goroutine as before.
func detachable(c net.Conn) bool {
	v := reflect.ValueOf(c)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return false
	}
	r := v.Elem().FieldByName("r")
	if !r.IsValid() || r.Kind() != reflect.Interface || r.IsNil() {
		return false
	}
	_, raw := v.Elem().Type().FieldByName("Conn")
	return raw && r.Elem().Type() != reflect.TypeFor[*bufio.Reader]()
}

// sameOrigin tells whether an Origin header names the site of publicURL.
func sameOrigin(origin, publicURL string) bool {
	o, err := url.Parse(origin)
	if err != nil {
		return false
	}
	p, err := url.Parse(publicURL)
	if err != nil {
		return false
	}
	return strings.EqualFold(o.Scheme, p.Scheme) && strings.EqualFold(o.Host, p.Host)
}

// addrCount counts open sockets per client address.
type addrCount struct {
	mu sync.Mutex
	n  map[string]int
}

// reserve takes a place for one more socket of addr, or returns nil when
// addr holds max already; hold (may be nil) runs when the place is given back. Unless claimed within slotGrace, the place is
// given back (an upgrade that was answered but whose socket never started
// must not hold it forever).
func (a *addrCount) reserve(addr string, max int, hold func()) *socketSlot {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.n[addr] >= max {
		return nil
	}
	a.n[addr]++
	s := &socketSlot{count: a, addr: addr, hold: hold}
	s.timer = time.AfterFunc(slotGrace, s.expire)
	return s
}

func (a *addrCount) put(addr string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.n[addr] <= 1 {
		delete(a.n, addr)
	} else {
		a.n[addr]--
	}
}

// socketSlot is one socket's place under the cap: reserved, then claimed
// by the running socket, then released (once).
type socketSlot struct {
	count *addrCount
	addr  string
	timer *time.Timer
	// hold gives back the socket's place under ONAIR_MAX_CONNS_PER_IP
	// (app.HoldClient); nil when it has none.
	hold func()

	mu       sync.Mutex
	claimed  bool
	released bool
}

// claim makes the place the running socket's; false if it expired.
func (s *socketSlot) claim() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.released {
		return false
	}
	s.claimed = true
	s.timer.Stop()
	return true
}

func (s *socketSlot) expire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.claimed && !s.released {
		s.released = true
		s.count.put(s.addr)
		s.unhold()
	}
}

// release gives the place back (once).
func (s *socketSlot) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.released {
		s.released = true
		s.timer.Stop()
		s.count.put(s.addr)
		s.unhold()
	}
}

func (s *socketSlot) unhold() {
	if s.hold != nil {
		s.hold()
	}
}
