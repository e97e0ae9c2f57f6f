package chat

import (
	"syscall"
	"time"

	"github.com/google/uuid"
)

// SetWriteWait changes how long one write to a socket of m's room may
// wait, for the sockets that join from now on.
func SetWriteWait(m *Module, d time.Duration) {
	m.hub.mu.Lock()
	defer m.hub.mu.Unlock()
	m.hub.writeWait = d
}

// SetPongWait changes how long a socket of m's rooms may be silent, for
// the sockets that join from now on.
func SetPongWait(m *Module, d time.Duration) {
	m.hub.mu.Lock()
	defer m.hub.mu.Unlock()
	m.hub.pongWait = d
}

// Behind counts the sockets of m's rooms whose writes wait for the
// client to read (frames queued, or a write the kernel took only part of).
func Behind(m *Module) int {
	n := 0
	m.hub.each(func(c *client) {
		c.mu.Lock()
		if len(c.queue) > 0 || c.partial != nil {
			n++
		}
		c.mu.Unlock()
	})
	return n
}

// ShrinkSendBuffers sets the kernel send buffer of every socket of m's
// rooms to about n bytes (no autotuning), so a client that stops reading
// is behind after a few events, not after megabytes. It returns how
// many sockets the fan-out workers write directly (the others go through
// the writer goroutine alone).
func ShrinkSendBuffers(m *Module, n int) (direct int) {
	m.hub.each(func(c *client) {
		if c.raw != nil {
			c.raw.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF, n) })
			direct++
		}
	})
	return direct
}

// IssueViewerCookie is a fresh onair_viewer cookie value m's install issues.
func IssueViewerCookie(m *Module) string { return m.Service.viewers.value(uuid.New()) }

// RoomViewerID is the id the viewer of a cookie m issued has in the show's
// room ("" for a cookie it did not issue).
func RoomViewerID(m *Module, cookie string, showID int64) string {
	id, ok := m.Service.viewers.parse(cookie)
	if !ok {
		return ""
	}
	return m.Service.viewers.roomID(id, showID)
}

// MostBehind is the most bytes any socket of m's rooms is behind (queued,
// or held by its writer).
func MostBehind(m *Module) int {
	most := 0
	m.hub.each(func(c *client) {
		c.mu.Lock()
		most = max(most, c.queued+c.inflight)
		c.mu.Unlock()
	})
	return most
}
