package main

import (
	"context"
	"fmt"
	"maps"
	"math"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/onair/onair/bench/internal/benchkit"
)

// Blocking reloads under a crowd (-blocking-clients N): one publisher
// streams the input to a show in real time; N LL-HLS clients, each on a
// keep-alive connection of its own, follow its live playlist as hls.js in
// lowLatencyMode does: a blocking reload for the part the playlist hints
// (?_HLS_msn=M&_HLS_part=P), then that part, then the next reload. The
// hls.js OnAir serves (1.7) parses EXT-X-PRELOAD-HINT but does not request
// the hinted part ahead: it loads the part once the reload's answer lists
// it, as these clients do. A
// reload the server held answers with X-Onair-Published, the moment the
// playlist it waited for was published (the server's own clock, the
// machine's); the wake is the response's arrival (its header read, before
// the body) minus that moment, and the body-read figure is kept beside it.
// Reloads answered at once (the client came late, its part was out
// already) carry no header and are counted apart. The clients are kept
// lean, so that they measure the server rather than themselves: one
// goroutine and one raw HTTP/1.1 connection each (rawConn, not net/http's
// client), no regular expressions, part bodies drained, not kept; their own
// CPU is reported, and the server's share of the wake (publication to the
// release of the held request) is read from its
// onair_hls_blocking_wake_seconds histogram before and after.

// hintOf reads the segment and part a playlist hints without a regular
// expression: #EXT-X-PRELOAD-HINT:TYPE=PART,URI="seg-000047-p1.ts".
func hintOf(text string) (msn uint64, part int, ok bool) {
	const tag = `#EXT-X-PRELOAD-HINT:TYPE=PART,URI="`
	i := strings.LastIndex(text, tag)
	if i < 0 {
		return 0, 0, false
	}
	uri, _, _ := strings.Cut(text[i+len(tag):], `"`)
	uri, ok = strings.CutSuffix(uri, ".ts")
	p := strings.LastIndex(uri, "-p")
	if !ok || p < 0 {
		return 0, 0, false
	}
	m := strings.LastIndexByte(uri[:p], '-')
	if m < 0 {
		return 0, 0, false
	}
	msn, err1 := strconv.ParseUint(uri[m+1:p], 10, 64)
	part, err2 := strconv.Atoi(uri[p+2:])
	return msn, part, err1 == nil && err2 == nil
}

// lastPartOf is the URI of the playlist's newest part (its last
// #EXT-X-PART), "" without one.
func lastPartOf(text string) string {
	i := strings.LastIndex(text, "#EXT-X-PART:")
	if i < 0 {
		return ""
	}
	line, _, _ := strings.Cut(text[i:], "\n")
	_, uri, ok := strings.Cut(line, `URI="`)
	if !ok {
		return ""
	}
	uri, _, _ = strings.Cut(uri, `"`)
	return uri
}

type blockingResult struct {
	clients   int
	seconds   int
	wakes     []time.Duration // held reloads: header arrival − publication
	bodyWakes []time.Duration // the same, body read
	// slowest is, per publication (part) that held reloads waited for,
	// its slowest wake: a crowd's p99 is set by its worst ~1 % of wakes,
	// a handful of parts' bursts, so it tells a burst that was slow as a
	// whole (the machine busy elsewhere) from a tail in every burst.
	slowest []time.Duration
	// slowParts lists the parts whose slowest wake passed 50 ms: when
	// (seconds into the run), which part of its segment, how slow.
	slowParts        []string
	released         []float64 // server: wake histogram's delta, cumulative per bound
	bounds           []float64 // its upper bounds (seconds)
	clientCPU        time.Duration
	immediate        int // reloads answered without waiting
	parts            int // parts fetched
	errors           map[string]int
	serverCPU        time.Duration
	loadBefore, load string
	partDuration     string
}

// runBlocking publishes the input to a new show and runs the crowd.
func runBlocking(ctx context.Context, o options, srv *benchkit.Server, token, input string) (blockingResult, error) {
	res := blockingResult{clients: o.blockingClients, seconds: o.blockingSeconds, errors: map[string]int{}, partDuration: o.partDuration}
	sh, err := srv.CreateShow(ctx, token, "Bench blocking reloads")
	if err != nil {
		return res, err
	}
	warm := 6
	pub := exec.CommandContext(ctx, "ffmpeg", publishArgs(input, "rtmp://"+srv.RTMPAddr+"/live/"+sh.StreamKey, min(o.inputSeconds, warm+o.blockingSeconds+5))...)
	if err := pub.Start(); err != nil {
		return res, err
	}
	defer func() { pub.Process.Kill(); pub.Wait() }()
	playlist := fmt.Sprintf("%s/media/shows/%d/index.m3u8", srv.URL, sh.ID)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if text, err := getText(playlist); err == nil {
			if _, _, ok := hintOf(text); ok {
				break
			}
		}
		if time.Now().After(deadline) {
			return res, fmt.Errorf("blocking: no LL-HLS playlist at %s within 30 s", playlist)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Duration(warm) * time.Second)

	u, err := url.Parse(playlist)
	if err != nil {
		return res, err
	}
	base := u.Path[:strings.LastIndexByte(u.Path, '/')+1]
	var mu sync.Mutex
	slowest := map[int64]time.Duration{} // per publication (µs): its slowest wake, under mu
	partOf := map[int64]int{}            // and the part index waited for
	fail := func(what string) {
		mu.Lock()
		res.errors[what]++
		mu.Unlock()
	}
	bounds0, released0, err := wakeHistogram(srv.URL)
	if err != nil {
		return res, err
	}
	res.loadBefore = benchkit.LoadAvg()
	cpu0, _ := benchkit.ReadCPU(srv.PID())
	own0, _ := benchkit.ReadCPU(os.Getpid())
	stop := time.Now().Add(time.Duration(o.blockingSeconds) * time.Second)
	var profiled chan error
	if o.profile != "" {
		profiled = profile(srv, o.blockingSeconds, filepath.Join(o.profile, fmt.Sprintf("blocking-%d.cpu.pprof", o.blockingClients)))
	}
	var wg sync.WaitGroup
	for i := range o.blockingClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Spread the arrivals over a second, as a crowd's would be.
			time.Sleep(time.Duration(i) * time.Second / time.Duration(o.blockingClients))
			conn := &rawConn{addr: u.Host, host: u.Host, timeout: 15 * time.Second}
			b, _, _, _, err := conn.get(u.Path, true)
			if err != nil {
				fail("first playlist: " + err.Error())
				return
			}
			// The playlist is read in place and the URLs are built in
			// buffers of the client's own, reused: a client that made a
			// string of each answer and of each URL collected its garbage
			// every few seconds, 5–20 ms of its goroutines stopped or
			// slowed in the middle of a burst (bench/results/2026-11-28g-wake.md).
			var own, path, partPath []byte
			own = append(own, b...)
			text := unsafe.String(unsafe.SliceData(own), len(own))
			var wakes, bodyWakes []time.Duration
			var pubs []int64
			var asked []int
			immediate, parts := 0, 0
			for time.Now().Before(stop) {
				msn, part, ok := hintOf(text)
				if !ok {
					fail("no preload hint")
					return
				}
				path = append(append(path[:0], u.Path...), "?_HLS_msn="...)
				path = append(strconv.AppendUint(path, msn, 10), "&_HLS_part="...)
				path = strconv.AppendInt(path, int64(part), 10)
				body, published, arrived, read, err := conn.get(unsafe.String(unsafe.SliceData(path), len(path)), true)
				if err != nil {
					fail(err.Error())
					time.Sleep(100 * time.Millisecond)
					continue
				}
				own = append(own[:0], body...) // text stays valid until the next answer
				text = unsafe.String(unsafe.SliceData(own), len(own))
				if published.IsZero() {
					immediate++
				} else {
					wakes = append(wakes, arrived.Sub(published))
					pubs = append(pubs, published.UnixMicro())
					asked = append(asked, part)
					bodyWakes = append(bodyWakes, read.Sub(published))
				}
				// The newest part, as a player loads it next.
				if uri := lastPartOf(text); uri != "" {
					partPath = append(append(partPath[:0], base...), uri...)
					if _, _, _, _, err := conn.get(unsafe.String(unsafe.SliceData(partPath), len(partPath)), false); err != nil {
						fail("part: " + err.Error())
					} else {
						parts++
					}
				}
			}
			mu.Lock()
			for i, us := range pubs {
				slowest[us] = max(slowest[us], wakes[i])
				partOf[us] = asked[i]
			}
			res.wakes = append(res.wakes, wakes...)
			res.bodyWakes = append(res.bodyWakes, bodyWakes...)
			res.immediate += immediate
			res.parts += parts
			mu.Unlock()
		}()
	}
	wg.Wait()
	cpu1, _ := benchkit.ReadCPU(srv.PID())
	own1, _ := benchkit.ReadCPU(os.Getpid())
	if profiled != nil {
		if err := <-profiled; err != nil {
			fmt.Fprintln(os.Stderr, "  blocking profile:", err)
		}
	}
	res.serverCPU = cpu1.Own - cpu0.Own
	res.clientCPU = own1.Own - own0.Own
	res.load = benchkit.LoadAvg()
	for _, us := range slices.Sorted(maps.Keys(slowest)) {
		d := slowest[us]
		res.slowest = append(res.slowest, d)
		if d > 50*time.Millisecond {
			res.slowParts = append(res.slowParts, fmt.Sprintf("%.1f s: part %d, %.0f ms", time.UnixMicro(us).Sub(stop).Seconds()+float64(o.blockingSeconds), partOf[us], benchkit.Ms(d)))
		}
	}
	slices.Sort(res.slowest)
	slices.Sort(res.wakes)
	slices.Sort(res.bodyWakes)
	bounds1, released1, err := wakeHistogram(srv.URL)
	if err != nil {
		return res, err
	}
	if len(bounds1) != len(bounds0) {
		return res, fmt.Errorf("onair_hls_blocking_wake_seconds changed its buckets")
	}
	res.bounds = bounds1
	for i := range released1 {
		res.released = append(res.released, released1[i]-released0[i])
	}
	return res, nil
}

// wakeHistogram reads the server's onair_hls_blocking_wake_seconds
// buckets (cumulative counts) from its /metrics.
func wakeHistogram(url string) (bounds, counts []float64, err error) {
	text, err := getText(url + "/metrics")
	if err != nil {
		return nil, nil, err
	}
	const prefix = `onair_hls_blocking_wake_seconds_bucket{le="`
	for line := range strings.Lines(text) {
		rest, ok := strings.CutPrefix(line, prefix)
		if !ok {
			continue
		}
		le, n, _ := strings.Cut(rest, `"} `)
		b, err1 := strconv.ParseFloat(le, 64)
		c, err2 := strconv.ParseFloat(strings.TrimSpace(n), 64)
		if err1 != nil || err2 != nil {
			return nil, nil, fmt.Errorf("/metrics: %q", line)
		}
		bounds, counts = append(bounds, b), append(counts, c)
	}
	if len(bounds) == 0 {
		return nil, nil, fmt.Errorf("/metrics: no onair_hls_blocking_wake_seconds")
	}
	return bounds, counts, nil
}

// releasedWithin is the smallest bucket bound holding the fraction q of the
// server's releases ("≤ x ms"), or "> last bound".
func (r blockingResult) releasedWithin(q float64) string {
	if len(r.released) == 0 || r.released[len(r.released)-1] == 0 {
		return "–"
	}
	total := r.released[len(r.released)-1] // the +Inf bucket
	for i, c := range r.released {
		if c >= q*total {
			if math.IsInf(r.bounds[i], 1) {
				return fmt.Sprintf("> %g ms", r.bounds[i-1]*1000)
			}
			return fmt.Sprintf("≤ %g ms", r.bounds[i]*1000)
		}
	}
	return "–"
}

// markdown is the table of the crowd's run.
func (r blockingResult) markdown() string {
	var b strings.Builder
	part := r.partDuration
	if part == "" {
		part = "OnAir's default"
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", benchkit.Ms(d)) }
	fmt.Fprintf(&b, "%d LL-HLS clients on one show (720p, ~2.5 Mb/s, `ffmpeg -re -c copy` over RTMP; parts: %s), each on a connection of its own: a blocking reload for the hinted part, then the newest part, for %d s. Wake = the reload's arrival (its header read; body read in brackets) − the moment the server published the playlist it waited for (`X-Onair-Published`). Server release = publication → the held request let go (`onair_hls_blocking_wake_seconds`, bucket bound).\n\n", r.clients, part, r.seconds)
	fmt.Fprintf(&b, "| clients | held reloads | wake p50 | p90 | p99 | max | server release p50, p99 | reloads answered at once | parts fetched | errors | server CPU, clients' CPU (cores) | load (1/5/15 min) before, after |\n")
	fmt.Fprintf(&b, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	p := func(q float64) string {
		return fmt.Sprintf("%s (%s)", ms(benchkit.Percentile(r.wakes, q)), ms(benchkit.Percentile(r.bodyWakes, q)))
	}
	errs := 0
	for _, n := range r.errors {
		errs += n
	}
	maxWake := time.Duration(0)
	if len(r.wakes) > 0 {
		maxWake = r.wakes[len(r.wakes)-1]
	}
	fmt.Fprintf(&b, "| %d | %d | %s | %s | **%s** | %s | %s, %s | %d | %d | %d | %.2f, %.2f | %s; %s |\n",
		r.clients, len(r.wakes), p(50), p(90), p(99), ms(maxWake), r.releasedWithin(0.5), r.releasedWithin(0.99),
		r.immediate, r.parts, errs,
		r.serverCPU.Seconds()/float64(r.seconds), r.clientCPU.Seconds()/float64(r.seconds), r.loadBefore, r.load)
	if n := len(r.slowest); n > 0 {
		over := n - sort.Search(n, func(i int) bool { return r.slowest[i] > 50*time.Millisecond })
		fmt.Fprintf(&b, "\nEach part's slowest wake (its burst's last answer), over %d parts: p50 %s, p90 %s, p99 %s, max %s; %d parts (%.1f %%) had a wake over 50 ms.\n",
			n, ms(benchkit.Percentile(r.slowest, 50)), ms(benchkit.Percentile(r.slowest, 90)), ms(benchkit.Percentile(r.slowest, 99)),
			ms(r.slowest[n-1]), over, 100*float64(over)/float64(n))
		if over > 0 {
			fmt.Fprintf(&b, "Those parts: %s.\n", strings.Join(r.slowParts, "; "))
		}
	}
	if errs > 0 {
		fmt.Fprintf(&b, "\nErrors: %v\n", r.errors)
	}
	return b.String()
}
