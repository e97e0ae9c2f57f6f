package shows

import (
	"context"
	"sync"
	"time"

	"github.com/onair/onair/app"
)

// janitor calls Service.Sweep on a ticker so dropped shows complete after
// the reconnect window even when no publisher ever comes back.
type janitor struct {
	svc   *Service
	every time.Duration

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

func newJanitor(svc *Service, window time.Duration) *janitor {
	every := min(max(window/4, time.Second), 5*time.Second)
	return &janitor{svc: svc, every: every}
}

func (j *janitor) start() {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	j.cancel, j.done = cancel, make(chan struct{})
	go func() {
		defer close(j.done)
		app.Every(ctx, j.every, func(ctx context.Context) {
			if _, err := j.svc.Sweep(ctx, app.Now()); err != nil && ctx.Err() == nil {
				j.svc.log.Error("shows: janitor", "err", err)
			}
		})
	}()
}

func (j *janitor) stop(ctx context.Context) error {
	j.mu.Lock()
	cancel, done := j.cancel, j.done
	j.cancel = nil
	j.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
