package streamcore

import (
	"sync"
	"sync/atomic"
)

// Reader consumes a stream. Its methods are called one at a time, in the
// stream's order, on a goroutine of its own (or, for an Inline reader,
// sometimes on the source's): Tracks before the first unit
// (and again when a track joins late or a configuration changes), then the
// units, then Close once.
type Reader interface {
	// Tracks tells the decided tracks and their configurations.
	Tracks(t Tracks) error
	// Unit takes one access unit, valid during the call. Its bytes are
	// shared with the other readers and never modified: read them, never
	// write them; they may be kept.
	Unit(u *Unit) error
	// Close is called once, after the last unit or after the reader
	// failed, when the stream ends.
	Close()
}

// Lazy is a Reader that acts on the outside world (publishes, writes
// files) only at some units, and merely gathers the others: a packager
// between the boundaries of its parts. The core then wakes its goroutine
// only for a unit Due reports, for tracks and flushes, and once LazyBatch
// units wait; the others are queued and handled, in order, with the next
// due one. Handing every socket read's units over at once cost a second
// thread's wake-up each, about a fifth of the ingest's CPU
// (bench/results/2026-11-28-ingest.md). Batching changes when a unit is
// handled, never the order nor what is made of it; the queue's bound and
// skipping are the same as for any reader.
type Lazy interface {
	Reader
	// Due reports whether u may make the reader act: when in doubt, true.
	// It is called on the source's goroutine, concurrently with the
	// reader's own methods, so it reads only what the reader publishes
	// for it (atomics), and must be cheap: it runs for every unit.
	Due(u *Unit) bool
}

// Inline is a Lazy reader whose work at some due units is only
// computation into memory: no file system, no network, no lock a slow
// party holds (a packager publishing an LL-HLS part to memory files). At
// such a unit, when the reader's goroutine sleeps with nothing else to
// do, the source's goroutine handles the queue itself instead of waking
// it: the wake-up of a second thread and its return to sleep cost more
// than the part's muxing (bench/results/2026-11-28f-ingest.md). The
// source waits for that work alone; when the reader's goroutine is busy
// (writing a segment) the unit is queued and the goroutine takes it, so
// a slow reader still falls behind and skips, never blocks the source.
type Inline interface {
	Lazy
	// Inline reports whether handling u, with the units queued before
	// it, only computes and writes to memory; when in doubt, false. Like
	// Due it runs on the source's goroutine, concurrently with the
	// reader's methods, and reads only what the reader publishes for it.
	Inline(u *Unit) bool
}

// LazyBatch is the most units a Lazy reader is left with unwoken: about
// two thirds of a second of 30 fps video with AAC audio.
const LazyBatch = 48

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

type item struct {
	tracks *Tracks
	unit   Unit // by value: no allocation per unit and reader
	flush  chan struct{}
}

// reader is a subscribed Reader with its queue and goroutine. The queue
// is a slice the goroutine takes whole: it is woken when the queue goes
// from empty to not, so units that come while it works (a socket read's
// worth) cost no wake-up each.
type reader struct {
	r      Reader
	lazy   Lazy   // r, if it is one
	inline Inline // r, if it is one
	// exec is held while the reader's methods run, on its goroutine or
	// inline on the source's: one at a time, each batch in its turn.
	exec   sync.Mutex
	opts   ReaderOptions
	s      *Stream
	wake   chan struct{} // of one: the queue has items, or was closed
	done   chan struct{}
	failed atomic.Bool

	mu      sync.Mutex
	queue   []item
	units   int // in queue
	stopped bool
	// signaled: the goroutine is awake (or has a wake-up coming), and
	// takes what is queued before it sleeps again.
	signaled bool

	// Source's goroutine only.
	skipping bool
	spare    []item // the inline run's batch, reused
	iu       Unit   // the unit an inline run hands over
	// Skipped counts the units dropped because the reader fell behind.
	skipped atomic.Uint64
}

func newReader(r Reader, o ReaderOptions, s *Stream) *reader {
	if o.Queue <= 0 {
		o.Queue = DefaultQueue
	}
	rd := &reader{r: r, opts: o, s: s, wake: make(chan struct{}, 1), done: make(chan struct{})}
	rd.lazy, _ = r.(Lazy)
	rd.inline, _ = r.(Inline)
	go rd.run()
	return rd
}

// push queues an item unless the queue is stopped, and wakes the reader
// when it sleeps, unless the item is a unit that need not wake it (lazy:
// a Lazy reader's unit that is not due, while fewer than LazyBatch
// units wait; quiet: one the source handles inline). A unit is refused
// when Queue units wait.
func (rd *reader) push(it item, unit, lazy, quiet bool) bool {
	rd.mu.Lock()
	if rd.stopped || unit && rd.units >= rd.opts.Queue {
		rd.mu.Unlock()
		return false
	}
	rd.queue = append(rd.queue, it)
	if unit {
		rd.units++
	}
	wake := !rd.signaled && !quiet && !(unit && lazy && rd.units < LazyBatch)
	if wake {
		rd.signaled = true
	}
	rd.mu.Unlock()
	if wake {
		rd.poke()
	}
	return true
}

// unit queues a media unit, or drops it while the reader is behind: past
// Queue units it skips up to the next keyframe (the next unit without
// video) once half the queue is free.
func (rd *reader) unit(u *Unit, hasVideo bool) {
	if rd.failed.Load() {
		return
	}
	if rd.skipping && (u.Video && u.Key || !hasVideo) && rd.queued() < rd.opts.Queue/2 {
		rd.skipping = false
	}
	if !rd.skipping {
		due := rd.lazy == nil || rd.lazy.Due(u)
		inline := due && rd.inline != nil && rd.inline.Inline(u)
		switch {
		case !rd.push(item{unit: *u}, true, !due, inline):
			rd.skipping = true
		case inline:
			rd.runInline()
		}
	}
	if rd.skipping {
		rd.skipped.Add(1)
	}
}

func (rd *reader) queued() int {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	return rd.units
}

// runInline handles the queue on the source's goroutine, when the
// reader's goroutine sleeps with nothing queued for it; else that
// goroutine is woken (or is awake) and takes the queue, as for any due
// unit. While it runs, what other goroutines send (tracks, a flush) is
// queued unwoken, and the goroutine is woken for it afterwards.
func (rd *reader) runInline() {
	if !rd.exec.TryLock() {
		rd.wakeUp() // busy: it takes the queue when done
		return
	}
	rd.mu.Lock()
	if rd.signaled || rd.stopped {
		rd.mu.Unlock()
		rd.exec.Unlock()
		return // awake, or waking: it takes the queue
	}
	batch := rd.queue
	rd.queue, rd.units = rd.spare[:0], 0
	rd.signaled = true
	rd.mu.Unlock()
	rd.handle(batch, &rd.iu)
	rd.spare = batch[:0]
	rd.mu.Lock()
	more := len(rd.queue) > 0
	if !more {
		rd.signaled = false
	}
	rd.mu.Unlock()
	rd.exec.Unlock()
	if more {
		rd.poke()
	}
}

// wakeUp wakes the reader's goroutine unless it is awake already.
func (rd *reader) wakeUp() {
	rd.mu.Lock()
	wake := !rd.signaled
	rd.signaled = true
	rd.mu.Unlock()
	if wake {
		rd.poke()
	}
}

// send queues tracks or a flush, which are never skipped.
func (rd *reader) send(it item) {
	if (rd.failed.Load() || !rd.push(it, false, false, false)) && it.flush != nil {
		close(it.flush)
	}
}

func (rd *reader) flush() {
	ch := make(chan struct{})
	rd.send(item{flush: ch})
	<-ch
}

func (rd *reader) fail(err error) {
	if rd.failed.CompareAndSwap(false, true) && rd.opts.Essential {
		rd.s.fail(rd.opts.Name, err)
	}
}

// stop ends the queue; the goroutine closes the reader after the rest.
func (rd *reader) stop() {
	rd.mu.Lock()
	rd.stopped = true
	rd.signaled = true
	rd.mu.Unlock()
	rd.poke()
}

// poke wakes the reader's goroutine, or leaves the wake it has pending:
// the channel holds one.
func (rd *reader) poke() {
	select {
	case rd.wake <- struct{}{}:
	default:
	}
}

func (rd *reader) run() {
	defer close(rd.done)
	defer rd.r.Close()
	var (
		batch []item
		u     Unit // the unit handed over, reused: one allocation per reader
	)
	for {
		rd.mu.Lock()
		batch, rd.queue = rd.queue, batch[:0]
		rd.units = 0
		stopped := rd.stopped
		if len(batch) == 0 && !stopped {
			rd.signaled = false // asleep until the next push that wakes
		}
		rd.mu.Unlock()
		if len(batch) == 0 {
			if stopped {
				return
			}
			<-rd.wake
			continue
		}
		rd.exec.Lock()
		rd.handle(batch, &u)
		rd.exec.Unlock()
	}
}

// handle passes a batch to the reader, in order; rd.exec is held. Each
// unit is handed over in *u.
func (rd *reader) handle(batch []item, u *Unit) {
	for i := range batch {
		it := &batch[i]
		var err error
		switch {
		case it.flush != nil:
			close(it.flush)
		case rd.failed.Load():
		case it.tracks != nil:
			err = rd.r.Tracks(*it.tracks)
		default:
			*u = it.unit
			err = rd.r.Unit(u)
		}
		if err != nil {
			rd.fail(err)
		}
		*it = item{} // let the bytes go
	}
}
