package restream

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	destinations *prometheus.Desc
	connects     *prometheus.CounterVec
	bytes        prometheus.Counter
	m            *Module
}

func newMetrics(reg prometheus.Registerer, m *Module) (*metrics, error) {
	mt := &metrics{
		m: m,
		destinations: prometheus.NewDesc("onair_restream_destinations",
			"Restream destinations of the shows this node ingests, by state: connecting, connected, retrying, failed.", []string{"state"}, nil),
		connects: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "onair_restream_connects_total",
			Help: "Restream connection attempts of this node, by result: connected, error (network, timeout, closed), refused (the destination refused the stream, or the private-address guard the address).",
		}, []string{"result"}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "onair_restream_sent_bytes_total",
			Help: "Bytes of media this node pushed to restream destinations.",
		}),
	}
	for _, r := range []string{"connected", "error", "refused"} {
		mt.connects.WithLabelValues(r)
	}
	return mt, errors.Join(reg.Register(mt), reg.Register(mt.connects), reg.Register(mt.bytes))
}

func (mt *metrics) Describe(ch chan<- *prometheus.Desc) { ch <- mt.destinations }

// Collect counts the pushers by state now.
func (mt *metrics) Collect(ch chan<- prometheus.Metric) {
	count := map[string]int{}
	mt.m.mu.Lock()
	for _, p := range mt.m.pubs {
		for _, ps := range p.pushers {
			ps.mu.Lock()
			count[ps.state]++
			ps.mu.Unlock()
		}
	}
	mt.m.mu.Unlock()
	for _, s := range States {
		ch <- prometheus.MustNewConstMetric(mt.destinations, prometheus.GaugeValue, float64(count[s]), s)
	}
}
