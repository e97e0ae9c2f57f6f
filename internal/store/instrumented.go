package store

import (
	"context"
	"io"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Instrument wraps s so that every operation's latency and failures are
// counted on reg, by operation and store kind:
// onair_store_operation_duration_seconds{op,kind} and
// onair_store_operation_failures_total{op,kind}. A missing key asked for
// by Open or Stat is an answer, not a failure. Open is timed until the
// object is open, not while its body is read. Ping (the /readyz check) is
// not counted.
func Instrument(s Store, reg prometheus.Registerer) (Store, error) {
	in := &instrumented{
		Store: s,
		kind:  s.Kind(),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "onair_store_operation_duration_seconds",
			Help:    "Latency of media store operations (put is an upload acknowledged by the store), by operation and store kind.",
			Buckets: []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
		}, []string{"op", "kind"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "onair_store_operation_failures_total",
			Help: "Media store operations that failed, by operation and store kind.",
		}, []string{"op", "kind"}),
	}
	for _, c := range []prometheus.Collector{in.latency, in.failures} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return in, nil
}

type instrumented struct {
	Store
	kind     string
	latency  *prometheus.HistogramVec
	failures *prometheus.CounterVec
}

// observe records one operation that started at start and ended with err.
func (s *instrumented) observe(op string, start time.Time, err error) {
	s.latency.WithLabelValues(op, s.kind).Observe(time.Since(start).Seconds())
	if err != nil && !IsNotExist(err) {
		s.failures.WithLabelValues(op, s.kind).Inc()
	}
}

func (s *instrumented) Put(ctx context.Context, key string, body io.Reader, size int64, contentType string) error {
	start := time.Now()
	err := s.Store.Put(ctx, key, body, size, contentType)
	s.observe("put", start, err)
	return err
}

func (s *instrumented) Open(ctx context.Context, key string) (*Object, error) {
	start := time.Now()
	obj, err := s.Store.Open(ctx, key)
	s.observe("open", start, err)
	return obj, err
}

func (s *instrumented) Stat(ctx context.Context, key string) (Info, error) {
	start := time.Now()
	info, err := s.Store.Stat(ctx, key)
	s.observe("stat", start, err)
	return info, err
}

func (s *instrumented) List(ctx context.Context, prefix string) ([]Info, error) {
	start := time.Now()
	out, err := s.Store.List(ctx, prefix)
	s.observe("list", start, err)
	return out, err
}

func (s *instrumented) Delete(ctx context.Context, key string) error {
	start := time.Now()
	err := s.Store.Delete(ctx, key)
	s.observe("delete", start, err)
	return err
}

func (s *instrumented) DeletePrefix(ctx context.Context, prefix string) error {
	start := time.Now()
	err := s.Store.DeletePrefix(ctx, prefix)
	s.observe("delete_prefix", start, err)
	return err
}

var _ Store = (*instrumented)(nil)
