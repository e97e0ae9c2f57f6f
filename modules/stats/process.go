package stats

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The process's CPU and memory for the console's dashboard: sampled every
// ONAIR_STATS_PROCESS_INTERVAL from the Prometheus process collector of
// the boot (the figures /metrics serves), and kept in memory for 24 h.
// They are this node's: each node of a cluster charts its own, and a
// restart starts an empty chart.

// keepProcess is how far back the samples go.
const keepProcess = 24 * time.Hour

// maxProcessSamples bounds the memory a short interval can take (24 h at
// 10 s); past it the oldest samples go first.
const maxProcessSamples = 8640

// processSample is one sample: CPU as the percent of one core used since
// the previous sample, memory as the resident set in MiB.
type processSample struct {
	t      time.Time
	cpu    float64
	memMiB float64
}

type processSamples struct {
	gather prometheus.Gatherer
	every  time.Duration
	limit  int

	mu       sync.Mutex
	samples  []processSample
	lastCPU  float64 // process_cpu_seconds_total at lastTime
	lastTime time.Time
}

func newProcessSamples(g prometheus.Gatherer, every time.Duration) *processSamples {
	return &processSamples{gather: g, every: every, limit: maxProcessSamples}
}

// sample reads the collector and appends a sample; the first reading
// only sets the CPU baseline.
func (p *processSamples) sample(now time.Time) {
	cpu, mem, ok := p.read()
	if !ok {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	first := p.lastTime.IsZero()
	s := processSample{t: now.UTC(), memMiB: mem / (1 << 20)}
	if !first {
		if wall := now.Sub(p.lastTime).Seconds(); wall > 0 {
			s.cpu = max(0, (cpu-p.lastCPU)/wall*100)
		}
	}
	p.lastCPU, p.lastTime = cpu, now
	if first {
		return
	}
	p.samples = append(p.samples, s)
	cut := 0
	for cut < len(p.samples) && (now.Sub(p.samples[cut].t) > keepProcess || len(p.samples)-cut > p.limit) {
		cut++
	}
	if cut > 0 {
		p.samples = append(p.samples[:0], p.samples[cut:]...)
	}
}

// read returns the process's CPU seconds and resident bytes.
func (p *processSamples) read() (cpu, mem float64, ok bool) {
	families, err := p.gather.Gather()
	if err != nil {
		return 0, 0, false
	}
	var haveCPU, haveMem bool
	for _, f := range families {
		if len(f.Metric) == 0 {
			continue
		}
		switch f.GetName() {
		case "process_cpu_seconds_total":
			cpu, haveCPU = f.Metric[0].GetCounter().GetValue(), true
		case "process_resident_memory_bytes":
			mem, haveMem = f.Metric[0].GetGauge().GetValue(), true
		}
	}
	return cpu, mem, haveCPU && haveMem
}

// list returns a copy of the samples, oldest first.
func (p *processSamples) list() []processSample {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]processSample(nil), p.samples...)
}
