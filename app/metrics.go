package app

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// newMetricsRegistry returns the registry of one boot, with the Go runtime
// and process collectors. Each boot has its own (never the global default
// registry), so two servers in one test process do not share figures.
// Modules add their collectors to Core.Metrics in Provision.
func newMetricsRegistry() *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return r
}

// httpMetrics are the request counts and latencies of the HTTP server, by
// method, route pattern (/v1/shows/:id, never raw paths, so the label set
// stays small) and status.
type httpMetrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	// series caches the two series of each (route, method, status) met
	// so far: a request finds them with one lock-free lookup instead of
	// hashing its label values twice under the vectors' locks and
	// formatting its status. Bounded like the label set itself.
	series sync.Map // seriesKey → *httpSeries
}

// seriesKey is a route (nil for "unmatched", or a front route's pattern
// in label), a method label and a status.
type seriesKey struct {
	route  *fiber.Route
	label  string
	method string
	status int
}

type httpSeries struct {
	requests prometheus.Counter
	latency  prometheus.Observer
}

func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "onair_http_requests_total",
			Help: "HTTP requests by method, route pattern and status.",
		}, []string{"method", "route", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "onair_http_request_duration_seconds",
			Help:    "HTTP request latency by method and route pattern.",
			Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
		}, []string{"method", "route"}),
	}
	reg.MustRegister(m.requests, m.latency)
	return m
}

// middleware measures every request once it has been answered.
func (m *httpMetrics) middleware() fiber.Handler {
	return func(c *fiber.Ctx) error {
		start := c.Context().Time() // fasthttp's clock read as the handler starts
		err := c.Next()
		key := seriesKey{method: methodLabel(c.Method()), status: c.Response().StatusCode()}
		if r := c.Route(); r != nil && r.Path != "/" && r.Path != "" && !strings.HasSuffix(r.Path, "*") {
			key.route = r
		}
		m.observe(key, start)
		return err
	}
}

// observe counts a request of key that started at start.
func (m *httpMetrics) observe(key seriesKey, start time.Time) {
	se, ok := m.series.Load(key)
	if !ok {
		route := "unmatched"
		switch {
		case key.route != nil:
			route = key.route.Path
		case key.label != "":
			route = key.label
		}
		se, _ = m.series.LoadOrStore(key, &httpSeries{
			requests: m.requests.WithLabelValues(key.method, route, strconv.Itoa(key.status)),
			latency:  m.latency.WithLabelValues(key.method, route),
		})
	}
	s := se.(*httpSeries)
	s.requests.Inc()
	s.latency.Observe(time.Since(start).Seconds())
}

// methodLabel maps the request method onto the fixed set of HTTP methods,
// so a client inventing methods cannot grow the label set without bound.
// It returns the package's constant, never the request's own string, which
// the series cache keeps past the request.
func methodLabel(method string) string {
	for _, m := range httpMethods {
		if method == m {
			return m
		}
	}
	return "OTHER"
}

var httpMethods = [...]string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
	http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace}

// metricsHandler answers /metrics in the Prometheus exposition format.
func metricsHandler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})
}

// fiberMetricsHandler is metricsHandler mounted on the Fiber app.
func fiberMetricsHandler(reg *prometheus.Registry) fiber.Handler {
	return adaptor.HTTPHandler(metricsHandler(reg))
}
