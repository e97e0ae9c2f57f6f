package chat

import "time"

// SetWriteWait changes how long one write to a socket of m's room may
// wait, for the sockets that join from now on.
func SetWriteWait(m *Module, d time.Duration) {
	m.hub.mu.Lock()
	defer m.hub.mu.Unlock()
	m.hub.writeWait = d
}
