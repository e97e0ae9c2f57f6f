package app

import (
	"context"
	"strings"
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
		ctx, cancel := context.WithTimeout(c.UserContext(), d)
		defer cancel()
		c.SetUserContext(ctx)
		return c.Next()
	}
}

// isUpgrade tells a WebSocket handshake (Connection: upgrade, Upgrade:
// websocket).
func isUpgrade(c *fiber.Ctx) bool {
	return strings.EqualFold(c.Get(fiber.HeaderUpgrade), "websocket") &&
		strings.Contains(strings.ToLower(c.Get(fiber.HeaderConnection)), "upgrade")
}
