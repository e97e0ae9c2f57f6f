package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/onair/onair/bench/internal/benchkit"
)

// Blocking reloads under a crowd (-blocking-clients N): one publisher
// streams the input to a show in real time; N LL-HLS clients, each on a
// keep-alive connection of its own, follow its live playlist as hls.js in
// lowLatencyMode does: a blocking reload for the part the playlist hints
// (?_HLS_msn=M&_HLS_part=P), then that part, then the next reload. A
// reload the server held answers with X-Onair-Published, the moment the
// playlist it waited for was published (the server's own clock, the
// machine's); the wake is the response's arrival (its whole body read)
// minus that moment. Reloads answered at once (the client came late, its
// part was out already) carry no header and are counted apart.

// hintRe reads the part a playlist hints: seg-000047-p1.ts.
var hintRe = regexp.MustCompile(`#EXT-X-PRELOAD-HINT:TYPE=PART,URI="([^"]*?)-(\d+)-p(\d+)\.ts"`)

// lastPartRe reads the URIs of the playlist's parts (the last is the newest).
var lastPartRe = regexp.MustCompile(`#EXT-X-PART:[^\n]*URI="([^"]+)"`)

type blockingResult struct {
	clients          int
	seconds          int
	wakes            []time.Duration // held reloads: arrival − publication
	immediate        int             // reloads answered without waiting
	parts            int             // parts fetched
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
		if text, err := getText(playlist); err == nil && hintRe.MatchString(text) {
			break
		}
		if time.Now().After(deadline) {
			return res, fmt.Errorf("blocking: no LL-HLS playlist at %s within 30 s", playlist)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Duration(warm) * time.Second)

	tr := &http.Transport{MaxIdleConns: 2 * o.blockingClients, MaxIdleConnsPerHost: 2 * o.blockingClients, IdleConnTimeout: time.Minute}
	defer tr.CloseIdleConnections()
	base := playlist[:strings.LastIndexByte(playlist, '/')+1]
	var mu sync.Mutex
	fail := func(what string) {
		mu.Lock()
		res.errors[what]++
		mu.Unlock()
	}
	res.loadBefore = benchkit.LoadAvg()
	cpu0, _ := benchkit.ReadCPU(srv.PID())
	stop := time.Now().Add(time.Duration(o.blockingSeconds) * time.Second)
	var wg sync.WaitGroup
	for i := range o.blockingClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Spread the arrivals over a second, as a crowd's would be.
			time.Sleep(time.Duration(i) * time.Second / time.Duration(o.blockingClients))
			client := &http.Client{Transport: tr, Timeout: 15 * time.Second}
			text, _, _, err := get(client, playlist)
			if err != nil {
				fail("first playlist: " + err.Error())
				return
			}
			var wakes []time.Duration
			immediate, parts := 0, 0
			for time.Now().Before(stop) {
				m := hintRe.FindStringSubmatch(text)
				if m == nil {
					fail("no preload hint")
					return
				}
				msn, _ := strconv.ParseUint(m[2], 10, 64)
				part, _ := strconv.Atoi(m[3])
				body, published, arrived, err := get(client, fmt.Sprintf("%s?_HLS_msn=%d&_HLS_part=%d", playlist, msn, part))
				if err != nil {
					fail(err.Error())
					time.Sleep(100 * time.Millisecond)
					continue
				}
				text = body
				if published.IsZero() {
					immediate++
				} else {
					wakes = append(wakes, arrived.Sub(published))
				}
				// The newest part, as a player loads it next.
				if all := lastPartRe.FindAllStringSubmatch(text, -1); len(all) > 0 {
					if _, _, _, err := get(client, base+all[len(all)-1][1]); err != nil {
						fail("part: " + err.Error())
					} else {
						parts++
					}
				}
			}
			mu.Lock()
			res.wakes = append(res.wakes, wakes...)
			res.immediate += immediate
			res.parts += parts
			mu.Unlock()
		}()
	}
	wg.Wait()
	cpu1, _ := benchkit.ReadCPU(srv.PID())
	res.serverCPU = cpu1.Own - cpu0.Own
	res.load = benchkit.LoadAvg()
	slices.Sort(res.wakes)
	return res, nil
}

// get reads a URL whole; published is the X-Onair-Published of the
// answer (zero without), arrived when its body was read.
func get(client *http.Client, url string) (body string, published, arrived time.Time, err error) {
	resp, err := client.Get(url)
	if err != nil {
		return "", published, arrived, err
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, err = io.Copy(&b, bufio.NewReader(resp.Body))
	arrived = time.Now()
	if err != nil {
		return "", published, arrived, err
	}
	if resp.StatusCode != http.StatusOK {
		return "", published, arrived, fmt.Errorf("%s", resp.Status)
	}
	if v := resp.Header.Get("X-Onair-Published"); v != "" {
		us, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return "", published, arrived, fmt.Errorf("X-Onair-Published: %q", v)
		}
		published = time.UnixMicro(us)
	}
	return b.String(), published, arrived, nil
}

// markdown is the table of the crowd's run.
func (r blockingResult) markdown() string {
	var b strings.Builder
	part := r.partDuration
	if part == "" {
		part = "OnAir's default"
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", benchkit.Ms(d)) }
	fmt.Fprintf(&b, "%d LL-HLS clients on one show (720p, ~2.5 Mb/s, `ffmpeg -re -c copy` over RTMP; parts: %s), each on a connection of its own: a blocking reload for the hinted part, then the newest part, for %d s. Wake = the reload's arrival (body read) − the moment the server published the playlist it waited for (`X-Onair-Published`).\n\n", r.clients, part, r.seconds)
	fmt.Fprintf(&b, "| clients | held reloads | wake p50 | p90 | p99 | max | reloads answered at once | parts fetched | errors | server CPU (cores) | load (1/5/15 min) before, after |\n")
	fmt.Fprintf(&b, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	p := func(q float64) string { return ms(benchkit.Percentile(r.wakes, q)) }
	errs := 0
	for _, n := range r.errors {
		errs += n
	}
	maxWake := time.Duration(0)
	if len(r.wakes) > 0 {
		maxWake = r.wakes[len(r.wakes)-1]
	}
	fmt.Fprintf(&b, "| %d | %d | %s | %s | **%s** | %s | %d | %d | %d | %.2f | %s; %s |\n",
		r.clients, len(r.wakes), p(50), p(90), p(99), ms(maxWake), r.immediate, r.parts, errs,
		r.serverCPU.Seconds()/float64(r.seconds), r.loadBefore, r.load)
	if errs > 0 {
		fmt.Fprintf(&b, "\nErrors: %v\n", r.errors)
	}
	return b.String()
}
