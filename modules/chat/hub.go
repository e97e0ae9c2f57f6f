package chat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/onair/onair/app"
)

// Event types sent to the sockets of a show's room.
const (
	EventChatCreated = "chat.created"
	EventChatDeleted = "chat.deleted"
	EventShowUpdated = "show.updated"
	EventPresence    = "presence"
	// EventViewers carries the playback sessions of a live show (Count),
	// the figure the show page shows as "N watching": sent by each node to
	// its own sockets of the room when the figure changes (tellAudience).
	EventViewers = "viewers"
)

// Event is one JSON message on a room's sockets.
type Event struct {
	Type   string `json:"type"`
	ShowID int64  `json:"show_id"`
	Chat   *View  `json:"chat,omitempty"`
	ID     int64  `json:"id,omitempty"`
	State  string `json:"state,omitempty"`
	Show   any    `json:"show,omitempty"`
	// ChatEnabled rides on every show.updated event, private shows
	// included (whose show details stay out), so an open page hides or
	// shows its chat input when the owner or staff toggle the chat.
	ChatEnabled *bool `json:"chat_enabled,omitempty"`
	Count       *int  `json:"count,omitempty"`
	// Joined and Left list who came and went since the room's previous
	// presence event (presence is sent at most every presenceEvery, less
	// often in a large room), at most maxPresenceList of each.
	Joined []Viewer `json:"joined,omitempty"`
	Left   []Viewer `json:"left,omitempty"`
	// Badge of a chat.created message's author ("host", "staff"), for the
	// pages' chat; not part of the API's chat object.
	Badge string `json:"badge,omitempty"`
}

// Viewer is one present person: a registered user (UserID set) or an
// anonymous viewer (AnonID: the UUID its cookie derives in this show's
// room, never the cookie's own; viewer.go).
type Viewer struct {
	UserID int64  `json:"user_id,omitempty"`
	AnonID string `json:"id,omitempty"`
	Name   string `json:"name"`
}

// Key identifies the viewer however many sockets they have open.
func (v Viewer) Key() string {
	if v.UserID != 0 {
		return "u:" + strconv.FormatInt(v.UserID, 10)
	}
	return "a:" + v.AnonID
}

// viewerFromKey is the inverse of Key (the name of a registered user is
// loaded from the database; an anonymous one is derived from the id).
func viewerFromKey(key string) (Viewer, bool) {
	kind, rest, ok := strings.Cut(key, ":")
	if !ok || rest == "" {
		return Viewer{}, false
	}
	switch kind {
	case "u":
		id, err := strconv.ParseInt(rest, 10, 64)
		if err != nil {
			return Viewer{}, false
		}
		return Viewer{UserID: id}, true
	case "a":
		return Viewer{AnonID: rest, Name: AnonymousName(rest)}, true
	}
	return Viewer{}, false
}

// AnonymousName is the display name of an anonymous viewer.
func AnonymousName(id string) string {
	short := strings.ReplaceAll(id, "-", "")
	if len(short) > 4 {
		short = short[:4]
	}
	return "Guest " + short
}

// Bus carries room events between nodes. The in-process bus delivers
// directly; the Redis bus publishes to every node, this one included.
type Bus interface {
	Publish(ctx context.Context, showID int64, payload []byte) error
	// Run delivers incoming events until ctx ends.
	Run(ctx context.Context, deliver func(showID int64, payload []byte))
}

// Presence is the set of viewers present in each room, across nodes.
type Presence interface {
	Join(ctx context.Context, showID int64, key string) error
	Leave(ctx context.Context, showID int64, key string) error
	// Keys lists the viewer keys present in the room, each once.
	Keys(ctx context.Context, showID int64) ([]string, error)
	// Refresh renews this node's entries (called periodically).
	Refresh(ctx context.Context, present map[int64][]string) error
}

type room struct {
	clients map[*client]struct{}
	viewers map[string]int // viewer key → open sockets on this node
	// count is the room's viewer count across nodes as this node's last
	// presence event for it counted them (0 before the first).
	count int
	// audience is the viewer figure last sent to the room's sockets
	// (EventViewers); -1 before the first.
	audience int

	// list is clients as a slice for the fan-out workers, built again
	// (by the next flush) after a join or leave; never changed once built.
	lmu  sync.Mutex
	list []*client

	// The room's fan-out is clocked: its sockets are written on average
	// at most once every flushEvery(sockets), with a burst of flushBurst
	// flushes after a quieter spell (credit, a token bucket). An event's
	// frame is appended to the room's log, the frames some socket has not
	// been given yet; a flush gives each socket, in its turn, all the log
	// holds past what that socket has (client.sent), so an event that
	// comes while a flush is under way goes in that flush to the sockets
	// it has yet to write, and in the next to those it wrote before (a
	// message waits for at most one flush of the room, not the rest of
	// one and then another). After a flush every socket has the log up to
	// where it stood when the flush began, and the log lets that part go.
	// One flush of a room runs at a time (flushing), so every socket gets
	// the room's frames in order. The log's bytes are never written again
	// once appended: a socket that is behind keeps a slice of them.
	fmu      sync.Mutex
	log      []byte    // frames from the room's offset logBase on
	logBase  int64     // the room's offset of log[0]
	openAt   time.Time // when the first frame appended since the last flush began came (zero: none)
	presence []byte    // the newest presence frame not yet flushed
	ping     bool
	credit   float64   // flushes the room may start now (below 1: none)
	creditAt time.Time // when credit was last counted
	flushing bool      // a goroutine runs flushes (h.flushRoom)
	timed    bool      // a timer will start one
}

// refill counts the credit the room has earned since it was last counted,
// one flush every every, at most flushBurst (r.fmu held).
func (r *room) refill(now time.Time, every time.Duration) {
	switch {
	case r.creditAt.IsZero() || every <= 0:
		r.credit = flushBurst
	default:
		r.credit = min(flushBurst, r.credit+float64(now.Sub(r.creditAt))/float64(every))
	}
	r.creditAt = now
}

// takeFlush spends a flush of credit if the room has one and returns 0,
// or returns how long until it has one (r.fmu held).
func (r *room) takeFlush(now time.Time, every time.Duration) time.Duration {
	r.refill(now, every)
	if r.credit >= 1 {
		r.credit--
		return 0
	}
	return time.Duration((1 - r.credit) * float64(every))
}

// Fan-out clock: a room of n sockets flushes on average at most every
// n × flushPerSocket (2,000 sockets: 20 ms; 10,000: 100 ms), never
// waiting longer than maxFlushEvery. A write costs the server (and the
// client reading it) a few microseconds of CPU whatever its size, so a
// busy room's writes per second stay bounded however many messages it
// gets. The bound is a token bucket holding flushBurst flushes, not a
// fixed spacing: a room whose messages come at about its rate (5,000
// sockets, a message every 50 ms) sends each at once instead of waiting
// for the clock's next tick, and a quiet room's first message goes out
// at once (docs/benchmarks.md, "a faster fan-out clock").
const (
	flushPerSocket = 10 * time.Microsecond
	maxFlushEvery  = 250 * time.Millisecond
	flushBurst     = 2
)

func flushEvery(sockets int) time.Duration {
	return min(time.Duration(sockets)*flushPerSocket, maxFlushEvery)
}

// Hub holds this node's rooms and connects them to the bus and presence.
type Hub struct {
	bus      Bus
	presence Presence
	// shared: bus and presence are Redis, which may be away; away
	// tells when it is (app.RedisState.Down).
	shared bool
	away   func() bool
	log    *slog.Logger

	mu    sync.RWMutex
	rooms map[int64]*room
	// writeWait bounds one write to a socket (writeWait unless a test
	// changes it); pongWait is how long a socket may be silent (0:
	// pongWait).
	writeWait time.Duration
	pongWait  time.Duration

	// mayView answers, for a show that changed, who may still see it; the
	// hub drops every socket of the room that may not (the show went
	// private or off, or was deleted). Set by the module.
	mayView func(ctx context.Context, showID int64) func(*app.Principal) bool

	// audience answers how many play a show now and whether it is being
	// published (shows.Module.Audience); nil: no viewer events. Set by the
	// module.
	audience func(showID int64) (viewers int, live bool)

	// metrics times the flushes (nil: not measured). Set by the module.
	metrics *hubMetrics

	// stretchHook, when a test sets it, runs as a fan-out worker takes
	// the stretch of a flush's sockets from start, before it reads the
	// room's log.
	stretchHook func(start int)

	// Presence changes of each room wait here until the room's next
	// presence event, so a crowd arriving costs one event a tick, not one
	// per arrival for every socket.
	pmu     sync.Mutex
	pending map[int64]*presenceBatch
}

// NewLocalHub is the hub of a single node: events and presence stay in
// this process.
func NewLocalHub(log *slog.Logger) *Hub {
	h := &Hub{log: log, rooms: map[int64]*room{}, pending: map[int64]*presenceBatch{}, writeWait: writeWait}
	h.bus, h.presence = newLocalBus(), &localPresence{hub: h}
	return h
}

// NewSharedHub is the hub of one node among several: events and presence
// go through bus and presence (Redis).
func NewSharedHub(bus Bus, presence Presence, log *slog.Logger) *Hub {
	return &Hub{bus: bus, presence: presence, shared: true, log: log, rooms: map[int64]*room{}, pending: map[int64]*presenceBatch{}, writeWait: writeWait}
}

// Publish sends an event to the show's room on every node.
func (h *Hub) Publish(ctx context.Context, showID int64, ev Event) {
	ev.ShowID = showID
	payload, err := json.Marshal(ev)
	if err != nil {
		h.log.Error("chat: encode event", "err", err)
		return
	}
	if h.isAway() {
		// Redis is away: the room's sockets on this node still get the
		// event (the kernel logs the outage once).
		h.deliver(showID, payload)
		return
	}
	if err := h.bus.Publish(ctx, showID, payload); err != nil {
		if h.shared && app.IsRedisOutage(err) {
			h.deliver(showID, payload)
			return
		}
		h.log.Error("chat: publish event", "show", showID, "type", ev.Type, "err", err)
	}
}

// isAway tells whether the hub's Redis is away (never for a local hub).
func (h *Hub) isAway() bool { return h.away != nil && h.away() }

// errRedisAway stands for a presence count not asked of Redis while it is
// away.
var errRedisAway = errors.New("chat: redis is away")

// redisTrouble logs a failed presence command: at debug level when Redis
// is away (the kernel's RedisState logs that once), else as an error.
func (h *Hub) redisTrouble(what string, err error) {
	if app.IsRedisOutage(err) {
		h.log.Debug(what, "err", err)
		return
	}
	h.log.Error(what, "err", err)
}

// deliver hands a payload to every local socket of the room without
// blocking: its frame is built once and appended to the room's log, which
// the room's flushes give to each socket (a socket too far behind is
// dropped, CloseTooSlow). A presence frame (coalesced already) replaces
// the one waiting, if any, and goes with the next flush.
func (h *Hub) deliver(showID int64, payload []byte) {
	if h.mayView != nil && bytes.HasPrefix(payload, showUpdatedPrefix) {
		h.enforceVisibility(showID)
	}
	frame := textFrame(payload)
	presence := isPresence(payload)
	h.schedule(showID, func(r *room) {
		switch {
		case presence:
			r.presence = frame
		default:
			if r.openAt.IsZero() {
				r.openAt = time.Now()
			}
			r.log = append(r.log, frame...)
		}
	})
}

// schedule adds to the room's next flush (add runs with r.fmu held) and
// starts it now if the room's clock allows, else makes sure it comes.
func (h *Hub) schedule(showID int64, add func(*room)) {
	h.mu.RLock()
	r := h.rooms[showID]
	if r == nil {
		h.mu.RUnlock()
		return
	}
	every := flushEvery(len(r.clients))
	h.mu.RUnlock()
	r.fmu.Lock()
	add(r)
	if r.flushing || r.timed {
		r.fmu.Unlock()
		return
	}
	if wait := r.takeFlush(time.Now(), every); wait > 0 {
		r.timed = true
		time.AfterFunc(wait, func() { h.flushTimed(showID, r, every) })
		r.fmu.Unlock()
		return
	}
	r.flushing = true
	r.fmu.Unlock()
	go h.flushRoom(showID, r)
}

// flushTimed starts the flush a timer was set for: the room has earned
// its credit (a timer that fires a little early leaves it just under 0).
func (h *Hub) flushTimed(showID int64, r *room, every time.Duration) {
	r.fmu.Lock()
	r.timed = false
	if r.flushing {
		r.fmu.Unlock()
		return
	}
	r.refill(time.Now(), every)
	r.credit--
	r.flushing = true
	r.fmu.Unlock()
	h.flushRoom(showID, r)
}

// flushRoom writes what waits for the room (r.flushing is set, its first
// flush's credit spent) to all its sockets, again while more waits (a
// frame that came during a flush, for the sockets that flush wrote
// before it came) and the room has credit, and sets a timer for what
// waits when it has none.
func (h *Hub) flushRoom(showID int64, r *room) {
	sockets := -1 // the last flush's, which sets the clock of the next
	for {
		r.fmu.Lock()
		op := flushOp{presence: r.presence, ping: r.ping}
		if len(r.log) == 0 && op.presence == nil && !op.ping {
			r.flushing = false
			r.fmu.Unlock()
			return
		}
		if sockets >= 0 {
			every := flushEvery(sockets)
			if wait := r.takeFlush(time.Now(), every); wait > 0 {
				r.flushing, r.timed = false, true
				time.AfterFunc(wait, func() { h.flushTimed(showID, r, every) })
				r.fmu.Unlock()
				return
			}
		}
		// This flush gives every socket of its list the log up to start
		// at least (a socket that joins later has the log as it stood at
		// its join, past start), so the log's bytes before start go after
		// it; the frames among them that came since the last flush began
		// (the oldest at openAt) have then reached every socket: the
		// delivery measured.
		openAt := r.openAt
		start := r.logBase + int64(len(r.log))
		r.openAt = time.Time{}
		r.presence, r.ping = nil, false
		r.fmu.Unlock()
		list := h.sockets(showID, r)
		at := time.Now()
		h.fanOut(r, list, op)
		h.metrics.flushed(len(list), at, openAt)
		sockets = len(list)
		r.fmu.Lock()
		r.log = r.log[start-r.logBase:]
		r.logBase = start
		if len(r.log) == 0 {
			r.log = nil
		}
		r.fmu.Unlock()
	}
}

// sockets is the room's sockets as a slice (nil if the room is gone).
func (h *Hub) sockets(showID int64, r *room) []*client {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.rooms[showID] != r {
		return nil
	}
	r.lmu.Lock()
	defer r.lmu.Unlock()
	if r.list == nil {
		r.list = make([]*client, 0, len(r.clients))
		for c := range r.clients {
			r.list = append(r.list, c)
		}
	}
	return r.list
}

// silence is how long a socket may go without a word (a pong, a frame)
// before it is dropped.
func (h *Hub) silence() time.Duration {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.pongWait > 0 {
		return h.pongWait
	}
	return pongWait
}

// slow logs a socket dropped for being too slow (once per socket).
func (h *Hub) slow(c *client) {
	h.log.Warn("chat: dropping slow socket", "viewer", c.viewer.Key())
}

// join adds a socket, written to on conn; the viewer's first socket makes
// them present and tells the room.
func (h *Hub) join(ctx context.Context, showID int64, v Viewer, who *app.Principal, conn net.Conn) *client {
	h.mu.Lock()
	c := newClient(v, who, conn, h.writeWait)
	c.slow = h.slow
	r := h.rooms[showID]
	if r == nil {
		r = &room{clients: map[*client]struct{}{}, viewers: map[string]int{}, audience: -1}
		h.rooms[showID] = r
	}
	r.clients[c] = struct{}{}
	// It hears what comes from now on, not the frames the room's
	// flushes are still giving to the others.
	r.fmu.Lock()
	c.sent = r.logBase + int64(len(r.log))
	r.fmu.Unlock()
	r.list = nil
	r.viewers[v.Key()]++
	first := r.viewers[v.Key()] == 1
	h.mu.Unlock()
	if first {
		if h.isAway() {
			// Refresh adds the viewer once Redis is back.
		} else if err := h.presence.Join(ctx, showID, v.Key()); err != nil {
			h.redisTrouble("chat: presence join", err)
		}
		h.presenceChanged(showID, &v, nil)
	}
	h.greet(showID, c)
	return c
}

// greet tells a socket that just joined how many are in the room: its
// first event, so a client (and a test) knows it hears the room from now
// on, and a page shows the count without waiting for the next change. The
// count is the one this node last published for the room (at least its
// own viewers), not a presence read per join, which would read the whole
// room once per arrival of a crowd; the next presence event corrects it.
func (h *Hub) greet(showID int64, c *client) {
	h.mu.RLock()
	n := 0
	if r := h.rooms[showID]; r != nil {
		n = max(r.count, len(r.viewers))
	}
	h.mu.RUnlock()
	payload, err := json.Marshal(Event{Type: EventPresence, ShowID: showID, Count: &n})
	if err != nil {
		h.log.Error("chat: encode event", "err", err)
		return
	}
	w := getFanWriter()
	c.greet(w, textFrame(payload)) // unless a newer count waits
	putFanWriter(w)
}

// leave removes a socket; the viewer's last socket makes them absent.
func (h *Hub) leave(ctx context.Context, showID int64, c *client) {
	h.mu.Lock()
	r := h.rooms[showID]
	last := false
	if r != nil {
		if _, ok := r.clients[c]; ok {
			delete(r.clients, c)
			r.list = nil
			key := c.viewer.Key()
			r.viewers[key]--
			if r.viewers[key] <= 0 {
				delete(r.viewers, key)
				last = true
			}
			if len(r.clients) == 0 {
				delete(h.rooms, showID)
			}
		}
	}
	h.mu.Unlock()
	c.drop(nil)
	if last {
		if h.isAway() {
			// The entry expires (presenceTTL) without Refresh.
		} else if err := h.presence.Leave(ctx, showID, c.viewer.Key()); err != nil {
			h.redisTrouble("chat: presence leave", err)
		}
		v := c.viewer
		h.presenceChanged(showID, nil, &v)
	}
}

// presenceEvery is the least time between two presence events of a room;
// a room of n sockets waits n × presencePerSocket if that is longer (a
// presence event goes to every socket: 10,000 sockets hear at most one a
// second).
const (
	presenceEvery     = 250 * time.Millisecond
	presencePerSocket = 100 * time.Microsecond
)

// maxPresenceList bounds the joined and left lists of one presence event
// (its count is always exact): a crowd arriving makes every socket hear a
// few names, not a frame of thousands of them each tick.
const maxPresenceList = 50

// presenceBatch is what changed in a room since its last presence event.
type presenceBatch struct {
	joined, left []Viewer
}

// presenceChanged records a join or leave and makes sure the room's next
// presence event is on its way.
func (h *Hub) presenceChanged(showID int64, joined, left *Viewer) {
	h.mu.RLock()
	sockets := 0
	if r := h.rooms[showID]; r != nil {
		sockets = len(r.clients)
	}
	h.mu.RUnlock()
	h.pmu.Lock()
	defer h.pmu.Unlock()
	b := h.pending[showID]
	if b == nil {
		b = &presenceBatch{}
		h.pending[showID] = b
		time.AfterFunc(max(presenceEvery, time.Duration(sockets)*presencePerSocket), func() { h.flushPresence(showID) })
	}
	if joined != nil && len(b.joined) < maxPresenceList {
		b.joined = append(b.joined, *joined)
	}
	if left != nil && len(b.left) < maxPresenceList {
		b.left = append(b.left, *left)
	}
}

// flushPresence sends the room's count and who joined or left meanwhile.
func (h *Hub) flushPresence(showID int64) {
	h.pmu.Lock()
	b := h.pending[showID]
	delete(h.pending, showID)
	h.pmu.Unlock()
	if b == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var keys []string
	err := errRedisAway
	if !h.isAway() {
		keys, err = h.presence.Keys(ctx, showID)
	}
	if err != nil && err != errRedisAway && !(h.shared && app.IsRedisOutage(err)) {
		h.log.Error("chat: presence keys", "err", err)
		return
	}
	n := len(keys)
	h.mu.Lock()
	if r := h.rooms[showID]; r != nil {
		if err != nil {
			// Redis is away: the count is this node's viewers.
			n = len(r.viewers)
		}
		r.count = n
	}
	h.mu.Unlock()
	h.Publish(ctx, showID, Event{Type: EventPresence, Count: &n, Joined: b.joined, Left: b.left})
}

// enforceVisibility drops the sockets of a room whose viewer may no longer
// see its show. Every node runs it when the show's update reaches it, so
// nobody keeps hearing a show that went private or off.
func (h *Hub) enforceVisibility(showID int64) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	may := h.mayView(ctx, showID)
	h.mu.RLock()
	var out []*client
	if r := h.rooms[showID]; r != nil {
		for c := range r.clients {
			if !may(c.who) {
				out = append(out, c)
			}
		}
	}
	h.mu.RUnlock()
	for _, c := range out {
		c.drop(goingAwayFrame)
	}
}

var showUpdatedPrefix = []byte(`{"type":"` + EventShowUpdated + `"`)

// presencePrefix starts every encoded presence event (Type is the first
// field of Event).
var presencePrefix = []byte(`{"type":"` + EventPresence + `"`)

func isPresence(payload []byte) bool { return bytes.HasPrefix(payload, presencePrefix) }

// localKeys is this node's present viewers per room.
func (h *Hub) localKeys() map[int64][]string {
	h.mu.RLock()
	defer h.mu.RUnlock()
	out := make(map[int64][]string, len(h.rooms))
	for id, r := range h.rooms {
		for k := range r.viewers {
			out[id] = append(out[id], k)
		}
	}
	return out
}

// Sockets counts this node's open sockets (for /metrics).
func (h *Hub) Sockets() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	n := 0
	for _, r := range h.rooms {
		n += len(r.clients)
	}
	return n
}

// run pumps the bus, pings every socket every pingEvery and refreshes
// presence until ctx ends; then it closes every socket (CloseGoingAway).
func (h *Hub) run(ctx context.Context, refreshEvery time.Duration) {
	go h.bus.Run(ctx, h.deliver)
	go app.Every(ctx, pingEvery, func(context.Context) { h.pingAll() })
	if h.audience != nil {
		go app.Every(ctx, audienceEvery, func(context.Context) { h.tellAudience() })
	}
	app.Every(ctx, refreshEvery, func(ctx context.Context) {
		if err := h.presence.Refresh(ctx, h.localKeys()); err != nil && ctx.Err() == nil {
			h.redisTrouble("chat: presence refresh", err)
		}
	})
	h.each(func(c *client) { c.drop(goingAwayFrame) })
}

// audienceEvery is how often a room's pages learn the show's viewer figure
// (when it changed): the playback sessions behind it are counted over a
// few seconds (live's viewerWindow) anyway.
const audienceEvery = 5 * time.Second

// tellAudience sends each local room of a live show its viewer figure when
// it differs from the one the room was last sent. The figure is the same
// on every node (sessions are counted in Redis when there are several), so
// each node tells its own sockets and nothing crosses the bus.
func (h *Hub) tellAudience() {
	for _, id := range h.roomIDs() {
		n, live := h.audience(id)
		h.mu.Lock()
		r := h.rooms[id]
		changed := r != nil && live && r.audience != n
		if r != nil && (changed || !live) {
			// Not live: the show.updated events tell the stop, and the
			// next start sends the figure again whatever it is.
			r.audience = -1
			if changed {
				r.audience = n
			}
		}
		h.mu.Unlock()
		if !changed {
			continue
		}
		payload, err := json.Marshal(Event{Type: EventViewers, ShowID: id, Count: &n})
		if err != nil {
			h.log.Error("chat: encode event", "err", err)
			continue
		}
		h.deliver(id, payload)
	}
}

// roomIDs is the shows of this node's rooms, as they are now.
func (h *Hub) roomIDs() []int64 {
	h.mu.RLock()
	defer h.mu.RUnlock()
	ids := make([]int64, 0, len(h.rooms))
	for id := range h.rooms {
		ids = append(ids, id)
	}
	return ids
}

// pingAll pings every socket of this node with its room's next flush.
func (h *Hub) pingAll() {
	for _, id := range h.roomIDs() {
		h.schedule(id, func(r *room) { r.ping = true })
	}
}

// each calls f on every socket of this node.
func (h *Hub) each(f func(*client)) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for _, r := range h.rooms {
		for c := range r.clients {
			f(c)
		}
	}
}

// localBus is the single-node Bus: Publish queues the event and returns;
// Run hands the events to the hub in order.
type localBus struct{ events chan localEvent }

type localEvent struct {
	showID  int64
	payload []byte
}

// localBusQueue is how many events may wait for the hub's fan-out before
// Publish waits.
const localBusQueue = 4096

func newLocalBus() *localBus { return &localBus{events: make(chan localEvent, localBusQueue)} }

func (b *localBus) Publish(ctx context.Context, showID int64, payload []byte) error {
	select {
	case b.events <- localEvent{showID, payload}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (b *localBus) Run(ctx context.Context, deliver func(int64, []byte)) {
	for {
		select {
		case ev := <-b.events:
			deliver(ev.showID, ev.payload)
		case <-ctx.Done():
			return
		}
	}
}

// localPresence is the single-node Presence: the hub's own rooms.
type localPresence struct{ hub *Hub }

func (p *localPresence) Join(context.Context, int64, string) error  { return nil }
func (p *localPresence) Leave(context.Context, int64, string) error { return nil }
func (p *localPresence) Refresh(context.Context, map[int64][]string) error {
	return nil
}

func (p *localPresence) Keys(_ context.Context, showID int64) ([]string, error) {
	h := p.hub
	h.mu.RLock()
	defer h.mu.RUnlock()
	var keys []string
	if r := h.rooms[showID]; r != nil {
		for k := range r.viewers {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys, nil
}
