package app

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Clock tells the time. The kernel has one per boot (Core.Clock); every
// module reads the time from it, and a test replaces it (BootOptions.Clock,
// or Core.Clock.Set on a running server) to move time for that boot only.
type Clock struct {
	mu  sync.RWMutex
	now func() time.Time
}

// NewClock returns a clock that reads now; nil reads the system's.
func NewClock(now func() time.Time) *Clock {
	c := &Clock{}
	c.Set(now)
	return c
}

// Set makes the clock read now from here on; nil puts the system's back.
func (c *Clock) Set(now func() time.Time) {
	if now == nil {
		now = time.Now
	}
	c.mu.Lock()
	c.now = now
	c.mu.Unlock()
}

// Now is the current time in UTC, to the nanosecond.
func (c *Clock) Now() time.Time {
	c.mu.RLock()
	now := c.now
	c.mu.RUnlock()
	return now().UTC()
}

// Stamp is the current time in UTC truncated to whole seconds, as rows
// keep it: MariaDB's DATETIME keeps whole seconds and both databases must
// agree (see Now).
func (c *Clock) Stamp() time.Time { return c.Now().Truncate(time.Second) }

// group is the background loops of one module (or of the kernel): the
// context they share, cancelled when the module stops, and their count.
type group struct {
	name   string
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newGroup(parent context.Context, name string) *group {
	ctx, cancel := context.WithCancel(parent)
	return &group{name: name, ctx: ctx, cancel: cancel}
}

// stop cancels the group's context and waits for its loops until ctx ends.
func (g *group) stop(ctx context.Context) error {
	g.cancel()
	done := make(chan struct{})
	go func() { g.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s: background loops still running: %w", g.name, ctx.Err())
	}
}

// runState is the part of the Core that runs background work: the
// kernel's own group (Go outside a module's Start, and Background), and
// the group of the module whose Start is running.
type runState struct {
	mu      sync.Mutex
	kernel  *group
	current *group // the group of the module being started; nil otherwise
	stopped bool
}

// Go runs fn in a goroutine of its own until the server stops: fn's ctx
// ends when Stop begins for the module that started it, and Stop waits
// for fn to return. Called from a module's Start, the loop belongs to that
// module: it is cancelled and awaited right after the module's Stop
// returns, before the modules registered earlier stop. Called at any other
// time (a handler, a command), it belongs to the kernel and is cancelled
// after every module stopped. fn must return promptly once ctx ends; name
// says what it is when Stop waits too long for it. After Stop, Go runs
// nothing.
func (c *Core) Go(name string, fn func(ctx context.Context)) {
	c.run.mu.Lock()
	if c.run.stopped {
		c.run.mu.Unlock()
		c.Log.Warn("background loop not started: the server is stopping", "loop", name)
		return
	}
	g := c.run.current
	if g == nil {
		g = c.kernelGroup()
	}
	g.wg.Add(1)
	c.run.mu.Unlock()
	go func() {
		defer g.wg.Done()
		fn(g.ctx)
	}()
}

// kernelGroup is the kernel's group, made on first use; c.run.mu is held.
func (c *Core) kernelGroup() *group {
	if c.run.kernel == nil {
		c.run.kernel = newGroup(context.Background(), "kernel")
	}
	return c.run.kernel
}

// Background returns a context for work that must outlive the request that
// asked for it (a relay's last messages, a cleanup after an answer): it
// ends after d, or when the server stops, whichever comes first. Call
// cancel once the work is done.
func (c *Core) Background(d time.Duration) (context.Context, context.CancelFunc) {
	c.run.mu.Lock()
	g := c.kernelGroup()
	c.run.mu.Unlock()
	return context.WithTimeout(g.ctx, d)
}

// Context is the kernel's own context: it lives until every module has
// stopped (or Close), and carries no deadline. A module that must hand a
// context to work begun before its Start (a session its Provision
// wired up) derives its own from it, with a cancel its Stop calls.
func (c *Core) Context() context.Context {
	c.run.mu.Lock()
	defer c.run.mu.Unlock()
	return c.kernelGroup().ctx
}

// startModule gives a module its own group for the loops its Start runs,
// and returns the group's context: the ctx its Start gets, which lives
// until the module stops.
func (c *Core) startModule(parent context.Context, name string) *group {
	g := newGroup(parent, "module "+name)
	c.run.mu.Lock()
	c.run.current = g
	c.run.mu.Unlock()
	return g
}

// startedModule ends the Start of the module that startModule began.
func (c *Core) startedModule() {
	c.run.mu.Lock()
	c.run.current = nil
	c.run.mu.Unlock()
}

// StopBackground cancels the kernel's own loops and waits for them until
// ctx ends; Go runs nothing after it. The server calls it once every
// module stopped; a command that used Go calls it before it returns.
func (c *Core) StopBackground(ctx context.Context) error {
	c.run.mu.Lock()
	c.run.stopped = true
	g := c.run.kernel
	c.run.mu.Unlock()
	if g == nil {
		return nil
	}
	return g.stop(ctx)
}
