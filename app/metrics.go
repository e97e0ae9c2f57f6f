package app

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
)

// latencyBuckets are the upper bounds (seconds) of the request histogram.
var latencyBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// Metrics keeps request counts and latencies by route and status and renders
// them in the Prometheus text format. Routes are the registered patterns
// (/v1/shows/:id), never raw paths, so the label set stays small.
type Metrics struct {
	mu       sync.Mutex
	requests map[requestKey]uint64
	latency  map[routeKey]*histogram
	gauges   map[string]func() float64
	started  time.Time
}

type routeKey struct{ method, route string }

type requestKey struct {
	routeKey
	status int
}

type histogram struct {
	counts []uint64
	sum    float64
	total  uint64
}

// NewMetrics returns an empty registry.
func NewMetrics() *Metrics {
	return &Metrics{
		requests: map[requestKey]uint64{},
		latency:  map[routeKey]*histogram{},
		gauges:   map[string]func() float64{},
		started:  time.Now(),
	}
}

// Gauge registers a value read at scrape time (a module's live streams,
// sockets...). name must be a valid Prometheus metric name.
func (m *Metrics) Gauge(name string, read func() float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gauges[name] = read
}

// Middleware measures every request once it has been answered.
func (m *Metrics) Middleware() fiber.Handler {
	return func(c *fiber.Ctx) error {
		start := time.Now()
		err := c.Next()
		route := "unmatched"
		if r := c.Route(); r != nil && r.Path != "/" && r.Path != "" && !strings.HasSuffix(r.Path, "*") {
			route = r.Path
		}
		m.observe(c.Method(), route, c.Response().StatusCode(), time.Since(start))
		return err
	}
}

func (m *Metrics) observe(method, route string, status int, took time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rk := routeKey{method, route}
	m.requests[requestKey{rk, status}]++
	h := m.latency[rk]
	if h == nil {
		h = &histogram{counts: make([]uint64, len(latencyBuckets))}
		m.latency[rk] = h
	}
	s := took.Seconds()
	for i, b := range latencyBuckets {
		if s <= b {
			h.counts[i]++
		}
	}
	h.sum += s
	h.total++
}

// Handler answers /metrics.
func (m *Metrics) Handler() fiber.Handler {
	return func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderContentType, "text/plain; version=0.0.4; charset=utf-8")
		return c.SendString(m.Render())
	}
}

// Render writes the Prometheus text exposition.
func (m *Metrics) Render() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var b strings.Builder
	b.WriteString("# HELP onair_http_requests_total HTTP requests by method, route and status.\n")
	b.WriteString("# TYPE onair_http_requests_total counter\n")
	reqs := make([]requestKey, 0, len(m.requests))
	for k := range m.requests {
		reqs = append(reqs, k)
	}
	sort.Slice(reqs, func(i, j int) bool {
		a, b := reqs[i], reqs[j]
		if a.route != b.route {
			return a.route < b.route
		}
		if a.method != b.method {
			return a.method < b.method
		}
		return a.status < b.status
	})
	for _, k := range reqs {
		fmt.Fprintf(&b, "onair_http_requests_total{method=%q,route=%q,status=\"%d\"} %d\n", k.method, k.route, k.status, m.requests[k])
	}
	b.WriteString("# HELP onair_http_request_duration_seconds HTTP request latency by method and route.\n")
	b.WriteString("# TYPE onair_http_request_duration_seconds histogram\n")
	routes := make([]routeKey, 0, len(m.latency))
	for k := range m.latency {
		routes = append(routes, k)
	}
	sort.Slice(routes, func(i, j int) bool {
		if routes[i].route != routes[j].route {
			return routes[i].route < routes[j].route
		}
		return routes[i].method < routes[j].method
	})
	for _, k := range routes {
		h := m.latency[k]
		for i, bound := range latencyBuckets {
			fmt.Fprintf(&b, "onair_http_request_duration_seconds_bucket{method=%q,route=%q,le=\"%g\"} %d\n", k.method, k.route, bound, h.counts[i])
		}
		fmt.Fprintf(&b, "onair_http_request_duration_seconds_bucket{method=%q,route=%q,le=\"+Inf\"} %d\n", k.method, k.route, h.total)
		fmt.Fprintf(&b, "onair_http_request_duration_seconds_sum{method=%q,route=%q} %g\n", k.method, k.route, h.sum)
		fmt.Fprintf(&b, "onair_http_request_duration_seconds_count{method=%q,route=%q} %d\n", k.method, k.route, h.total)
	}
	names := make([]string, 0, len(m.gauges))
	for n := range m.gauges {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		v := m.gauges[n]()
		if math.IsNaN(v) {
			continue
		}
		fmt.Fprintf(&b, "# TYPE %s gauge\n%s %g\n", n, n, v)
	}
	fmt.Fprintf(&b, "# TYPE onair_uptime_seconds gauge\nonair_uptime_seconds %g\n", time.Since(m.started).Seconds())
	return b.String()
}
