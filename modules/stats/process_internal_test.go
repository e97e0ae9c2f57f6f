package stats

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// The console's CPU and memory come from the process collector /metrics
// serves: real figures of this test process, kept for 24 h and within
// the sample limit.
func TestProcessSamples(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	p := newProcessSamples(reg, time.Minute)
	p.limit = 5
	if _, _, ok := p.read(); !ok {
		t.Skip("no process collector on this platform")
	}
	now := time.Now()
	p.sample(now)
	if len(p.list()) != 0 {
		t.Fatal("the first reading is the CPU baseline, not a sample")
	}
	// Burn some CPU so the next sample has some.
	deadline := time.Now().Add(200 * time.Millisecond)
	for x := 0; time.Now().Before(deadline); x++ {
		_ = x * x
	}
	p.sample(now.Add(time.Second))
	got := p.list()
	if len(got) != 1 || got[0].cpu <= 0 || got[0].memMiB < 1 {
		t.Fatalf("after a busy second: %+v", got)
	}
	// Past the limit the oldest go; past 24 h too.
	for i := 2; i <= 8; i++ {
		p.sample(now.Add(time.Duration(i) * time.Second))
	}
	if got := p.list(); len(got) != 5 || !got[0].t.Equal(now.Add(4*time.Second).UTC()) {
		t.Fatalf("after 8 samples with a limit of 5: %d, first at %s", len(got), got[0].t)
	}
	p.sample(now.Add(keepProcess + 7*time.Second))
	if got := p.list(); len(got) != 3 {
		t.Fatalf("a day later %d samples are kept, want the three within 24 h", len(got))
	}
}
