package live

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/onair/onair/modules/live/rtmp"
)

// The RTMP admission counters, read from the server when scraped.
var (
	descRefused = prometheus.NewDesc("onair_rtmp_refused_total",
		"RTMP connections or publishes refused, by reason: full (every slot held by a publisher), "+
			"publishers_per_ip (the address's publisher cap), codec (a codec that cannot be packaged).",
		[]string{"reason"}, nil)
	descEvicted = prometheus.NewDesc("onair_rtmp_evicted_total",
		"RTMP connections not yet publishing dropped to admit newer ones.", nil, nil)
	descTimedOut = prometheus.NewDesc("onair_rtmp_admission_timeouts_total",
		"RTMP connections closed for not publishing within ONAIR_RTMP_ADMISSION_TIMEOUT.", nil, nil)
	descThrottled = prometheus.NewDesc("onair_rtmp_throttled_total",
		"Publishes refused by the stream key throttle, without a lookup.", nil, nil)
)

// admissionCollector exposes the admission counters of the module's RTMP
// server and its codec refusals.
type admissionCollector struct {
	server interface{ Stats() rtmp.Stats }
	codec  *atomic.Uint64
}

func (c admissionCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRefused, descEvicted, descTimedOut, descThrottled} {
		ch <- d
	}
}

func (c admissionCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.server.Stats()
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	counter(descRefused, st.RefusedFull, "full")
	counter(descRefused, st.RefusedPublishers, "publishers_per_ip")
	counter(descRefused, c.codec.Load(), "codec")
	counter(descEvicted, st.Evicted)
	counter(descTimedOut, st.TimedOut)
	counter(descThrottled, st.Throttled)
}
