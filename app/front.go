package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"
	"unsafe"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/utils"
	"github.com/valyala/fasthttp"
)

// The server's front: a few GET and HEAD requests (a live show's
// playlists, parts and segments held in memory) are answered straight
// from fasthttp's request context, before Fiber's context, router and
// middleware chain, which cost a third of such a request's CPU
// (bench/results/2026-11-28-serve.md). What the front answers gets what
// the middleware gives every answer: the client's address behind
// ONAIR_TRUSTED_PROXIES, X-Request-Id (an incoming one kept), the
// request's metrics under its route pattern, the access log line (its path
// through LogPath's redaction, no query) and a panic's 500 in the API's
// error shape. A front route does no waiting and no database work: it
// answers from memory or declines, and a request it declines, like every
// other request, goes to Fiber as it came.

// FrontRouter is a module with front routes (see FrontRoute).
type FrontRouter interface {
	FrontRoutes() []FrontRoute
}

// FrontRoute is a path prefix the front tries for GET and HEAD requests.
type FrontRoute struct {
	// Prefix is compared, case and escapes included, with the start of
	// the request's path as it came (/media/shows/).
	Prefix string
	// Route is the Fiber route pattern the requests stand for, the route
	// label of their metrics (/media/shows/:id/:file).
	Route string
	// Serve answers the request and returns true, or returns false
	// having changed nothing of its response, and Fiber answers it. It
	// must not block. X-Request-Id is set on the response already.
	Serve func(fc *fasthttp.RequestCtx) bool
}

// front is the fasthttp handler in front of Fiber's.
type front struct {
	app     *fiber.App
	next    fasthttp.RequestHandler
	routes  []frontRoute
	trusted trustedProxies
	log     *slog.Logger
	metrics *httpMetrics
	paths   *pathRedactor
}

type frontRoute struct {
	prefix []byte
	route  string
	serve  func(fc *fasthttp.RequestCtx) bool
}

// keyRequestID is X-Request-Id as fasthttp normalizes it (requestid sets
// fiber.HeaderXRequestID, "X-Request-ID", with Set, which normalizes).
var keyRequestID = []byte("X-Request-Id")

func (f *front) handler(fc *fasthttp.RequestCtx) {
	if fc.IsGet() || fc.IsHead() {
		path := fc.URI().PathOriginal()
		for i := range f.routes {
			if bytes.HasPrefix(path, f.routes[i].prefix) {
				if f.answer(fc, &f.routes[i]) {
					return
				}
				break
			}
		}
	}
	f.next(fc)
}

// answer runs the route's Serve with what the middleware would do around
// it; false when Serve declined (the response is as it was).
func (f *front) answer(fc *fasthttp.RequestCtx, r *frontRoute) (answered bool) {
	req := &fc.Request.Header
	// A body's encoding is inflateBody's to answer or refuse.
	if len(req.Peek(fiber.HeaderContentEncoding)) != 0 {
		return false
	}
	if len(f.trusted) != 0 {
		f.trusted.setClient(fc)
	}
	start := fc.Time() // as the middleware's: fasthttp's clock as the handler starts
	rid := req.PeekBytes(keyRequestID)
	if len(rid) == 0 {
		id := utils.UUID()                                 // requestid's generator
		rid = unsafe.Slice(unsafe.StringData(id), len(id)) // only copied (SetCanonical)
	}
	h := &fc.Response.Header
	h.SetCanonical(keyRequestID, rid)
	defer func() {
		if e := recover(); e != nil {
			f.panicked(fc, e)
			f.done(fc, r, start)
			answered = true
		}
	}()
	if !r.serve(fc) {
		h.DelBytes(keyRequestID)
		return false
	}
	f.done(fc, r, start)
	return true
}

// done counts the answered request and writes its access log line.
func (f *front) done(fc *fasthttp.RequestCtx, r *frontRoute, start time.Time) {
	method := http.MethodGet
	if fc.IsHead() {
		method = http.MethodHead
	}
	status := fc.Response.StatusCode()
	f.metrics.observe(seriesKey{label: r.route, method: method, status: status}, start)
	level := slog.LevelInfo
	if status >= 500 {
		level = slog.LevelError
	}
	if !f.log.Enabled(context.Background(), level) {
		return
	}
	logRequest(context.Background(), f.log, level, method, f.logPath(fc), status, start, fc.RemoteIP().String(),
		string(fc.Response.Header.PeekBytes(keyRequestID)), nil)
}

// panicked answers a panic of a front route as the recover middleware and
// the ErrorHandler answer one of a Fiber route: logged, then 500 in the
// API's error shape (the response's other headers dropped).
func (f *front) panicked(fc *fasthttp.RequestCtx, e any) {
	rid := string(fc.Response.Header.PeekBytes(keyRequestID))
	f.log.Error("panic", "path", f.logPath(fc), "request_id", rid, "panic", fmt.Sprint(e))
	fc.Response.Reset()
	fc.Response.Header.SetCanonical(keyRequestID, []byte(rid))
	c := f.app.AcquireCtx(fc)
	defer f.app.ReleaseCtx(c)
	c.Locals(requestIDKey, rid)
	c.Locals(redactorKey, f.paths)
	err, ok := e.(error)
	if !ok {
		err = errors.New(fmt.Sprint(e))
	}
	if herr := f.app.ErrorHandler(c, err); herr != nil {
		_ = c.SendStatus(fiber.StatusInternalServerError)
	}
}

// logPath is LogPath of a request the front answers.
func (f *front) logPath(fc *fasthttp.RequestCtx) string {
	f.paths.once.Do(func() { f.paths.load(f.app) })
	return f.paths.redact(string(fc.URI().PathOriginal()))
}
