package app

import (
	"context"
	"log/slog"
	"time"

	"github.com/gofiber/fiber/v2"
)

// readyTimeout bounds each check of /readyz: a dependency slower than this
// counts as unavailable, and the probe answers within it.
const readyTimeout = 2 * time.Second

// readyCheck is one dependency /readyz asks.
type readyCheck struct {
	name string
	ping func(ctx context.Context) error
}

// readyChecks are the dependencies a node cannot serve without: the
// database, the media store and, when configured, Redis.
func readyChecks(core *Core) []readyCheck {
	checks := []readyCheck{
		{"database", core.DB.PingContext},
		{"store", core.Store.Ping},
	}
	if core.Redis != nil {
		checks = append(checks, readyCheck{"redis", func(ctx context.Context) error { return core.Redis.Ping(ctx).Err() }})
	}
	return checks
}

// readyHandler answers 200 {"status":"ok","checks":{...}} when every check
// passes, else 503 {"status":"unavailable","checks":{...}} with the error
// of each failed one. The checks run at once, each within readyTimeout,
// so one hung dependency does not hide the others.
func readyHandler(checks []readyCheck, log *slog.Logger) fiber.Handler {
	return func(c *fiber.Ctx) error {
		type result struct {
			i   int
			err error
		}
		ctx, cancel := context.WithTimeout(c.UserContext(), readyTimeout)
		defer cancel()
		done := make(chan result, len(checks))
		for i, ch := range checks {
			go func() { done <- result{i, ch.ping(ctx)} }()
		}
		states := make(map[string]string, len(checks))
		for _, ch := range checks {
			states[ch.name] = "no answer within " + readyTimeout.String()
		}
		healthy := true
		for range checks {
			var r result
			select {
			case r = <-done:
			case <-ctx.Done():
				// A check that ignores its context keeps its
				// goroutine; its buffered slot lets it end later.
				log.Warn("readyz: a check did not answer in time", "timeout", readyTimeout)
				return answerReady(c, false, states)
			}
			name := checks[r.i].name
			if r.err != nil {
				healthy = false
				if ctx.Err() == nil {
					// The error itself (addresses, bucket and user
					// names) goes to the log only: /readyz is public.
					states[name] = "unavailable"
				}
				log.Warn("readyz: dependency unavailable", "check", name, "err", r.err)
				continue
			}
			states[name] = "ok"
		}
		return answerReady(c, healthy, states)
	}
}

func answerReady(c *fiber.Ctx, healthy bool, states map[string]string) error {
	if !healthy {
		return c.Status(fiber.StatusServiceUnavailable).JSON(fiber.Map{"status": "unavailable", "checks": states})
	}
	return c.JSON(fiber.Map{"status": "ok", "checks": states})
}
