package onairtest

import (
	"sync"
	"time"
)

// FakeClock is a time a test moves by hand; Core.Clock.Set(c.Now) makes
// it the boot's clock.
type FakeClock struct {
	mu sync.Mutex
	t  time.Time
}

// NewFakeClock returns a clock that reads t until moved.
func NewFakeClock(t time.Time) *FakeClock { return &FakeClock{t: t} }

// Now is the clock's time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Add moves the clock by d.
func (c *FakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
