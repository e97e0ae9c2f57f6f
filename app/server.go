package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/recover"
	"github.com/gofiber/fiber/v2/middleware/requestid"
	"github.com/gofiber/fiber/v2/utils"
)

// BodyLimit is the largest request body accepted (413 beyond).
const BodyLimit = 4 << 20

// ReadBufferSize bounds a request's line and headers (431 beyond).
const ReadBufferSize = 16 << 10

// Deadlines of a connection's phases (docs/operations.md).
const (
	readTimeout  = 30 * time.Second
	writeTimeout = 60 * time.Second
	idleTimeout  = 120 * time.Second
)

// Server is the HTTP side of the process: the Fiber app with every module's
// routes, and the background services to start beside it.
type Server struct {
	App     *fiber.App
	core    *Core
	started []started
	// metricsLn is the listener of ONAIR_METRICS_ADDR while serving.
	metricsLn net.Listener
	// conns guards the listener Serve is given (connection caps, accept
	// errors retried).
	conns *connGuard
}

// NewServer builds the Fiber app: shared middleware, /healthz, /readyz,
// /metrics, /v1/openapi.json, then every module's routes.
func NewServer(core *Core) (*Server, error) {
	s := &Server{core: core}
	app := fiber.New(fiber.Config{
		AppName: "onair",
		// Every string and []byte a handler gets from *fiber.Ctx is its
		// own copy, never a view of fasthttp's reused buffers: values kept
		// past the handler (map keys, structs, goroutines) stay intact.
		// See docs/modules.md, "Request memory".
		Immutable:             true,
		ErrorHandler:          ErrorHandler(core.Log),
		BodyLimit:             BodyLimit,
		DisableStartupMessage: true,
		// Every phase of a connection has a deadline: the request (headers
		// and body) within ReadTimeout, the response (a media segment
		// included) within WriteTimeout, the wait for the next request
		// within IdleTimeout. docs/operations.md.
		ReadTimeout:    readTimeout,
		WriteTimeout:   writeTimeout,
		IdleTimeout:    idleTimeout,
		ReadBufferSize: ReadBufferSize,
		// A connection gives its read and write buffers back to the pool
		// between requests: an idle keep-alive connection, and a
		// WebSocket (fasthttp hands a hijacked connection its request
		// reader when that still holds one), then hold none of the
		// ReadBufferSize bytes. docs/benchmarks.md, "Chat fan-out".
		ReduceMemoryUsage: true,
	})
	// A hijacked connection (chat's WebSockets) is closed by its own code,
	// not when the hijack handler returns: a socket's handler returns once
	// the socket runs, giving back the upgrade request's context and its
	// goroutine (modules/chat, serveSocket).
	app.Server().KeepHijackedConns = true
	s.App = app
	var err error
	if s.conns, err = newConnGuard(core.Config, core.Log, core.Metrics); err != nil {
		return nil, err
	}
	throttle, err := newAuthThrottle(core)
	if err != nil {
		return nil, err
	}
	app.Use(clientAddress(core.Config.TrustedProxies))
	app.Use(requestid.New(requestid.Config{ContextKey: requestIDKey}))
	metrics, paths := newHTTPMetrics(core.Metrics), &pathRedactor{}
	app.Use(metrics.middleware())
	app.Use(accessLog(core.Log, paths))
	app.Use(recover.New(recover.Config{EnableStackTrace: true, StackTraceHandler: func(c *fiber.Ctx, e any) {
		core.Log.Error("panic", "path", LogPath(c), "request_id", RequestID(c), "panic", fmt.Sprint(e))
	}}))
	app.Use(requestDeadline(core.Config.RequestTimeout))
	// Before any route reads a body: a compressed one is inflated within
	// BodyLimit, or refused (bodyencoding.go).
	app.Use(inflateBody)

	app.Get("/healthz", func(c *fiber.Ctx) error { return c.JSON(fiber.Map{"status": "ok"}) })
	app.Get("/readyz", readyHandler(readyChecks(core), core.Log))
	if core.Config.MetricsAddr == "" {
		app.Get("/metrics", fiberMetricsHandler(core.Metrics))
	} else {
		ln, err := net.Listen("tcp", core.Config.MetricsAddr)
		if err != nil {
			return nil, fmt.Errorf("listen on ONAIR_METRICS_ADDR %s: %w", core.Config.MetricsAddr, err)
		}
		s.metricsLn = ln
	}

	doc, err := BuildOpenAPI(core)
	if err != nil {
		return nil, err
	}
	app.Get("/v1/openapi.json", func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
		c.Set("Access-Control-Allow-Origin", "*")
		return c.Send(doc)
	})

	// CORS first (a preflight needs no token), then the failed-auth
	// throttle (before any token lookup), the token, the token's budget.
	v1 := app.Group("/v1", apiCORS(core.Config.CORSOrigins), throttle.middleware(), RequireToken(core.Auth), s.rateLimiter())
	for _, m := range core.Modules {
		if r, ok := m.(APIRouter); ok {
			r.APIRoutes(v1)
		}
	}
	// Unknown /v1 paths still need a token first, then answer 404 JSON.
	v1.Use(func(c *fiber.Ctx) error { return NotFound("route " + c.Method() + " " + c.Path()) })

	for _, m := range core.Modules {
		if r, ok := m.(PublicRouter); ok {
			r.PublicRoutes(app)
		}
	}

	// The front answers some media requests before Fiber (front.go).
	f := &front{app: app, next: app.Server().Handler, trusted: core.Config.TrustedProxies, log: core.Log,
		metrics: metrics, paths: paths}
	for _, m := range core.Modules {
		if r, ok := m.(FrontRouter); ok {
			for _, rt := range r.FrontRoutes() {
				f.routes = append(f.routes, frontRoute{prefix: []byte(rt.Prefix), route: rt.Route, serve: rt.Serve})
			}
		}
	}
	if len(f.routes) != 0 {
		app.Server().Handler = f.handler
	}
	return s, nil
}

// rateLimiter is the limit of requests per token: redisLimiter when
// ONAIR_REDIS_URL is set, so every node shares one budget, and
// memoryLimiter otherwise (the same counting, without a round trip).
func (s *Server) rateLimiter() fiber.Handler {
	prefix := s.core.Config.RedisPrefix
	key := func(c *fiber.Ctx) string {
		if p := CurrentPrincipal(c); p != nil {
			return p.rateLimitKey(prefix)
		}
		return prefix + "rl:ip:" + c.IP()
	}
	// The limiters set only Retry-After on a 429; the X-RateLimit-* trio
	// is there too, as on every other answer.
	limitReached := func(c *fiber.Ctx) error {
		retry, err := strconv.Atoi(c.GetRespHeader(fiber.HeaderRetryAfter))
		if err != nil || retry < 1 {
			retry = 1
		}
		c.Set("X-RateLimit-Limit", strconv.Itoa(s.core.Config.RateLimit))
		c.Set("X-RateLimit-Remaining", "0")
		c.Set("X-RateLimit-Reset", strconv.Itoa(retry))
		return TooManyRequests("rate limit of the token exceeded", retry)
	}
	local := newMemoryLimiter(s.core.Config.RateLimit, uint32(rateWindow/time.Second), key, limitReached)
	if s.core.Redis == nil {
		return local.handler
	}
	rl := &redisLimiter{max: s.core.Config.RateLimit, window: rateWindow, rdb: s.core.Redis, key: key, limitReached: limitReached,
		local: local, state: s.core.RedisState, log: s.core.Log}
	return rl.handler
}

// rateWindow is the fixed window of the per-token rate limit.
const rateWindow = time.Minute

// Serve listens on ln until ctx ends, then shuts down gracefully: no new
// connections, in-flight requests finish (up to 20 s), services stop.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if err := s.StartServices(ctx); err != nil {
		ln.Close()
		return err
	}
	ln = s.conns.listener(ln)
	errc := make(chan error, 1)
	go func() { errc <- s.App.Listener(ln) }()
	// Logged once the services run (the first-run hint is out): what a
	// person or a script waits for before using the server.
	cfg := s.core.Config
	s.core.Log.Info("onair serving", "version", Version, "http", ln.Addr().String(), "public_url", cfg.PublicURL,
		"database", RedactURL(cfg.DatabaseURL), "storage", s.core.Store.Kind(), "redis", cfg.RedisURL != "",
		"max_conns", s.conns.max, "max_conns_per_ip", cfg.MaxConnsPerIP)
	if s.metricsLn != nil {
		ms := &http.Server{Handler: metricsHandler(s.core.Metrics), ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second, IdleTimeout: 120 * time.Second}
		go ms.Serve(s.metricsLn)
		defer ms.Close()
	}
	select {
	case err := <-errc:
		s.StopServices(context.Background())
		return err
	case <-ctx.Done():
	}
	s.core.Log.Info("shutting down", "grace", "20s")
	for _, st := range s.started {
		if d, ok := st.runner.(Drainer); ok {
			d.Drain()
		}
	}
	shutdownErr := s.App.ShutdownWithTimeout(20 * time.Second)
	// fasthttp's Shutdown closes only the listeners its Serve registered:
	// a signal right after start-up can come before the accept loop began,
	// and that loop would then serve on. Closed here, its Accept fails and
	// Serve returns (a second Close of a registered one does nothing).
	ln.Close()
	stopCtx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s.StopServices(stopCtx)
	if err := <-errc; err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return shutdownErr
}

// MetricsAddr is the address /metrics is served on when ONAIR_METRICS_ADDR
// moves it off the public port; nil otherwise.
func (s *Server) MetricsAddr() net.Addr {
	if s.metricsLn == nil {
		return nil
	}
	return s.metricsLn.Addr()
}

// StartServices starts every module's background work (Runner) in
// order. Each module's Start gets a context of its own that lives until
// the module stops (not until ctx ends, which only bounds the start), and
// the loops it runs with Core.Go belong to it.
func (s *Server) StartServices(ctx context.Context) error {
	for _, m := range s.core.Modules {
		svc, ok := m.(Runner)
		if !ok {
			continue
		}
		g := s.core.startModule(context.WithoutCancel(ctx), m.Name())
		err := svc.Start(g.ctx)
		s.core.startedModule()
		if err != nil {
			// The module did not start: its loops end, it is not stopped.
			stopCtx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			_ = g.stop(stopCtx)
			s.StopServices(stopCtx)
			cancel()
			return fmt.Errorf("module %s: start: %w", m.Name(), err)
		}
		s.started = append(s.started, started{runner: svc, group: g})
	}
	return nil
}

// StopServices stops the started modules in reverse order: each module's
// Stop, then its context ends and its Core.Go loops are awaited (until ctx
// ends); once every module stopped, the kernel's own loops.
func (s *Server) StopServices(ctx context.Context) {
	for i := len(s.started) - 1; i >= 0; i-- {
		st := s.started[i]
		if err := st.runner.Stop(ctx); err != nil {
			s.core.Log.Error("service stop", "err", err)
		}
		if err := st.group.stop(ctx); err != nil {
			s.core.Log.Error("service stop", "err", err)
		}
	}
	s.started = nil
	if err := s.core.StopBackground(ctx); err != nil {
		s.core.Log.Error("service stop", "err", err)
	}
}

// started is a module whose Start ran, with the group of its loops.
type started struct {
	runner Runner
	group  *group
}

const requestIDKey = "requestid"

// RequestID is the id of the request (also sent as X-Request-Id).
func RequestID(c *fiber.Ctx) string {
	id, _ := c.Locals(requestIDKey).(string)
	return id
}

// accessLog writes one structured line per request, its path without
// secrets (LogPath).
func accessLog(log *slog.Logger, paths *pathRedactor) fiber.Handler {
	return func(c *fiber.Ctx) error {
		start := c.Context().Time() // fasthttp's clock read as the handler starts
		c.Locals(redactorKey, paths)
		err := c.Next()
		if err != nil {
			if herr := c.App().ErrorHandler(c, err); herr != nil {
				_ = c.SendStatus(fiber.StatusInternalServerError)
			}
		}
		status := c.Response().StatusCode()
		level := slog.LevelInfo
		if status >= 500 {
			level = slog.LevelError
		} else if strings.HasPrefix(c.Path(), "/healthz") || strings.HasPrefix(c.Path(), "/metrics") {
			level = slog.LevelDebug
		}
		if !log.Enabled(c.UserContext(), level) {
			return nil // the line would be dropped: build none of it
		}
		logRequest(c.UserContext(), log, level, c.Method(), LogPath(c), status, start, c.IP(), RequestID(c), CurrentPrincipal(c))
		return nil
	}
}

// logRequest writes the access log line of a request (p nil: no user). The
// server's front (front.go) writes the same line for what it answers.
func logRequest(ctx context.Context, log *slog.Logger, level slog.Level, method, path string, status int, start time.Time, ip, requestID string, p *Principal) {
	// Room for user_id: appending it must not grow the slice.
	attrs := append(make([]slog.Attr, 0, 7),
		slog.String("method", method),
		slog.String("path", path),
		slog.Int("status", status),
		slog.Duration("took", time.Since(start)),
		slog.String("ip", ip),
		slog.String("request_id", requestID),
	)
	if p != nil {
		attrs = append(attrs, slog.Int64("user_id", p.UserID))
	}
	log.LogAttrs(ctx, level, "request", attrs...)
}

// RequireToken authenticates "Authorization: Bearer <token>"; anything else
// is 401 with WWW-Authenticate: Bearer.
//
// It reads the header where fasthttp keeps it rather than through c.Get,
// which copies it (Immutable): the token is hashed and looked up, never
// kept, so the Authenticator gets a view of the request's buffer, valid for
// the call only (see Authenticator). docs/benchmarks.md, "Shows API".
func RequireToken(auth Authenticator) fiber.Handler {
	return func(c *fiber.Ctx) error {
		token, ok := bearerToken(c.Request().Header.Peek(fiber.HeaderAuthorization))
		if !ok {
			return Unauthorized("send Authorization: Bearer <token>")
		}
		p, err := auth.Authenticate(c.UserContext(), utils.UnsafeString(token))
		if err != nil {
			return err
		}
		if p == nil {
			return Unauthorized("invalid or revoked token")
		}
		SetPrincipal(c, p)
		return c.Next()
	}
}

// bearerToken is the token of an Authorization header value "Bearer
// <token>" (the scheme in any case, the token trimmed of spaces); false
// when the header is anything else or the token is empty.
func bearerToken(h []byte) ([]byte, bool) {
	scheme, token, ok := bytes.Cut(h, []byte(" "))
	if !ok || !bytes.EqualFold(scheme, []byte("bearer")) {
		return nil, false
	}
	token = bytes.TrimSpace(token)
	return token, len(token) > 0
}
