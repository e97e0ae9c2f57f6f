package main

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/onair/onair/bench/internal/benchkit"
)

// buckets is one of the server's histograms (from its /metrics): the
// sample count and the cumulative counts by upper bound, in seconds.
type buckets struct {
	count  uint64
	bounds []float64
	counts []uint64
}

// serverTimes is what the server measured of a phase's messages: the
// chat POSTs' handler time (onair_http_request_duration_seconds, from the
// request read to the answer handed back) and each message's wait on the
// node, from its arrival to the end of the flush after which every
// socket has it (onair_chat_delivery_seconds). Against the poster's round trip
// and the clients' delivery latency they tell the server's share from
// the wait around it (the request, the answer and the frames waiting for
// a core on either side).
type serverTimes struct {
	handler, delivery buckets
	// mem is the server's Go memory at the reading: heap in use, goroutine
	// stacks (bytes) and goroutines (go_memstats_heap_inuse_bytes,
	// go_memstats_stack_inuse_bytes, go_goroutines).
	mem memory
}

type memory struct{ heap, stack, goroutines float64 }

// readServerTimes reads them from the server's /metrics.
func readServerTimes(ctx context.Context, srv *benchkit.Server) (serverTimes, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", srv.URL+"/metrics", nil)
	if err != nil {
		return serverTimes{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return serverTimes{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return serverTimes{}, fmt.Errorf("GET /metrics: %d", resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return serverTimes{}, fmt.Errorf("GET /metrics: %w", err)
	}
	var t serverTimes
	for _, m := range families["onair_http_request_duration_seconds"].GetMetric() {
		if label(m, "method") == "POST" && strings.HasSuffix(label(m, "route"), "/shows/:id/chats") {
			t.handler = histogram(m)
		}
	}
	for _, m := range families["onair_chat_delivery_seconds"].GetMetric() {
		t.delivery = histogram(m)
	}
	gauge := func(name string) float64 {
		for _, m := range families[name].GetMetric() {
			return m.GetGauge().GetValue()
		}
		return 0
	}
	t.mem = memory{heap: gauge("go_memstats_heap_inuse_bytes"), stack: gauge("go_memstats_stack_inuse_bytes"), goroutines: gauge("go_goroutines")}
	return t, nil
}

func histogram(m *dto.Metric) buckets {
	var h buckets
	for _, b := range m.GetHistogram().GetBucket() {
		h.bounds = append(h.bounds, b.GetUpperBound())
		h.counts = append(h.counts, b.GetCumulativeCount())
	}
	h.count = m.GetHistogram().GetSampleCount()
	return h
}

// since is what the server measured between before and t.
func (t serverTimes) since(before serverTimes) serverTimes {
	return serverTimes{handler: t.handler.since(before.handler), delivery: t.delivery.since(before.delivery)}
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// since is the histogram of the samples between before and h.
func (h buckets) since(before buckets) buckets {
	d := buckets{count: h.count - before.count, bounds: h.bounds, counts: make([]uint64, len(h.counts))}
	for i := range h.counts {
		d.counts[i] = h.counts[i]
		if i < len(before.counts) {
			d.counts[i] -= before.counts[i]
		}
	}
	return d
}

// quantile is the smallest bucket bound holding the fraction q of the
// samples (+Inf past the last bucket; 0 with none).
func (h buckets) quantile(q float64) float64 {
	if h.count == 0 {
		return 0
	}
	need := uint64(math.Ceil(q * float64(h.count)))
	for i, c := range h.counts {
		if c >= need {
			return h.bounds[i]
		}
	}
	return math.Inf(1)
}

// over is how many samples took longer than the bucket bound le.
func (h buckets) over(le float64) uint64 {
	for i, b := range h.bounds {
		if b == le {
			return h.count - h.counts[i]
		}
	}
	return 0
}

// add sums two nodes' measures: their histograms (the same buckets, one
// binary) and their memory.
func (t serverTimes) add(u serverTimes) serverTimes {
	return serverTimes{
		handler:  t.handler.add(u.handler),
		delivery: t.delivery.add(u.delivery),
		mem:      memory{heap: t.mem.heap + u.mem.heap, stack: t.mem.stack + u.mem.stack, goroutines: t.mem.goroutines + u.mem.goroutines},
	}
}

// add is the histogram of both h's and u's samples (u's bounds when h has
// none).
func (h buckets) add(u buckets) buckets {
	if len(h.bounds) == 0 {
		return buckets{count: h.count + u.count, bounds: u.bounds, counts: slices.Clone(u.counts)}
	}
	sum := buckets{count: h.count + u.count, bounds: h.bounds, counts: slices.Clone(h.counts)}
	for i := range min(len(sum.counts), len(u.counts)) {
		sum.counts[i] += u.counts[i]
	}
	return sum
}

// estimate is the q quantile interpolated linearly within its bucket, as
// Prometheus's histogram_quantile does (the first bucket starts at 0).
// Past the last finite bound it is that bound, with beyond set; with no
// samples it is 0.
func (h buckets) estimate(q float64) (v float64, beyond bool) {
	if h.count == 0 {
		return 0, false
	}
	rank := q * float64(h.count)
	lower, below := 0.0, uint64(0)
	for i, c := range h.counts {
		if float64(c) >= rank {
			if math.IsInf(h.bounds[i], 1) {
				return lower, true
			}
			if c == below {
				return h.bounds[i], false
			}
			return lower + (h.bounds[i]-lower)*(rank-float64(below))/float64(c-below), false
		}
		lower, below = h.bounds[i], c
	}
	return lower, true
}
