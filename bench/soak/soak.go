package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/onair/onair/bench/internal/benchkit"
)

// Config is one soak run.
type Config struct {
	Duration, Interval, Warmup time.Duration

	Shows, HLSViewers, ChatViewers, ChatRate int
	UpdateEvery                              time.Duration

	// A figure passes when every sample after the baseline differs from
	// the baseline by at most max(Bound × baseline, its slack).
	Bound          float64
	GoroutineSlack int
	FDSlack        int
	RSSSlackMiB    int64

	Keep bool
	Log  func(format string, args ...any)
}

func defaultConfig() Config {
	return Config{
		Duration: 30 * time.Minute, Interval: time.Minute, Warmup: 5 * time.Minute,
		Shows: 5, HLSViewers: 500, ChatViewers: 100, ChatRate: 10, UpdateEvery: 2 * time.Second,
		Bound: 0.10, GoroutineSlack: 25, FDSlack: 25, RSSSlackMiB: 8,
	}
}

func (c Config) validate() error {
	switch {
	case c.Interval < time.Second:
		return errors.New("-interval must be at least 1s")
	case c.Warmup < c.Interval:
		return errors.New("-warmup must be at least one -interval")
	case c.Duration < c.Warmup+2*c.Interval:
		return errors.New("-duration must leave at least two samples after the warm-up")
	case c.Shows < 1 || c.Shows > 32:
		return errors.New("-shows must be between 1 and 32")
	case c.HLSViewers < 0 || c.ChatViewers < 0 || c.ChatRate < 1:
		return errors.New("viewer counts must not be negative and -chat-rate must be at least 1")
	case c.UpdateEvery < 100*time.Millisecond:
		return errors.New("-update-every must be at least 100ms")
	case c.Bound <= 0:
		return errors.New("-bound must be positive")
	}
	return nil
}

// Sample is the server's figures at one moment, with the load's counters
// so far.
type Sample struct {
	At         time.Duration // since the load started
	RSS        int64
	Goroutines int
	FDs        int
	Load       string
	Counters   Counters
}

// Counters is what the load did so far.
type Counters struct {
	Segments, Parts, Playlists, HLSErrors, Sessions int64
	ChatPosted, ChatFailed, ChatDelivered, WSDials  int64
	WSFailed, WSDropped                             int64
	Updates, UpdateFailed, Webhooks                 int64
	PublisherRestarts                               int64
}

// Check is the bound of one figure over the samples after the warm-up.
type Check struct {
	Name           string
	Unit           string // "MiB" or ""
	Baseline       float64
	Min, Max       float64
	Allowed        float64 // absolute change allowed
	WorstAt        time.Duration
	Worst          float64 // largest absolute change
	Passed         bool
	SlackExplained string
}

// Result is a finished run.
type Result struct {
	Config  Config
	Started time.Time
	Samples []Sample
	Checks  []Check
	Final   Counters
	// Warm is what the load had done at the end of the warm-up (the
	// baseline sample): failures before it are reported, not checked.
	Warm     Counters
	Problems []string // the load did not run as it should
	CPUModel string
	LoadEnd  string
	Elapsed  time.Duration
}

// Passed is whether every figure stayed in its bound and the load ran.
func (r Result) Passed() bool {
	for _, c := range r.Checks {
		if !c.Passed {
			return false
		}
	}
	return len(r.Checks) > 0 && len(r.Problems) == 0
}

// Failures says what broke, in one line.
func (r Result) Failures() string {
	var out []string
	for _, c := range r.Checks {
		if !c.Passed {
			out = append(out, fmt.Sprintf("%s moved %s from %s (allowed %s)", c.Name, c.fmt(c.Worst), c.fmt(c.Baseline), c.fmt(c.Allowed)))
		}
	}
	return strings.Join(append(out, r.Problems...), "; ")
}

// Run builds and starts the server, sets up the shows, users and webhook,
// runs the load for c.Duration while sampling, and checks the samples.
func Run(ctx context.Context, c Config) (Result, error) {
	if c.Log == nil {
		c.Log = func(string, ...any) {}
	}
	res := Result{Config: c, CPUModel: cpuModel()}
	root, err := benchkit.RepoRoot()
	if err != nil {
		return res, err
	}
	tmp, err := os.MkdirTemp("", "onair-soak-")
	if err != nil {
		return res, err
	}
	if c.Keep {
		c.Log("keeping %s", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	c.Log("building onair and encoding the input...")
	input, err := encodeInput(ctx, tmp)
	if err != nil {
		return res, err
	}
	bin, err := benchkit.Build(root, tmp, false)
	if err != nil {
		return res, err
	}
	dataDir := filepath.Join(tmp, "onair")
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return res, err
	}
	srv, err := benchkit.NewServer(bin, dataDir, map[string]string{
		"ONAIR_WEBHOOK_ALLOW_PRIVATE": "true",
		"ONAIR_RATE_LIMIT":            "1000000",
		// A publisher restarted by the load resumes its show.
		"ONAIR_RECONNECT_WINDOW":           "1h",
		"ONAIR_RTMP_MAX_PUBLISHERS_PER_IP": "64",
		"ONAIR_RTMP_MAX_PENDING_PER_IP":    "64",
	})
	if err != nil {
		return res, err
	}
	c.Log("creating the DJ and %d chat users...", posters(c))
	_, djToken, err := srv.CreateUser("Soak DJ", "dj@soak.invalid")
	if err != nil {
		return res, err
	}
	chatTokens := make([]string, posters(c))
	for i := range chatTokens {
		if _, chatTokens[i], err = srv.CreateUser(fmt.Sprintf("Chatter %d", i+1), fmt.Sprintf("chatter%d@soak.invalid", i+1)); err != nil {
			return res, err
		}
	}
	if err := srv.Start(); err != nil {
		return res, err
	}
	defer srv.Stop()
	failed := true
	defer func() {
		if failed {
			log := srv.Log()
			c.Log("server log (last 4 KB):\n%s", log[max(0, len(log)-4096):])
		}
	}()

	receiver, err := startReceiver()
	if err != nil {
		return res, err
	}
	defer receiver.close()
	if err := srv.API(ctx, "POST", "/v1/webhooks", djToken, map[string]any{"url": receiver.url, "events": []string{"show.updated"}}, nil); err != nil {
		return res, err
	}
	shows := make([]benchkit.Show, c.Shows)
	for i := range shows {
		if shows[i], err = srv.CreateShow(ctx, djToken, fmt.Sprintf("Soak show %d", i+1)); err != nil {
			return res, err
		}
	}

	l := &load{c: c, srv: srv, djToken: djToken, chatTokens: chatTokens, shows: shows, input: input, receiver: receiver}
	loadCtx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	c.Log("starting %d publishers...", c.Shows)
	if err := l.startPublishers(loadCtx, &wg); err != nil {
		stopLoad()
		wg.Wait()
		return res, err
	}
	l.startViewers(loadCtx, &wg)

	res.Started = time.Now()
	c.Log("load running for %s, a sample every %s (warm-up %s)", c.Duration, c.Interval, c.Warmup)
	metrics := &http.Client{Timeout: 30 * time.Second}
	tick := time.NewTicker(c.Interval)
	defer tick.Stop()
	var sampleErr error
	for {
		s, err := sample(metrics, srv, res.Started, l.counters())
		if err != nil {
			sampleErr = err
			break
		}
		res.Samples = append(res.Samples, s)
		c.Log("%6s RSS %6.1f MiB, %5d goroutines, %5d fds, load %s; %d segments, %d parts, %d HLS errors, %d chats delivered, %d webhooks",
			s.At.Round(time.Second), mib(s.RSS), s.Goroutines, s.FDs, s.Load, s.Counters.Segments, s.Counters.Parts, s.Counters.HLSErrors, s.Counters.ChatDelivered, s.Counters.Webhooks)
		if s.At+c.Interval/2 >= c.Duration {
			break
		}
		select {
		case <-ctx.Done():
			sampleErr = ctx.Err()
		case <-tick.C:
		}
		if sampleErr != nil {
			break
		}
	}
	stopLoad()
	wg.Wait()
	res.Elapsed = time.Since(res.Started)
	if sampleErr != nil {
		return res, sampleErr
	}
	// The last webhook deliveries are on their way: wait for them (bounded).
	updates := l.updates.Load()
	for deadline := time.Now().Add(time.Minute); receiver.count() < updates && time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond)
	}
	res.Final = l.counters()
	res.LoadEnd = benchkit.LoadAvg()
	res.Checks = checkSamples(c, res.Samples)
	res.Warm = warmCounters(c, res.Samples)
	res.Problems = l.problems(res.Final, res.Warm)
	failed = !res.Passed()
	return res, nil
}

// posters is how many users post chat: four times the rate, so each posts
// every 4 s, well within the one-a-second limit even when a loaded machine
// delays one POST and sends the next on time.
func posters(c Config) int { return 4 * c.ChatRate }

// Readings a sample keeps the least of, and the time between them.
const (
	readings     = 5
	readingEvery = 200 * time.Millisecond
)

// sample is the least of a few readings of the server's figures taken
// within a second. What leaks stays in every reading; what a burst of the
// load holds for a moment does not: the periodic work of the server and
// the load's own (viewer sessions ending and starting, webhook
// deliveries) lifts the goroutines by 25–50 in a single reading, and on
// a loaded machine, where each lasts longer, past the bound.
func sample(client *http.Client, srv *benchkit.Server, started time.Time, cnt Counters) (Sample, error) {
	s, err := reading(client, srv, started, cnt)
	for i := 1; i < readings && err == nil; i++ {
		time.Sleep(readingEvery)
		var r Sample
		if r, err = reading(client, srv, started, cnt); err == nil {
			s.RSS, s.Goroutines, s.FDs = min(s.RSS, r.RSS), min(s.Goroutines, r.Goroutines), min(s.FDs, r.FDs)
		}
	}
	return s, err
}

// reading is the server's RSS, goroutines and open descriptors now.
func reading(client *http.Client, srv *benchkit.Server, started time.Time, cnt Counters) (Sample, error) {
	s := Sample{At: time.Since(started), Load: benchkit.LoadAvg(), Counters: cnt}
	var err error
	if s.RSS, err = benchkit.RSS(srv.PID()); err != nil {
		return s, fmt.Errorf("the server is gone: %w", err)
	}
	resp, err := client.Get(srv.URL + "/metrics")
	if err != nil {
		return s, fmt.Errorf("/metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return s, fmt.Errorf("/metrics: status %d", resp.StatusCode)
	}
	found := 0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok || (name != "go_goroutines" && name != "process_open_fds") {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			return s, fmt.Errorf("/metrics: %s: %w", name, err)
		}
		if name == "go_goroutines" {
			s.Goroutines = int(v)
		} else {
			s.FDs = int(v)
		}
		found++
	}
	if err := sc.Err(); err != nil {
		return s, fmt.Errorf("/metrics: %w", err)
	}
	if found != 2 {
		return s, errors.New("/metrics lacks go_goroutines or process_open_fds")
	}
	return s, nil
}

// warmCounters is what the load had done at the baseline sample, the
// first at or after the warm-up (zero when there is none).
func warmCounters(c Config, samples []Sample) Counters {
	for _, s := range samples {
		if s.At >= c.Warmup-c.Interval/4 {
			return s.Counters
		}
	}
	return Counters{}
}

// checkSamples compares each sample after the warm-up with the first one
// at or after it (the baseline).
func checkSamples(c Config, samples []Sample) []Check {
	var after []Sample
	for _, s := range samples {
		if s.At >= c.Warmup-c.Interval/4 {
			after = append(after, s)
		}
	}
	if len(after) < 2 {
		return nil
	}
	figures := []struct {
		name, unit string
		slack      float64
		value      func(Sample) float64
	}{
		{"RSS", "MiB", float64(c.RSSSlackMiB), func(s Sample) float64 { return mib(s.RSS) }},
		{"goroutines", "", float64(c.GoroutineSlack), func(s Sample) float64 { return float64(s.Goroutines) }},
		{"open descriptors", "", float64(c.FDSlack), func(s Sample) float64 { return float64(s.FDs) }},
	}
	var out []Check
	for _, f := range figures {
		base := f.value(after[0])
		ch := Check{Name: f.name, Unit: f.unit, Baseline: base, Min: base, Max: base,
			Allowed: math.Max(c.Bound*base, f.slack), Passed: true}
		for _, s := range after[1:] {
			v := f.value(s)
			ch.Min, ch.Max = math.Min(ch.Min, v), math.Max(ch.Max, v)
			if d := math.Abs(v - base); d > ch.Worst {
				ch.Worst, ch.WorstAt = d, s.At
			}
		}
		ch.Passed = ch.Worst <= ch.Allowed
		out = append(out, ch)
	}
	return out
}

func (c Check) fmt(v float64) string {
	if c.Unit != "" {
		return fmt.Sprintf("%.1f %s", v, c.Unit)
	}
	return fmt.Sprintf("%.0f", v)
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if name, ok := strings.CutPrefix(line, "model name"); ok {
			return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(name), ":"))
		}
	}
	return ""
}

func cores() string {
	return fmt.Sprintf("%d cores", runtime.NumCPU())
}
