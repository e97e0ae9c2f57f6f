package shows

import (
	"context"
	"time"

	"github.com/onair/onair/app"
)

// janitor calls Service.Sweep on a ticker so dropped shows complete after
// the reconnect window even when no publisher ever comes back. It is a
// Core.Go loop from the module's Start until it stops.
type janitor struct {
	svc   *Service
	every time.Duration
}

func newJanitor(svc *Service, window time.Duration) *janitor {
	every := min(max(window/4, time.Second), 5*time.Second)
	return &janitor{svc: svc, every: every}
}

func (j *janitor) run(ctx context.Context) {
	app.Every(ctx, j.every, func(ctx context.Context) {
		if _, err := j.svc.Sweep(ctx, j.svc.clock.Stamp()); err != nil && ctx.Err() == nil {
			j.svc.log.Error("shows: janitor", "err", err)
		}
	})
}
