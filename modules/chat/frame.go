package chat

import (
	"encoding/binary"
	"errors"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/onair/onair/app"
)

// A room's events go to its sockets as WebSocket frames built once per
// event (RFC 6455 §5.2: a server's frames are not masked, so the same
// bytes are right for every socket) and written as they are by each
// socket's writer, several queued frames in one write(2).

// Close codes a room's socket may end with (RFC 6455 §7.4).
const (
	// CloseTooSlow: the socket fell more than ClientQueue buffers or
	// ClientQueueBytes behind the room (or a write of it waited its write
	// timeout, 10 s): the client reconnects.
	CloseTooSlow = 4008
	// CloseGoingAway (1001): the server stops, or the viewer may no
	// longer see the show.
	CloseGoingAway = 1001
)

// ClientQueue is how many buffers (each one event, or the batch of a
// room's flush) may wait for one socket while it is written to; one more
// drops it with CloseTooSlow. A room's clock is at most 250 ms, so that is
// at most 32 s behind; in a quiet room, 128 messages.
const ClientQueue = 128

// ClientQueueBytes is how many bytes of frames one socket may be behind:
// queued, and handed to its writer goroutine but not yet taken by the
// kernel; a frame beyond drops it with CloseTooSlow. The frames are the
// room's, shared by every socket, so the sockets of a room that stopped
// reading hold at most the room's last ClientQueueBytes of frames between
// them, plus each its writer's joining buffer (maxJoinedWrite).
const ClientQueueBytes = 1 << 20

// idleQueue is the largest queue array an idle socket keeps for its next
// frames; a longer one (it was behind) goes back to the heap.
const idleQueue = 16

var (
	pingFrame      = []byte{0x89, 0x00}
	tooSlowFrame   = closeFrame(CloseTooSlow, "too slow")
	goingAwayFrame = closeFrame(CloseGoingAway, "")
)

// textFrame is payload as one final, unmasked text frame.
func textFrame(payload []byte) []byte {
	n := len(payload)
	var f []byte
	switch {
	case n < 126:
		f = make([]byte, 2, 2+n)
		f[1] = byte(n)
	case n <= 0xFFFF:
		f = make([]byte, 4, 4+n)
		f[1] = 126
		binary.BigEndian.PutUint16(f[2:], uint16(n))
	default:
		f = make([]byte, 10, 10+n)
		f[1] = 127
		binary.BigEndian.PutUint64(f[2:], uint64(n))
	}
	f[0] = 0x81 // FIN, text
	return append(f, payload...)
}

// controlFrame is a control frame (opcode: ping 0x89, pong 0x8a) with a
// payload of at most 125 bytes (RFC 6455 §5.5).
func controlFrame(opcode byte, payload []byte) []byte {
	payload = payload[:min(len(payload), 125)]
	return append([]byte{opcode, byte(len(payload))}, payload...)
}

// closeFrame is a close frame with a status code and a short reason.
func closeFrame(code int, reason string) []byte {
	f := []byte{0x88, byte(2 + len(reason)), 0, 0}
	binary.BigEndian.PutUint16(f[2:], uint16(code))
	return append(f, reason...)
}

// client is one socket in a room. A room's fan-out workers write its
// frames straight from the room's flush without blocking (offer); what
// the kernel does not take at once waits in queue for the socket's own
// writer goroutine, which runs only while something waits and takes the
// whole queue into a few writes. A client whose queue is full when a
// frame arrives is dropped (CloseTooSlow) rather than holding up the room.
type client struct {
	viewer Viewer
	// who is the viewer as the visibility rule sees them (an anonymous
	// viewer is an empty principal, never nil: nil would be the system).
	who  *app.Principal
	conn net.Conn
	// raw is conn's socket, written without blocking by the fan-out
	// workers; nil when conn is not a socket (then every frame goes
	// through the writer goroutine).
	raw syscall.RawConn
	// A write that waits longer than writeWait ends the socket, and slow
	// (unless nil) is told.
	writeWait time.Duration
	slow      func(*client)

	// sent is how far into its room's log (room.log's offsets) the
	// socket has been given frames; set by join, then read and moved only
	// by the room's flush that writes the socket.
	sent int64

	mu    sync.Mutex
	queue [][]byte // frames waiting, oldest first
	spare [][]byte // the array of the previous write, reused
	// queued is the bytes of queue; inflight those the writer goroutine
	// holds (a partial write's rest, or the queue it took) until written.
	queued, inflight int
	// presence holds only the newest presence frame: a socket that is
	// behind skips stale counts instead of being dropped for them.
	presence []byte
	ping     bool
	// partial is the rest of a write a fan-out worker began: the writer
	// goroutine writes it first, whatever else happens (even the drop of
	// the socket), so no frame is cut.
	partial [][]byte
	// writing: the connection is being written (by a fan-out worker or
	// the writer goroutine), and that writer writes whatever is queued
	// meanwhile before letting go; while it is false nothing waits.
	writing  bool
	ending   bool
	farewell []byte        // the close frame to end with (nil: none)
	stopped  chan struct{} // closed once the writer closed the connection
}

func newClient(v Viewer, who *app.Principal, conn net.Conn, writeWait time.Duration) *client {
	c := &client{viewer: v, who: who, conn: conn, writeWait: writeWait, stopped: make(chan struct{})}
	if sc, ok := conn.(syscall.Conn); ok {
		if raw, err := sc.SyscallConn(); err == nil {
			c.raw = raw
		}
	}
	return c
}

// push queues a frame for the writer goroutine; false when the queue is
// full (the caller drops the client).
func (c *client) push(frame []byte) bool {
	c.mu.Lock()
	if c.ending {
		c.mu.Unlock()
		return true
	}
	if !c.fitsLocked(len(frame)) {
		c.mu.Unlock()
		return false
	}
	c.queue = append(c.queue, frame)
	c.queued += len(frame)
	c.wakeLocked()
	return true
}

// fitsLocked tells whether n more bytes may wait for the socket (c.mu held).
func (c *client) fitsLocked(n int) bool {
	return len(c.queue) < ClientQueue && c.queued+c.inflight+n <= ClientQueueBytes
}

// offer gives the socket a room's flush (frames, a presence frame, a
// ping; any may be empty) from a fan-out worker: written at once without
// blocking unless the connection is being written already, then queued
// behind that write. False when frames would overflow the queue (the
// caller drops the client).
func (c *client) offer(w *fanWriter, frames, presence []byte, ping bool) bool {
	c.mu.Lock()
	if c.ending {
		c.mu.Unlock()
		return true
	}
	if c.writing || c.raw == nil {
		if frames != nil {
			if !c.fitsLocked(len(frames)) {
				c.mu.Unlock()
				return false
			}
			c.queue = append(c.queue, frames)
			c.queued += len(frames)
		}
		if presence != nil {
			c.presence = presence
		}
		c.ping = c.ping || ping
		c.wakeLocked()
		return true
	}
	// Nothing waits (writing is false): what is offered is all there is.
	c.writing = true
	c.mu.Unlock()
	w.parts = append(w.parts[:0], frames, presence)
	if ping {
		w.parts = append(w.parts, pingFrame)
	}
	c.writeNow(w)
	return true
}

// greet writes a socket's greeting from its own goroutine without
// blocking, unless a newer presence frame waits already.
func (c *client) greet(w *fanWriter, frame []byte) {
	c.mu.Lock()
	if c.ending || c.presence != nil {
		c.mu.Unlock()
		return
	}
	if c.writing || c.raw == nil {
		c.presence = frame
		c.wakeLocked()
		return
	}
	c.writing = true
	c.mu.Unlock()
	w.parts = append(w.parts[:0], frame)
	c.writeNow(w)
}

// writeNow writes w.parts (frames shared with other sockets, never
// changed; nil parts are skipped), and whatever is queued meanwhile,
// without blocking; c.writing is set, by the caller. What the kernel does
// not take goes to the writer goroutine, ahead of what waits, as slices
// of the same frames (no copy); so do the socket's end and a failed write.
func (c *client) writeNow(w *fanWriter) {
	for {
		n, err := w.write(c.raw)
		c.mu.Lock()
		if err != nil {
			// The peer is gone (reset, broken pipe): end without a close frame.
			c.ending, c.farewell = true, nil
		} else if rest := w.rest(n); rest != nil {
			// The kernel's buffer is full: the rest of the write is the
			// writer goroutine's, before anything else.
			c.partial = rest
			c.inflight = size(rest)
		}
		if c.ending || c.partial != nil {
			c.handOffLocked()
			return
		}
		if len(c.queue) == 0 && c.presence == nil && !c.ping {
			c.writing = false
			c.mu.Unlock()
			return
		}
		// More came while this was written: one more write of all of it.
		w.parts = append(append(w.parts[:0], c.queue...), c.presence)
		if c.ping {
			w.parts = append(w.parts, pingFrame)
		}
		clear(c.queue)
		c.queue, c.presence, c.ping, c.queued = c.queue[:0], nil, false, 0
		c.mu.Unlock()
	}
}

// size is the bytes of frames.
func size(frames [][]byte) int {
	n := 0
	for _, f := range frames {
		n += len(f)
	}
	return n
}

// handOffLocked lets the writer goroutine go on from here (c.writing
// stays set), and unlocks c.mu.
func (c *client) handOffLocked() {
	c.mu.Unlock()
	go c.write()
}

// drop ends the socket (once) with the farewell close frame (nil: none):
// what waits is discarded, the writer writes the farewell after the write
// under way, then closes the connection. It reports whether this call
// ended it.
func (c *client) drop(farewell []byte) (first bool) {
	c.mu.Lock()
	if c.ending {
		c.mu.Unlock()
		return false
	}
	c.ending, c.farewell = true, farewell
	clear(c.queue)
	c.queue, c.presence, c.queued = c.queue[:0], nil, 0
	c.wakeLocked()
	return true
}

// wakeLocked starts the writer unless it runs, and unlocks c.mu.
func (c *client) wakeLocked() {
	start := !c.writing
	c.writing = true
	c.mu.Unlock()
	if start {
		go c.write()
	}
}

// write writes what waits until nothing does, each round in one write.
func (c *client) write() {
	for {
		c.mu.Lock()
		if rest := c.partial; rest != nil {
			c.partial = nil
			c.mu.Unlock()
			// The rest of the frame begun is written whole, even if the
			// socket is dropped meanwhile (each part ends at a frame's end).
			err := c.writeBatch(rest[:1], false)
			if err == nil {
				err = c.writeBatch(rest[1:], true)
			}
			c.mu.Lock()
			c.inflight = 0
			c.mu.Unlock()
			c.failed(err)
			continue
		}
		if c.ending {
			farewell := c.farewell
			c.mu.Unlock()
			if farewell != nil {
				c.conn.SetWriteDeadline(time.Now().Add(c.writeWait))
				c.conn.Write(farewell)
			}
			c.conn.Close()
			close(c.stopped)
			return
		}
		batch := c.queue
		c.queue, c.spare = c.spare[:0], nil
		c.inflight, c.queued = c.queued, 0
		if c.presence != nil {
			batch = append(batch, c.presence)
			c.presence = nil
		}
		if c.ping {
			batch = append(batch, pingFrame)
			c.ping = false
		}
		if len(batch) == 0 {
			c.writing = false
			if cap(batch) <= idleQueue {
				c.spare = batch
			}
			if cap(c.queue) > idleQueue {
				c.queue = nil
			}
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		err := c.writeBatch(batch, true)
		clear(batch)
		c.mu.Lock()
		c.spare, c.inflight = batch[:0], 0
		c.mu.Unlock()
		c.failed(err)
	}
}

// failed ends the socket after a failed write (err not nil). A write that
// waited writeWait is a viewer too slow; the connection is broken
// mid-frame, so no close frame follows.
func (c *client) failed(err error) {
	if err == nil {
		return
	}
	c.mu.Lock()
	first := !c.ending
	c.ending, c.farewell = true, nil
	clear(c.queue)
	c.queue, c.presence, c.queued = c.queue[:0], nil, 0
	c.mu.Unlock()
	if first && errors.Is(err, os.ErrDeadlineExceeded) && c.slow != nil {
		c.slow(c)
	}
}

// writeBuffers lend writers the buffer that joins frames into one write
// (a connection under the server's accounting wrapper has no writev).
var writeBuffers = sync.Pool{New: func() any { return new([]byte) }}

// maxJoinedWrite bounds the buffer joining frames into one write: a
// socket's writer copies at most this much of the room's shared frames at
// a time, however far behind it is; a longer frame is written alone.
const maxJoinedWrite = 64 << 10

// writeBatch writes the frames (each ends at a frame boundary), a few
// joined into one write of at most maxJoinedWrite bytes. Unless whole,
// it stops between two writes once the socket is dropped, so the close
// frame follows what is under way rather than what is left.
func (c *client) writeBatch(batch [][]byte, stoppable bool) error {
	// Each write's deadline is its own: left set, it would fail the
	// fan-out workers' writes once it passed.
	defer c.conn.SetWriteDeadline(time.Time{})
	bp := writeBuffers.Get().(*[]byte)
	defer writeBuffers.Put(bp)
	for len(batch) > 0 {
		if stoppable {
			c.mu.Lock()
			ending := c.ending
			c.mu.Unlock()
			if ending {
				return nil
			}
		}
		b := batch[0]
		batch = batch[1:]
		if len(b) < maxJoinedWrite {
			joined := (*bp)[:0]
			joined = append(joined, b...)
			for len(batch) > 0 && len(joined)+len(batch[0]) <= maxJoinedWrite {
				joined = append(joined, batch[0]...)
				batch = batch[1:]
			}
			*bp, b = joined, joined
		}
		c.conn.SetWriteDeadline(time.Now().Add(c.writeWait))
		if _, err := c.conn.Write(b); err != nil {
			return err
		}
	}
	return nil
}
