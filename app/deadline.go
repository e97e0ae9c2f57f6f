package app

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
)

// requestDeadline gives every request's context (c.UserContext()) the
// deadline ONAIR_REQUEST_TIMEOUT: database queries and other calls that
// take the context give up when it passes, and the request answers 503
// with code "timeout" (ErrorHandler). A WebSocket upgrade is left alone:
// its handler runs after the upgrade, for as long as the socket lives, on
// a context of its own. Bodies streamed after the handler returns (media
// files) are bounded by the server's write timeout instead.
func requestDeadline(d time.Duration) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if isUpgrade(c) {
			return c.Next()
		}
		ctx := &deadlineCtx{parent: c.UserContext(), deadline: c.Context().Time().Add(d)}
		defer ctx.end()
		c.SetUserContext(ctx)
		return c.Next()
	}
}

// deadlineCtx is a request's context with its deadline, like
// context.WithDeadline's, except that its timer starts only once something
// waits on it (Done, Err): a request that never does (media answered from
// memory) costs no timer. It ends (Canceled) when the handler returns.
type deadlineCtx struct {
	parent   context.Context
	deadline time.Time
	once     sync.Once
	ctx      context.Context
	cancel   context.CancelFunc
}

// ended and expired are the contexts of a request that returned without
// ever waiting, before and after its deadline.
var (
	ended = func() context.Context {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		return ctx
	}()
	expired = func() context.Context {
		ctx, cancel := context.WithDeadline(context.Background(), time.Time{})
		cancel() // it is past already: Err stays DeadlineExceeded
		return ctx
	}()
)

func (d *deadlineCtx) timed() context.Context {
	d.once.Do(func() { d.ctx, d.cancel = context.WithDeadline(d.parent, d.deadline) })
	return d.ctx
}

func (d *deadlineCtx) end() {
	d.once.Do(func() {
		if d.ctx = ended; !time.Now().Before(d.deadline) {
			d.ctx = expired
		}
	})
	if d.cancel != nil {
		d.cancel()
	}
}

func (d *deadlineCtx) Deadline() (time.Time, bool) {
	if p, ok := d.parent.Deadline(); ok && p.Before(d.deadline) {
		return p, true
	}
	return d.deadline, true
}

func (d *deadlineCtx) Done() <-chan struct{} { return d.timed().Done() }
func (d *deadlineCtx) Err() error            { return d.timed().Err() }
func (d *deadlineCtx) Value(key any) any     { return d.parent.Value(key) }

// isUpgrade tells a WebSocket handshake (Connection: upgrade, Upgrade:
// websocket).
func isUpgrade(c *fiber.Ctx) bool {
	return strings.EqualFold(c.Get(fiber.HeaderUpgrade), "websocket") &&
		strings.Contains(strings.ToLower(c.Get(fiber.HeaderConnection)), "upgrade")
}
