package streamcore

import (
	"errors"
	"sync/atomic"
)

// Reader consumes a stream. Its methods are called on a goroutine of its
// own, one at a time, in the stream's order: Tracks before the first unit
// (and again when a track joins late or a configuration changes), then the
// units, then Close once.
type Reader interface {
	// Tracks tells the decided tracks and their configurations.
	Tracks(t Tracks) error
	// Unit takes one access unit. The unit is shared with the other
	// readers: read it, never modify it; it may be kept.
	Unit(u *Unit) error
	// Close is called once, after the last unit or after the reader
	// failed, when the stream ends.
	Close()
}

// ReaderOptions tune how a reader is fed.
type ReaderOptions struct {
	// Name is the reader's name in errors ("hls").
	Name string
	// Queue caps the units waiting for the reader (DefaultQueue). When it
	// is full the reader skips: the units that do not fit are dropped up
	// to the next keyframe (the next unit, for a stream without video).
	Queue int
	// Essential readers end the stream when they fail: the source gets a
	// *ReaderError from its next Write. Others are dropped alone.
	Essential bool
}

// DefaultQueue holds about 12 s of 30 fps video with AAC audio.
const DefaultQueue = 1024

// queueSlack is room kept in the queue past Queue for the tracks and the
// flushes, which are never dropped.
const queueSlack = 16

// errQueueFull ends a reader whose queue has no room left even for tracks.
var errQueueFull = errors.New("queue full")

type item struct {
	tracks *Tracks
	unit   *Unit
	flush  chan struct{}
}

// reader is a subscribed Reader with its queue and goroutine.
type reader struct {
	r      Reader
	opts   ReaderOptions
	s      *Stream
	q      chan item
	done   chan struct{}
	failed atomic.Bool

	// Source's goroutine only.
	skipping bool
	// Skipped counts the units dropped because the reader fell behind.
	skipped atomic.Uint64
}

func newReader(r Reader, o ReaderOptions, s *Stream) *reader {
	if o.Queue <= 0 {
		o.Queue = DefaultQueue
	}
	rd := &reader{r: r, opts: o, s: s, q: make(chan item, o.Queue+queueSlack), done: make(chan struct{})}
	go rd.run()
	return rd
}

// unit queues a media unit, or drops it while the reader is behind.
func (rd *reader) unit(u *Unit, hasVideo bool) {
	if rd.failed.Load() {
		return
	}
	if rd.skipping && (u.Video && u.Key || !hasVideo) && len(rd.q) < rd.opts.Queue/2 {
		rd.skipping = false
	}
	if !rd.skipping && len(rd.q) >= rd.opts.Queue {
		rd.skipping = true
	}
	if rd.skipping {
		rd.skipped.Add(1)
		return
	}
	select {
	case rd.q <- item{unit: u}:
	default: // the slack taken by flushes: skip too
		rd.skipping = true
		rd.skipped.Add(1)
	}
}

// send queues tracks or a flush, which are never skipped.
func (rd *reader) send(it item) {
	if rd.failed.Load() {
		if it.flush != nil {
			close(it.flush)
		}
		return
	}
	select {
	case rd.q <- it:
	default:
		rd.fail(errQueueFull)
		if it.flush != nil {
			close(it.flush)
		}
	}
}

func (rd *reader) flush() {
	ch := make(chan struct{})
	rd.s.mu.Lock()
	closed := rd.s.closed
	if !closed {
		rd.send(item{flush: ch})
	}
	rd.s.mu.Unlock()
	if closed {
		<-rd.done
		return
	}
	<-ch
}

func (rd *reader) fail(err error) {
	if rd.failed.CompareAndSwap(false, true) && rd.opts.Essential {
		rd.s.fail(rd.opts.Name, err)
	}
}

// stop ends the queue; the goroutine closes the reader after the rest.
func (rd *reader) stop() { close(rd.q) }

func (rd *reader) run() {
	defer close(rd.done)
	defer rd.r.Close()
	for it := range rd.q {
		var err error
		switch {
		case it.flush != nil:
			close(it.flush)
			continue
		case rd.failed.Load():
			continue
		case it.tracks != nil:
			err = rd.r.Tracks(*it.tracks)
		default:
			err = rd.r.Unit(it.unit)
		}
		if err != nil {
			rd.fail(err)
		}
	}
}
