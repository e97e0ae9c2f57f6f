package chat

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// hubMetrics time the fan-out on this node: how long a room's flush takes
// to give every socket its frames, and how long a chat message waits on
// this node from its arrival (from this node's POST or the bus) until the
// flush that carries it has reached every socket. Together with the
// POST's own latency they split a message's delivery into the server's
// share and the network's and client's.
type hubMetrics struct {
	flush    prometheus.Histogram
	delivery prometheus.Histogram
}

// fanBuckets span a small room's flush (a fraction of a millisecond) to a
// crowd's on a busy node (hundreds).
var fanBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}

func newHubMetrics() *hubMetrics {
	return &hubMetrics{
		flush: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "onair_chat_flush_seconds",
			Help:    "Time one flush of a chat room took to write (or queue) its frames to every socket of the room on this node.",
			Buckets: fanBuckets,
		}),
		delivery: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "onair_chat_delivery_seconds",
			Help:    "Time from a chat message's arrival on this node to the end of the flush after which every local socket of its room has it (the oldest such message of each flush; a message that comes during a flush reaches the sockets that flush has yet to write in it, the others in the next).",
			Buckets: fanBuckets,
		}),
	}
}

// flushed records a flush of sockets that began at began; oldest is when
// the oldest message it completed came (gave to the sockets that lacked
// it), zero when it completed none.
func (m *hubMetrics) flushed(sockets int, began, oldest time.Time) {
	if m == nil || sockets == 0 {
		return
	}
	now := time.Now()
	m.flush.Observe(now.Sub(began).Seconds())
	if !oldest.IsZero() {
		m.delivery.Observe(now.Sub(oldest).Seconds())
	}
}
