package app

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// runnerModule records its lifecycle in log and runs one Core.Go loop from
// Start, which on ctx's end reports it and then waits for release.
type runnerModule struct {
	name    string
	core    *Core
	log     *eventLog
	startCx context.Context

	cancelled chan struct{} // closed when the loop's ctx ended
	release   chan struct{} // the loop returns once closed
}

func (m *runnerModule) Name() string { return m.name }

func (m *runnerModule) Start(ctx context.Context) error {
	m.startCx = ctx
	m.core.Go(m.name+" loop", func(ctx context.Context) {
		<-ctx.Done()
		m.log.add(m.name + " loop cancelled")
		close(m.cancelled)
		<-m.release
		m.log.add(m.name + " loop returned")
	})
	return nil
}

func (m *runnerModule) Stop(context.Context) error {
	alive := m.startCx.Err() == nil
	m.log.add(m.name + " stop, start ctx alive=" + map[bool]string{true: "yes", false: "no"}[alive])
	return nil
}

type eventLog struct {
	mu  sync.Mutex
	got []string
}

func (l *eventLog) add(s string) { l.mu.Lock(); l.got = append(l.got, s); l.mu.Unlock() }
func (l *eventLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.got, "; ")
}

// The ctx Start gets outlives the ctx StartServices got and lives until
// the module's Stop returned; Stop then cancels each module's Core.Go loops
// and waits for them, module by module in reverse order, and the kernel's
// own loops last.
func TestStopWaitsForGoLoops(t *testing.T) {
	log := &eventLog{}
	core := &Core{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Clock: NewClock(nil)}
	mk := func(name string) *runnerModule {
		return &runnerModule{name: name, core: core, log: log, cancelled: make(chan struct{}), release: make(chan struct{})}
	}
	a, b := mk("a"), mk("b")
	core.Modules = []Module{a, &namedModule{"plain"}, b}
	s := &Server{core: core}
	serveCtx, endServe := context.WithCancel(context.Background())
	if err := s.StartServices(serveCtx); err != nil {
		t.Fatal(err)
	}
	// A loop started outside any Start belongs to the kernel.
	kernelCancelled, kernelRelease := make(chan struct{}), make(chan struct{})
	core.Go("kernel loop", func(ctx context.Context) {
		<-ctx.Done()
		close(kernelCancelled)
		<-kernelRelease
		log.add("kernel loop returned")
	})
	endServe() // the signal: the modules' contexts live on until they stop
	if a.startCx.Err() != nil || b.startCx.Err() != nil {
		t.Fatal("a module's Start ctx ended with the serve ctx, before its Stop")
	}

	stopped := make(chan struct{})
	go func() { s.StopServices(context.Background()); close(stopped) }()
	for _, step := range []struct {
		cancelled, release chan struct{}
	}{{b.cancelled, b.release}, {a.cancelled, a.release}, {kernelCancelled, kernelRelease}} {
		<-step.cancelled
		select {
		case <-stopped:
			t.Fatalf("StopServices returned while a loop was still running: %s", log)
		default:
		}
		close(step.release)
	}
	<-stopped
	want := "b stop, start ctx alive=yes; b loop cancelled; b loop returned; " +
		"a stop, start ctx alive=yes; a loop cancelled; a loop returned; kernel loop returned"
	if got := log.String(); got != want {
		t.Fatalf("lifecycle:\n got %s\nwant %s", got, want)
	}
	// After Stop, Go runs nothing.
	ran := make(chan struct{}, 1)
	core.Go("late", func(context.Context) { ran <- struct{}{} })
	select {
	case <-ran:
		t.Fatal("Go ran a loop after the server stopped")
	default:
	}
}

// Stop gives up on a loop that ignores its ctx once the stop's ctx ends,
// and says which module's loops are still running.
func TestStopBoundedByItsContext(t *testing.T) {
	core := &Core{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	hold := make(chan struct{})
	defer close(hold)
	g := newGroup(context.Background(), "module stuck")
	core.run.current = g
	core.Go("stuck", func(context.Context) { <-hold })
	core.run.current = nil
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	err := g.stop(ctx)
	if err == nil || !strings.Contains(err.Error(), "module stuck") {
		t.Fatalf("stop of a stuck loop: %v", err)
	}
}

// The clock reads what a test sets, per core, and the system's again
// after Set(nil).
func TestClockPerBoot(t *testing.T) {
	fixed := time.Date(2030, 1, 2, 3, 4, 5, 600, time.FixedZone("x", 3600))
	a, b := NewClock(func() time.Time { return fixed }), NewClock(nil)
	if got := a.Now(); !got.Equal(fixed) || got.Location() != time.UTC {
		t.Fatalf("Now = %v", got)
	}
	if got := a.Stamp(); !got.Equal(fixed.Truncate(time.Second)) {
		t.Fatalf("Stamp = %v", got)
	}
	if time.Since(b.Now()) > time.Minute {
		t.Fatal("the other core's clock moved too")
	}
	a.Set(nil)
	if time.Since(a.Now()) > time.Minute {
		t.Fatal("Set(nil) did not restore the system's time")
	}
}
