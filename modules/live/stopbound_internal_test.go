package live

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/onair/onair/internal/testload"
)

// Stop is bounded by its context and stopGrace even when a loop ignores
// its context (the stop's CI run had a node not exit within 2 minutes of
// SIGTERM): it returns an error naming what still runs, and returns nil
// at once when everything stopped.
func TestStopBoundedWhenALoopHangs(t *testing.T) {
	old := stopGrace
	stopGrace = 50 * time.Millisecond
	t.Cleanup(func() { stopGrace = old })

	ctx, cancel := context.WithCancel(context.Background())
	m := &Module{ctx: ctx, cancel: cancel}
	release := make(chan struct{})
	m.loops.Add(1)
	go func() { defer m.loops.Done(); <-release }() // deaf to m.ctx
	stopCtx, stopCancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer stopCancel()
	returned := make(chan error, 1)
	go func() { returned <- m.Stop(stopCtx) }()
	var err error
	select {
	case err = <-returned:
	case <-time.After(testload.Patience):
		close(release)
		t.Fatalf("Stop still waiting %s after its context ended", testload.Patience)
	}
	close(release)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "periodic loops") {
		t.Fatalf("Stop: %v, want the grace's error naming the loops", err)
	}
	if m.ctx.Err() == nil {
		t.Error("the module's context still live after Stop")
	}

	// Everything stopping in time: nil.
	ctx2, cancel2 := context.WithCancel(context.Background())
	m2 := &Module{ctx: ctx2, cancel: cancel2}
	m2.loops.Add(1)
	go func() { defer m2.loops.Done(); <-ctx2.Done() }()
	if err := m2.Stop(context.Background()); err != nil {
		t.Fatalf("Stop of loops that heed their context: %v", err)
	}
}
