package app

import (
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/cors"
)

// apiCORS lets browser apps on ONAIR_CORS_ORIGINS call /v1. It runs before
// the token check, so a preflight (OPTIONS with
// Access-Control-Request-Method) is answered 204 without a token. The API
// authenticates with a Bearer header, never a cookie, so credentials are
// not allowed and "*" is safe; the pages and the console, which do ride on
// cookies, get no CORS headers at all.
func apiCORS(origins []string) fiber.Handler {
	return cors.New(cors.Config{
		AllowOrigins: strings.Join(origins, ","),
		AllowMethods: "GET,HEAD,POST,PUT,PATCH,DELETE",
		AllowHeaders: "Authorization,Content-Type,X-Request-Id",
		ExposeHeaders: strings.Join([]string{
			"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset",
			fiber.HeaderRetryAfter, fiber.HeaderLink, "X-Request-Id",
		}, ","),
		MaxAge: 3600,
	})
}
