package streamcore

import (
	"bytes"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// goid is the calling goroutine's id (from its stack's first line).
func goid() uint64 {
	var b [64]byte
	s := b[:runtime.Stack(b[:], false)]
	s = bytes.TrimPrefix(s, []byte("goroutine "))
	id, _ := strconv.ParseUint(string(s[:bytes.IndexByte(s, ' ')]), 10, 64)
	return id
}

// inlineReader is due at every picture and handles the inter pictures
// inline (keyframes on its goroutine). It records which goroutine handled
// each unit, and fails if two of its calls overlap.
type inlineReader struct {
	recorder
	mu      sync.Mutex // guards on (the test reads it)
	on      []uint64   // goroutine of each unit
	in      atomic.Int32
	overlap atomic.Bool
	hold    chan struct{} // when set, a keyframe waits for it
}

func (r *inlineReader) Due(u *Unit) bool    { return u.Video }
func (r *inlineReader) Inline(u *Unit) bool { return !u.Key }

func (r *inlineReader) Unit(u *Unit) error {
	if r.in.Add(1) != 1 {
		r.overlap.Store(true)
	}
	defer r.in.Add(-1)
	if u.Key && r.hold != nil {
		<-r.hold
	}
	r.mu.Lock()
	r.on = append(r.on, goid())
	r.mu.Unlock()
	return r.recorder.Unit(u)
}

func (r *inlineReader) handled() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.on)
}

// asleep waits until the reader's goroutine sleeps with nothing queued.
func asleep(s *Stream) {
	rd := (*s.readers.Load())[0]
	for {
		rd.mu.Lock()
		idle := !rd.signaled && len(rd.queue) == 0
		rd.mu.Unlock()
		if idle {
			return
		}
		runtime.Gosched()
	}
}

// checkOrder fails unless the reader got n pictures and n AAC frames
// from 0 on, in the order written.
func checkOrder(t *testing.T, r *recorder, n int) {
	t.Helper()
	if r.err != nil {
		t.Fatal(r.err)
	}
	if len(r.units) != 2*n {
		t.Fatalf("%d units, want %d", len(r.units), 2*n)
	}
	for i, u := range r.units {
		if want := int64(i / 2 * 40); u.DTS != want || u.Video != (i%2 == 0) {
			t.Fatalf("unit %d: video=%v dts %d, want dts %d", i, u.Video, u.DTS, want)
		}
	}
}

// An Inline reader's inline units are handled on the source's goroutine
// before Write returns, with the units queued before them, when its own
// goroutine sleeps; the others wake that goroutine.
func TestInlineReaderRunsOnSource(t *testing.T) {
	r := &inlineReader{}
	s := New(time.Now(), Options{})
	s.AddReader(r, ReaderOptions{Name: "inline"})
	publish(t, s, 0, 1) // the tracks and a keyframe: its goroutine
	s.Flush()
	asleep(s)
	me := goid()
	for i := 1; i < 25; i++ {
		// The previous picture's audio waits (not due); the picture is
		// handled inline, the audio before it.
		publish(t, s, i, 1)
		if got, want := r.handled(), 2*i+1; got != want {
			t.Fatalf("picture %d: %d units handled when Write returned, want %d", i, got, want)
		}
		if on := r.on[len(r.on)-1]; on != me {
			t.Fatalf("picture %d handled on goroutine %d, not the source's %d", i, on, me)
		}
	}
	publish(t, s, 25, 1) // a keyframe: its goroutine
	s.Close()
	checkOrder(t, &r.recorder, 26)
	if r.on[len(r.on)-2] == me {
		t.Fatal("the keyframe was handled on the source's goroutine")
	}
	if r.overlap.Load() || !r.closed {
		t.Fatal("calls overlapped, or the reader was not closed")
	}
}

// While the reader's goroutine is busy, inline units are queued for it:
// the source is never held up by a slow reader, and the order is kept.
func TestInlineReaderBusyNeverBlocksSource(t *testing.T) {
	r := &inlineReader{hold: make(chan struct{})}
	s := New(time.Now(), Options{})
	s.AddReader(r, ReaderOptions{Name: "inline"})
	wrote := make(chan struct{})
	go func() {
		publish(t, s, 0, 200) // a keyframe the reader sits on, then more
		close(wrote)
	}()
	select {
	case <-wrote:
	case <-time.After(10 * time.Second):
		t.Fatal("the source was held up by a busy reader")
	}
	close(r.hold)
	s.Close()
	checkOrder(t, &r.recorder, 200)
	if r.overlap.Load() {
		t.Fatal("calls overlapped")
	}
}

// Flushes and tracks sent from other goroutines while units are handled
// inline are handled in turn, never beside an inline run.
func TestInlineReaderConcurrentFlush(t *testing.T) {
	r := &inlineReader{}
	s := New(time.Now(), Options{})
	s.AddReader(r, ReaderOptions{Name: "inline"})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				s.Flush()
			}
		}
	}()
	publish(t, s, 0, 500)
	close(stop)
	wg.Wait()
	s.Close()
	checkOrder(t, &r.recorder, 500)
	if r.overlap.Load() {
		t.Fatal("calls overlapped")
	}
}
