package chat

import (
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// A room's flush is written by a few fan-out workers (one a core, or all
// cores but one for a big room: fanWorkers), each taking the next
// stretch of the room's sockets and writing each socket what it lacks of
// the room's log, and what else the flush carries, with one non-blocking
// write(2) from its own goroutine. A socket
// whose kernel buffer is full takes what fits; the rest, and what follows
// until it catches up, go to that socket's own writer goroutine
// (client.write), which may wait for it up to writeWait and drops it when
// its queue overflows. So a flush wakes at most GOMAXPROCS goroutines,
// not one per socket, and a POST's handler finds a core.

// fanStretch is how many sockets a worker takes at a time; a room smaller
// than this is written by the flushing goroutine alone.
const fanStretch = 256

// fanWriter is one worker's state: the parts of a socket's next write,
// the buffer joining them, and the raw write's argument and result (kept
// here so a write allocates nothing).
type fanWriter struct {
	parts [][]byte
	buf   []byte

	b   []byte
	n   int
	err error
	fn  func(fd uintptr) bool
}

var fanWriters = sync.Pool{New: func() any {
	w := &fanWriter{}
	w.fn = w.writeFD
	return w
}}

// maxWorkerBuf is the largest joining buffer a worker keeps.
const maxWorkerBuf = 64 << 10

func getFanWriter() *fanWriter { return fanWriters.Get().(*fanWriter) }

func putFanWriter(w *fanWriter) {
	if cap(w.buf) > maxWorkerBuf {
		w.buf = nil
	}
	clear(w.parts)
	w.parts, w.buf, w.b = w.parts[:0], w.buf[:0], nil
	fanWriters.Put(w)
}

// write writes what of w.parts the socket's kernel buffer takes now,
// without waiting, in one write(2): n short of their length with a nil
// error when it is full.
func (w *fanWriter) write(raw syscall.RawConn) (int, error) {
	w.b = nil
	for _, p := range w.parts {
		switch {
		case len(p) == 0:
		case w.b == nil:
			w.b = p
		default:
			if len(w.buf) == 0 {
				w.buf = append(w.buf, w.b...)
			}
			w.buf = append(w.buf, p...)
			w.b = w.buf
		}
	}
	w.n, w.err = 0, nil
	err := raw.Write(w.fn)
	n := w.n
	if err == nil {
		err = w.err
	}
	w.b, w.buf, w.err = nil, w.buf[:0], nil
	return n, err
}

// rest is what of w.parts a write of n bytes left, as slices of the same
// frames; nil when nothing.
func (w *fanWriter) rest(n int) [][]byte {
	var rest [][]byte
	for _, p := range w.parts {
		switch {
		case n >= len(p):
			n -= len(p)
		default:
			rest = append(rest, p[n:])
			n = 0
		}
	}
	return rest
}

// writeFD is raw.Write's callback: write(2) on the non-blocking socket
// until it would block; true, so the runtime never waits for the socket
// to be writable.
func (w *fanWriter) writeFD(fd uintptr) bool {
	for w.n < len(w.b) {
		n, err := syscall.Write(int(fd), w.b[w.n:])
		if err == syscall.EINTR {
			continue
		}
		if err == syscall.EAGAIN {
			return true
		}
		if err != nil {
			w.err = err
			return true
		}
		w.n += n
		if n == 0 {
			return true
		}
	}
	return true
}

// flushOp is what a room's flush gives each of its sockets besides the
// frames of the room's log it lacks.
type flushOp struct {
	presence []byte // the newest presence frame (nil: none)
	ping     bool
}

// fanWorkers is how many workers a flush of n sockets runs. A flush may
// hold every core for about fanHoldAll (n × flushPerSocket of writes
// shared among them); a longer one leaves a core free, so that a request
// (a POST, an HLS segment, the network poller's wake-ups) finds one at
// once rather than after the flush. On two cores: both for a room of up
// to 5,000 sockets, one above. Never more than the room's stretches.
func fanWorkers(n int) int {
	procs := runtime.GOMAXPROCS(0)
	if procs > 1 && time.Duration(n)*flushPerSocket/time.Duration(procs) > fanHoldAll {
		procs--
	}
	return min(procs, (n+fanStretch-1)/fanStretch)
}

// fanHoldAll is how long one flush may keep every core busy.
const fanHoldAll = 25 * time.Millisecond

// fanOut gives every socket the frames of r's log it does not have yet,
// and op's, from fanWorkers workers (the calling goroutine one of them),
// and returns once each socket has been written or queued; the sockets
// too far behind are dropped. Each stretch reads the log as it is when
// the stretch begins, so a frame appended meanwhile reaches the sockets
// of the stretches after it in this flush.
func (h *Hub) fanOut(r *room, sockets []*client, op flushOp) {
	var next atomic.Int64
	work := func() {
		w := getFanWriter()
		defer putFanWriter(w)
		for {
			end := int(next.Add(fanStretch))
			start := end - fanStretch
			if start >= len(sockets) {
				return
			}
			if h.stretchHook != nil {
				h.stretchHook(start)
			}
			r.fmu.Lock()
			log, base := r.log, r.logBase
			r.fmu.Unlock()
			logEnd := base + int64(len(log))
			for _, c := range sockets[start:min(end, len(sockets))] {
				var frames []byte
				if c.sent < logEnd {
					frames = log[max(0, c.sent-base):]
				}
				c.sent = logEnd
				if frames == nil && op.presence == nil && !op.ping {
					continue
				}
				if !c.offer(w, frames, op.presence, op.ping) && c.drop(tooSlowFrame) {
					h.slow(c)
				}
			}
			// A stretch is about a millisecond of writes: let a request
			// that waits for a core (a POST) have it before the next.
			runtime.Gosched()
		}
	}
	workers := fanWorkers(len(sockets))
	var wg sync.WaitGroup
	for range workers - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()
}
