package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/onair/onair/bench/internal/benchkit"
)

// wrkResult is one wrk run.
type wrkResult struct {
	rps      float64
	requests int64
	cpu      time.Duration // the server's CPU time over the run
	p50, p99 string
	errors   string // non-2xx and socket errors, "" when none
	load     string
}

// wrkArgs is the load of one serving measurement.
func wrkArgs(url string, threads, conns int, d time.Duration) []string {
	return []string{"-t" + strconv.Itoa(threads), "-c" + strconv.Itoa(conns), "-d" + strconv.Itoa(int(d.Seconds())) + "s", "--latency", url}
}

// runWrk runs wrk against url and reads the CPU time of the server's
// processes (pids) over the run.
func runWrk(url string, threads, conns int, d time.Duration, pids []int) (wrkResult, error) {
	before, err := benchkit.ReadCPUs(pids)
	if err != nil {
		return wrkResult{}, err
	}
	out, err := exec.Command("wrk", wrkArgs(url, threads, conns, d)...).CombinedOutput()
	if err != nil {
		return wrkResult{}, fmt.Errorf("wrk %s: %w\n%s", url, err, out)
	}
	after, err := benchkit.ReadCPUs(pids)
	if err != nil {
		return wrkResult{}, err
	}
	r := wrkResult{cpu: after.Own - before.Own}
	var errs []string
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && f[0] == "Requests/sec:":
			r.rps, _ = strconv.ParseFloat(f[1], 64)
		case len(f) > 3 && f[1] == "requests" && f[2] == "in":
			r.requests, _ = strconv.ParseInt(f[0], 10, 64)
		case len(f) == 2 && f[0] == "50%":
			r.p50 = f[1]
		case len(f) == 2 && f[0] == "99%":
			r.p99 = f[1]
		case len(f) > 0 && (f[0] == "Non-2xx" || f[0] == "Socket"):
			errs = append(errs, strings.Join(f, " "))
		}
	}
	if r.rps == 0 {
		return r, fmt.Errorf("wrk %s: no Requests/sec in\n%s", url, out)
	}
	r.errors = strings.Join(errs, "; ")
	return r, nil
}

// cpuPerRequest is the server's CPU time per request, in µs.
func (r wrkResult) cpuPerRequest() float64 {
	if r.requests == 0 {
		return 0
	}
	return float64(r.cpu.Microseconds()) / float64(r.requests)
}

// fetch returns the body of url and checks it is a 200.
func fetch(url string) ([]byte, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %d", url, resp.StatusCode)
	}
	return body, nil
}

// mergeWrk averages the throughput of runs of the same request; latencies
// are shown per run ("a, b").
func mergeWrk(runs []wrkResult) wrkResult {
	var m wrkResult
	var p50, p99, errs []string
	for _, r := range runs {
		m.rps += r.rps / float64(len(runs))
		m.requests += r.requests
		m.cpu += r.cpu
		p50, p99 = append(p50, r.p50), append(p99, r.p99)
		if r.errors != "" {
			errs = append(errs, r.errors)
		}
		m.load = r.load
	}
	m.p50, m.p99, m.errors = strings.Join(p50, ", "), strings.Join(p99, ", "), strings.Join(errs, "; ")
	return m
}
