package live

import (
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/proxy"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
)

// headerProxied marks a request one node forwards to another (its value is
// the forwarding node's id): the node it reaches answers from its own files
// or the store and never forwards it again.
const headerProxied = "X-Onair-Node"

// proxyTimeout bounds a forwarded request. It is longer than any blocking
// playlist reload (LL-HLS holds one for a few part durations) and shorter
// than the server's write timeout.
const proxyTimeout = 20 * time.Second

// hopHeaders are the hop-by-hop headers (RFC 9110 7.6.1) a proxy drops.
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
	"Proxy-Connection", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// proxier forwards live media requests to the node that ingests the show.
type proxier struct {
	c      *cluster
	client *fasthttp.Client
	took   *prometheus.HistogramVec
}

func newProxier(c *cluster) *proxier {
	return &proxier{c: c,
		client: &fasthttp.Client{
			Name:                "onair-node",
			ReadTimeout:         proxyTimeout,
			WriteTimeout:        10 * time.Second,
			MaxIdleConnDuration: 30 * time.Second,
			// A blocking playlist reload holds its connection for up to a
			// few part durations: one per waiting player.
			MaxConnsPerHost:          4096,
			MaxConnWaitTimeout:       5 * time.Second,
			DisablePathNormalizing:   true,
			NoDefaultUserAgentHeader: true,
		},
		took: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "onair_live_proxy_seconds",
			Help:    "Live media requests this node forwarded to the node ingesting the show, by result (ok, error).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 20},
		}, []string{"result"}),
	}
}

// forward answers a media request of a show that another node ingests by
// forwarding it there (path and query string as received, so blocking
// playlist reloads work through it). It reports false, with nothing sent,
// when the request stays here: this node ingests the show, no other node
// does, the request was forwarded already, or the owner did not answer
// (then the store or the local files answer).
func (p *proxier) forward(c *fiber.Ctx, show int64) bool {
	if c.Get(headerProxied) != "" || p.c.host.ingests(show) {
		return false
	}
	base := p.c.ownerURL(c.UserContext(), show)
	if base == "" {
		return false
	}
	req := c.Request()
	for _, h := range hopHeaders {
		req.Header.Del(h)
	}
	req.Header.Set(headerProxied, p.c.id)
	req.Header.Set(fiber.HeaderXForwardedFor, c.IP())
	deadline := time.Now().Add(proxyTimeout)
	if d, ok := c.UserContext().Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	start := time.Now()
	err := proxy.DoDeadline(c, base+c.OriginalURL(), deadline, p.client)
	if err != nil {
		p.took.WithLabelValues("error").Observe(time.Since(start).Seconds())
		p.c.owners.forget(show)
		p.c.log.Warn("live: forward to the show's node", "show", show, "node", base, "err", err)
		c.Response().Reset()
		req.Header.Del(headerProxied)
		return false
	}
	p.took.WithLabelValues("ok").Observe(time.Since(start).Seconds())
	for _, h := range hopHeaders {
		c.Response().Header.Del(h)
	}
	return true
}

// ingests tells whether a publisher of the show streams to this node.
func (m *Module) ingests(show int64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.streams[show] != nil || m.leaving[show] != nil
}

// replaced cuts off this node's publisher of the show because another node
// takes the show over; it reports whether there was one (a publisher
// already leaving lets go of the lease once its uploads are done).
func (m *Module) replaced(show int64) bool {
	m.mu.Lock()
	s, leaving := m.streams[show], m.leaving[show] != nil
	m.mu.Unlock()
	if s == nil {
		return leaving
	}
	m.core.Log.Info("publisher replaced on another node", "show", show)
	s.req.Disconnect(errReplaced)
	return true
}

// proxied tells whether the request came from another node.
func proxied(c *fiber.Ctx) bool { return c.Get(headerProxied) != "" }
