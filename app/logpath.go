package app

import (
	"net/url"
	"strings"
	"sync"

	"github.com/gofiber/fiber/v2"
)

// Some URLs carry a secret in their path: a password reset link
// (/reset/:token), a private show's signed media (/media/shows/:id/t/:token/…).
// Whoever reads a log must not be able to use them, so what the logs say
// of a request's path is LogPath: the path with the value of every route
// parameter named as a secret replaced by the parameter's name. A module
// marks a parameter secret by its name; nothing else needs to know.
//
// The query string is never logged.
var secretParams = map[string]bool{
	"token": true, "secret": true, "key": true, "stream_key": true, "sig": true, "signature": true,
}

// RedactedValue stands in the logs for a secret path segment.
const RedactedValue = "REDACTED"

// secretRoute is a route pattern with a secret parameter, split at its
// slashes: a literal segment, or a parameter (secret or not).
type secretRoute []routeSegment

type routeSegment struct {
	literal string // "" for a parameter
	secret  bool
}

// pathRedactor holds the app's secret routes, read from its routes at the
// first request (every route is mounted by then).
type pathRedactor struct {
	once   sync.Once
	routes []secretRoute
}

func (r *pathRedactor) load(a *fiber.App) {
	seen := map[string]bool{}
	for _, rt := range a.GetRoutes(true) {
		if seen[rt.Path] {
			continue
		}
		seen[rt.Path] = true
		if sr, ok := parseSecretRoute(rt.Path); ok {
			r.routes = append(r.routes, sr)
		}
	}
}

// parseSecretRoute splits pattern when a whole segment of it is a
// parameter named as a secret, up to its last secret segment: a path
// that stops there (/media/shows/1/t/<token>) still names the secret.
// Nothing after a wildcard is kept.
func parseSecretRoute(pattern string) (secretRoute, bool) {
	var sr secretRoute
	last := -1
	for _, seg := range strings.Split(strings.Trim(pattern, "/"), "/") {
		if strings.ContainsAny(seg, "*+") {
			break
		}
		if strings.HasPrefix(seg, ":") {
			s := secretParams[strings.TrimSuffix(seg[1:], "?")]
			if s {
				last = len(sr)
			}
			sr = append(sr, routeSegment{secret: s})
			continue
		}
		sr = append(sr, routeSegment{literal: seg})
	}
	return sr[:last+1], last >= 0
}

// redact returns path with the secret segments of the first secret route
// it starts with replaced. It matches as loosely as a router might: empty
// segments skipped, literals compared unescaped and in any case, and more
// segments after the route's allowed (/reset/<token>/x still names a
// token). A path that matches none is returned as it is, without
// allocating.
func (r *pathRedactor) redact(path string) string {
	for _, route := range r.routes {
		if !route.matches(path) {
			continue
		}
		var b strings.Builder
		b.Grow(len(path))
		i := 0
		for seg, rest := nextSegment(path); seg != "" || rest != ""; seg, rest = nextSegment(rest) {
			if seg == "" {
				continue
			}
			b.WriteByte('/')
			if i < len(route) && route[i].secret {
				b.WriteString(RedactedValue)
			} else {
				b.WriteString(seg)
			}
			i++
		}
		return b.String()
	}
	return path
}

// nextSegment cuts the first segment off a path ("" for an empty one).
func nextSegment(path string) (seg, rest string) {
	path = strings.TrimPrefix(path, "/")
	seg, rest, _ = strings.Cut(path, "/")
	return seg, rest
}

func (route secretRoute) matches(path string) bool {
	i := 0
	for seg, rest := nextSegment(path); i < len(route) && (seg != "" || rest != ""); seg, rest = nextSegment(rest) {
		if seg == "" {
			continue
		}
		if lit := route[i].literal; lit != "" && !strings.EqualFold(seg, lit) {
			u, err := url.PathUnescape(seg)
			if err != nil || !strings.EqualFold(u, lit) {
				return false
			}
		}
		i++
	}
	return i == len(route)
}

const redactorKey = "onair.logpath"

// LogPath is the request's path as logs may show it: with the values of
// secret route parameters replaced by REDACTED. Use it, never c.Path(), in
// a log line. It is c.Path() for a request that did not pass the server's
// access log (a test's bare fiber.App).
func LogPath(c *fiber.Ctx) string {
	r, ok := c.Locals(redactorKey).(*pathRedactor)
	if !ok {
		return c.Path()
	}
	r.once.Do(func() { r.load(c.App()) })
	return r.redact(c.Path())
}
