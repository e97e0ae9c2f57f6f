package chat

import (
	"encoding/binary"
	"errors"
	"net"
	"os"
	"sync"
	"time"

	"github.com/onair/onair/app"
)

// A room's events go to its sockets as WebSocket frames built once per
// event (RFC 6455 §5.2: a server's frames are not masked, so the same
// bytes are right for every socket) and written as they are by each
// socket's writer, several queued frames in one write(2).

// Close codes a room's socket may end with (RFC 6455 §7.4).
const (
	// CloseTooSlow: the socket fell more than ClientQueue frames behind
	// the room (or a write of it waited its write timeout, 10 s): the client reconnects.
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

// closeFrame is a close frame with a status code and a short reason.
func closeFrame(code int, reason string) []byte {
	f := []byte{0x88, byte(2 + len(reason)), 0, 0}
	binary.BigEndian.PutUint16(f[2:], uint16(code))
	return append(f, reason...)
}

// client is one socket in a room. Frames for it wait in queue; a writer
// goroutine runs only while there is something to write, and takes the
// whole queue into one write. A client whose queue is full when a frame
// arrives is dropped (CloseTooSlow) rather than holding up the room.
type client struct {
	viewer Viewer
	// who is the viewer as the visibility rule sees them (an anonymous
	// viewer is an empty principal, never nil: nil would be the system).
	who  *app.Principal
	conn net.Conn
	// A write that waits longer than writeWait ends the socket, and slow
	// (unless nil) is told.
	writeWait time.Duration
	slow      func(*client)

	mu    sync.Mutex
	queue [][]byte // frames waiting, oldest first
	spare [][]byte // the array of the previous write, reused
	// presence holds only the newest presence frame: a socket that is
	// behind skips stale counts instead of being dropped for them.
	presence []byte
	ping     bool
	writing  bool // a writer goroutine runs
	ending   bool
	farewell []byte        // the close frame to end with (nil: none)
	stopped  chan struct{} // closed once the writer closed the connection
}

func newClient(v Viewer, who *app.Principal, conn net.Conn, writeWait time.Duration) *client {
	return &client{viewer: v, who: who, conn: conn, writeWait: writeWait, stopped: make(chan struct{})}
}

// push queues a frame; false when the queue is full (the caller drops the
// client).
func (c *client) push(frame []byte) bool {
	c.mu.Lock()
	if c.ending {
		c.mu.Unlock()
		return true
	}
	if len(c.queue) >= ClientQueue {
		c.mu.Unlock()
		return false
	}
	c.queue = append(c.queue, frame)
	c.wakeLocked()
	return true
}

// pushPresence replaces the waiting presence frame (unless replace is
// false and one waits).
func (c *client) pushPresence(frame []byte, replace bool) {
	c.mu.Lock()
	if c.ending || (!replace && c.presence != nil) {
		c.mu.Unlock()
		return
	}
	c.presence = frame
	c.wakeLocked()
}

// pingNow queues a ping.
func (c *client) pingNow() {
	c.mu.Lock()
	if c.ending {
		c.mu.Unlock()
		return
	}
	c.ping = true
	c.wakeLocked()
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
	c.queue, c.presence = c.queue[:0], nil
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
		err := c.writeBatch(batch)
		clear(batch)
		c.mu.Lock()
		c.spare = batch[:0]
		c.mu.Unlock()
		if err != nil {
			// A write that waited writeWait is a viewer too slow; the
			// connection is broken mid-frame, so no close frame follows.
			if c.drop(nil) && errors.Is(err, os.ErrDeadlineExceeded) && c.slow != nil {
				c.slow(c)
			}
		}
	}
}

// writeBuffers lend writers the buffer that joins a batch of frames into
// one write (a connection under the server's accounting wrapper has no
// writev).
var writeBuffers = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledWrite is the largest joined buffer kept for reuse.
const maxPooledWrite = 64 << 10

// writeBatch writes the frames in one write.
func (c *client) writeBatch(batch [][]byte) error {
	c.conn.SetWriteDeadline(time.Now().Add(c.writeWait))
	if len(batch) == 1 {
		_, err := c.conn.Write(batch[0])
		return err
	}
	bp := writeBuffers.Get().(*[]byte)
	b := (*bp)[:0]
	for _, f := range batch {
		b = append(b, f...)
	}
	_, err := c.conn.Write(b)
	if cap(b) <= maxPooledWrite {
		*bp = b
		writeBuffers.Put(bp)
	}
	return err
}
