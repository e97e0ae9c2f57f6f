package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fasthttp/websocket"
)

// viewer is one anonymous WebSocket client of the room. Its reader counts
// every event; a sampled viewer also records the delivery latency of each
// chat message from the send time embedded in its text.
type viewer struct {
	conn     *websocket.Conn
	sampled  bool
	chats    atomic.Int64
	presence atomic.Int64
	other    atomic.Int64
	closed   atomic.Bool // the server closed it (dropped as slow, or an error)
	lat      []time.Duration
	done     chan struct{}
}

var (
	chatPrefix     = []byte(`{"type":"chat.created"`)
	presencePrefix = []byte(`{"type":"presence"`)
	stampMarker    = []byte("bench t=")
)

func (v *viewer) read(quitting *atomic.Bool) {
	defer close(v.done)
	// One buffer per viewer for its messages (events are a few hundred
	// bytes): the client's CPU, on the server's cores, goes to reading,
	// not to allocating.
	buf := make([]byte, 0, 1024)
	for {
		_, r, err := v.conn.NextReader()
		if err == nil {
			buf, err = readAll(r, buf[:0])
		}
		if err != nil {
			if !quitting.Load() {
				v.closed.Store(true)
			}
			return
		}
		data := buf
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
}

// readAll appends what r has to buf.
func readAll(r io.Reader, buf []byte) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// stamp finds the send time (Unix ns) in a chat event's text.
func stamp(data []byte) (int64, bool) {
	i := bytes.Index(data, stampMarker)
	if i < 0 {
		return 0, false
	}
	rest := data[i+len(stampMarker):]
	j := 0
	for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
		j++
	}
	n, err := strconv.ParseInt(string(rest[:j]), 10, 64)
	return n, err == nil
}

// crowd is the viewers of one phase.
type crowd struct {
	viewers  []*viewer
	quitting atomic.Bool
	failed   []string
}

// connect opens n anonymous sockets on the show's public room route,
// concurrency at a time, each with the viewer cookie viewerID gives, from
// loopback source addresses in turn (so ephemeral ports are no limit). It
// gives up dialling at the deadline.
func connect(ctx context.Context, wsURL string, n, concurrency, sample int, within time.Duration, viewerID func() string) *crowd {
	c := &crowd{viewers: make([]*viewer, 0, n)}
	stride := max(1, (n+sample-1)/sample)
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		next atomic.Int64
	)
	deadline := time.Now().Add(within)
	for w := 0; w < concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n || time.Now().After(deadline) || ctx.Err() != nil {
					return
				}
				local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+i%8))}
				d := websocket.Dialer{
					NetDialContext:   (&net.Dialer{LocalAddr: local, Timeout: 10 * time.Second}).DialContext,
					HandshakeTimeout: 20 * time.Second,
					// Small buffers: events are a few hundred bytes and
					// the client holds thousands of sockets.
					ReadBufferSize:  1024,
					WriteBufferSize: 256,
				}
				h := http.Header{}
				h.Set("Cookie", "onair_viewer="+viewerID())
				conn, resp, err := d.DialContext(ctx, wsURL, h)
				if err != nil {
					status := 0
					if resp != nil {
						status = resp.StatusCode
					}
					mu.Lock()
					c.failed = append(c.failed, fmt.Sprintf("%v (status %d)", err, status))
					mu.Unlock()
					continue
				}
				v := &viewer{conn: conn, sampled: i%stride == 0, done: make(chan struct{})}
				go v.read(&c.quitting)
				mu.Lock()
				c.viewers = append(c.viewers, v)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return c
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
func (c *crowd) settle(quiet, within time.Duration) (bool, time.Time) {
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

// close ends every socket and waits for the readers (bounded).
func (c *crowd) close() {
	c.quitting.Store(true)
	for _, v := range c.viewers {
		v.conn.Close()
	}
	timeout := time.After(30 * time.Second)
	for _, v := range c.viewers {
		select {
		case <-v.done:
		case <-timeout:
			return
		}
	}
}

// latencies gathers the sampled viewers' delivery latencies.
func (c *crowd) latencies() []time.Duration {
	var all []time.Duration
	for _, v := range c.viewers {
		select {
		case <-v.done: // the reader is gone; its slice is ours
		default:
			continue
		}
		if v.sampled {
			all = append(all, v.lat...)
		}
	}
	return all
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
