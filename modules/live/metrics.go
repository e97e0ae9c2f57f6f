package live

import (
	"strconv"
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

// The transcoding ladders of the shows ingested here, read when scraped.
var (
	descTranscodeSpeed = prometheus.NewDesc("onair_transcode_speed",
		"Speed of a show's transcoder: media seconds made per second (1 keeps up; 0 while it is not running).",
		[]string{"show"}, nil)
	descTranscodeRestarts = prometheus.NewDesc("onair_transcode_restarts_total",
		"Times a show's transcoder (ffmpeg) stopped and was started again.", []string{"show"}, nil)
	descTranscodeDropped = prometheus.NewDesc("onair_transcode_dropped_rungs",
		"Rungs a show's transcoder gave up for being slower than real time.", []string{"show"}, nil)
	descRungBitrate = prometheus.NewDesc("onair_transcode_rung_bitrate_bits",
		"Average bit rate of a rung of a show's ladder, from its segments (bits per second).", []string{"show", "height"}, nil)
	descRungFPS = prometheus.NewDesc("onair_transcode_rung_fps",
		"Frame rate of a rung of a show's ladder.", []string{"show", "height"}, nil)
)

// transcodeCollector exposes each live show's ladder, per rung. It reads
// the streams through a function (Module.streamList in wiring), so it
// holds no pointer to the module.
type transcodeCollector struct{ streams func() []*stream }

func (c transcodeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descTranscodeSpeed, descTranscodeRestarts, descTranscodeDropped, descRungBitrate, descRungFPS} {
		ch <- d
	}
}

func (c transcodeCollector) Collect(ch chan<- prometheus.Metric) {
	list := c.streams()
	for _, s := range list {
		tc := s.transcoder.Load()
		if tc == nil {
			continue
		}
		h := tc.health()
		show := strconv.FormatInt(s.showID, 10)
		ch <- prometheus.MustNewConstMetric(descTranscodeSpeed, prometheus.GaugeValue, h.Speed, show)
		ch <- prometheus.MustNewConstMetric(descTranscodeRestarts, prometheus.CounterValue, float64(h.Restarts), show)
		ch <- prometheus.MustNewConstMetric(descTranscodeDropped, prometheus.GaugeValue, float64(len(h.Dropped)), show)
		for _, r := range h.Rungs {
			height := strconv.Itoa(r.Height)
			ch <- prometheus.MustNewConstMetric(descRungBitrate, prometheus.GaugeValue, float64(r.Bitrate)*1000, show, height)
			ch <- prometheus.MustNewConstMetric(descRungFPS, prometheus.GaugeValue, r.FPS, show, height)
		}
	}
}

// streamList is a copy of the streams publishing to this node, for
// transcodeCollector.
func (m *Module) streamList() []*stream {
	m.mu.Lock()
	defer m.mu.Unlock()
	list := make([]*stream, 0, len(m.streams))
	for _, s := range m.streams {
		list = append(list, s)
	}
	return list
}
