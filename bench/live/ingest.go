package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/onair/onair/bench/internal/benchkit"
)

// encodeArgs make the input once: 720p30 test pattern and a tone, H.264 at
// kbps (2400: ~2.5 Mb/s in all) with a keyframe every 2 s (60 frames),
// AAC 128 kb/s, in FLV.
func encodeArgs(out string, seconds, kbps int) []string {
	return []string{"-hide_banner", "-loglevel", "error", "-nostdin", "-y",
		"-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=30",
		"-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
		"-t", fmt.Sprint(seconds),
		"-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p",
		"-b:v", fmt.Sprintf("%dk", kbps), "-maxrate", fmt.Sprintf("%dk", kbps), "-bufsize", fmt.Sprintf("%dk", 2*kbps),
		"-g", "60", "-keyint_min", "60", "-sc_threshold", "0",
		"-c:a", "aac", "-b:a", "128k", "-ac", "2",
		"-f", "flv", out}
}

// inputName is the cached input's file name (the default's as before).
func inputName(seconds, kbps int) string {
	rate := "2500k"
	if kbps != 2400 {
		rate = fmt.Sprintf("v%dk", kbps)
	}
	return fmt.Sprintf("testsrc2-720p30-%s-g60-%ds.flv", rate, seconds)
}

// ensureInput returns the cached FLV, encoding it first when missing.
func ensureInput(cacheDir string, seconds, kbps int) (string, error) {
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(cacheDir, inputName(seconds, kbps))
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	tmp := path + ".part"
	fmt.Fprintf(os.Stderr, "encoding the %d s input once into %s (about half a minute per minute on 2 cores)\n", seconds, path)
	cmd := exec.Command("ffmpeg", encodeArgs(tmp, seconds, kbps)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("encode input: %w\n%s", err, out)
	}
	return path, os.Rename(tmp, path)
}

// publishArgs copy the input to an RTMP URL at its own pace; to an srt://
// URL as MPEG-TS.
func publishArgs(input, url string, seconds int) []string {
	format := "flv"
	if strings.HasPrefix(url, "srt://") {
		format = "mpegts"
	}
	return []string{"-hide_banner", "-loglevel", "error", "-nostdin", "-re", "-i", input,
		"-t", fmt.Sprint(seconds), "-c", "copy", "-f", format, url}
}

// target is a server under test during an ingest run.
type target struct {
	name     string
	pids     func() []int
	children bool   // count waited-for children (OnAir's thumbnail ffmpeg)
	idle     func() // waits until background work of the run is over
	urls     func(i int) (rtmp, playlist string)
}

// ingestResult is one run of N publishers against one target.
type ingestResult struct {
	publishers int
	wall       time.Duration
	cpu        time.Duration // server process(es), per stream
	children   time.Duration // waited-for children (thumbnails), per stream
	first      []time.Duration
	failures   []string
	load       string
	// mid is the CPU per stream per second of the middle of the stream,
	// from midFrom after the publishers start to midTo before their input
	// ends: the steady state, without connecting, the first keyframes, the
	// end of the stream and the idle second after it.
	mid time.Duration
}

// The mid-stream window of a run of s seconds: [midFrom, s − midTo).
const (
	midFrom = 5 * time.Second
	midTo   = 2 * time.Second
)

func (r ingestResult) firstMedian() time.Duration {
	s := slices.Clone(r.first)
	slices.Sort(s)
	return benchkit.Percentile(s, 50)
}

func (r ingestResult) firstMax() time.Duration {
	if len(r.first) == 0 {
		return 0
	}
	return slices.Max(r.first)
}

// runIngest starts N ffmpeg publishers at once, measures for each the time
// from its start to the first playlist that lists a segment, and the
// server's CPU time over the whole run.
func runIngest(ctx context.Context, t target, input string, n, seconds int) (ingestResult, error) {
	res := ingestResult{publishers: n}
	before, err := benchkit.ReadCPUs(t.pids())
	if err != nil {
		return res, err
	}
	start := time.Now()
	var (
		wg sync.WaitGroup
		mu sync.Mutex
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		res.failures = append(res.failures, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	for i := range n {
		rtmpURL, playlist := t.urls(i)
		wg.Add(2)
		cmd := exec.CommandContext(ctx, "ffmpeg", publishArgs(input, rtmpURL, seconds)...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		began := time.Now()
		if err := cmd.Start(); err != nil {
			return res, err
		}
		go func() {
			defer wg.Done()
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					fail("%s publisher %d: %v %s", t.name, i, err, strings.TrimSpace(stderr.String()))
				}
			case <-time.After(time.Duration(seconds)*time.Second + 30*time.Second):
				cmd.Process.Kill()
				<-done
				fail("%s publisher %d: still running 30 s after its input ended", t.name, i)
			}
		}()
		go func() {
			defer wg.Done()
			if playlist == "" {
				return // a floor of bare gosrt: nothing is packaged
			}
			d, err := awaitSegment(ctx, playlist, began, 30*time.Second)
			if err != nil {
				fail("%s publisher %d: %v", t.name, i, err)
				return
			}
			mu.Lock()
			res.first = append(res.first, d)
			mu.Unlock()
		}()
	}
	midDone := make(chan error, 1)
	go func() { midDone <- measureMid(ctx, t, start, seconds, n, &res.mid) }()
	wg.Wait()
	if err := <-midDone; err != nil {
		return res, err
	}
	res.load = benchkit.LoadAvg()
	t.idle()
	res.wall = time.Since(start)
	after, err := benchkit.ReadCPUs(t.pids())
	if err != nil {
		return res, err
	}
	res.cpu = (after.Own - before.Own) / time.Duration(n)
	if t.children {
		res.children = (after.Children - before.Children) / time.Duration(n)
	}
	return res, nil
}

// measureMid sets *mid to the target's CPU per stream per second over the
// mid-stream window of a run that started at start (nothing when the run is
// too short to have one).
func measureMid(ctx context.Context, t target, start time.Time, seconds, n int, mid *time.Duration) error {
	from, to := start.Add(midFrom), start.Add(time.Duration(seconds)*time.Second-midTo)
	if !to.After(from) {
		return nil
	}
	wait := func(until time.Time) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Until(until)):
			return nil
		}
	}
	if err := wait(from); err != nil {
		return err
	}
	a, err := benchkit.ReadCPUs(t.pids())
	if err != nil {
		return err
	}
	began := time.Now()
	if err := wait(to); err != nil {
		return err
	}
	b, err := benchkit.ReadCPUs(t.pids())
	if err != nil {
		return err
	}
	*mid = time.Duration(float64(b.Own-a.Own) / time.Since(began).Seconds() / float64(n))
	return nil
}

// awaitSegment polls a live playlist every 20 ms until it lists a segment
// and returns the time since began.
func awaitSegment(ctx context.Context, url string, began time.Time, within time.Duration) (time.Duration, error) {
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := began.Add(within)
	for time.Now().Before(deadline) {
		req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
		if resp, err := client.Do(req); err == nil {
			ok := resp.StatusCode == http.StatusOK && listsSegment(resp.Body)
			// Read to the end, a 404 before the playlist exists too, so the
			// next poll reuses the connection as a player would, instead of
			// charging each server a connection every 20 ms.
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if ok {
				return time.Since(began), nil
			}
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return 0, fmt.Errorf("no segment in %s within %s", url, within)
}

func listsSegment(r io.Reader) bool {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line != "" && !strings.HasPrefix(line, "#") && strings.Contains(line, ".ts") {
			return true
		}
	}
	return false
}

// waitNoChildren waits (at most within) until pid has no child processes:
// OnAir's thumbnail ffmpeg jobs of the run are done and counted.
func waitNoChildren(pid int, within time.Duration) {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) && len(benchkit.ChildPIDs(pid)) > 0 {
		time.Sleep(100 * time.Millisecond)
	}
}

// measureIdle returns the CPU time each group of processes uses over d
// while nothing is asked of them.
func measureIdle(ctx context.Context, groups [][]int, d time.Duration) ([]time.Duration, error) {
	before := make([]benchkit.CPU, len(groups))
	for i, pids := range groups {
		c, err := benchkit.ReadCPUs(pids)
		if err != nil {
			return nil, err
		}
		before[i] = c
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(d):
	}
	out := make([]time.Duration, len(groups))
	for i, pids := range groups {
		c, err := benchkit.ReadCPUs(pids)
		if err != nil {
			return nil, err
		}
		out[i] = c.Own - before[i].Own
	}
	return out, nil
}

// ingestSet is every round of one publisher count; a round is OnAir,
// nginx and OnAir's audio-only shows, in that order in the table, and
// with -srt OnAir over SRT and the floors of bare gosrt.
type ingestSet struct {
	publishers int
	runs       [][nTargets]ingestResult
}

// The targets of a round, in the order of ingestSet's runs.
const (
	tOnAir      = iota // RTMP
	tNginx             // nginx-rtmp
	tAudio             // OnAir's audio-only shows over RTMP
	tSRT               // OnAir over SRT
	tFloor             // bare gosrt listener, bytes discarded
	tFloorDemux        // bare gosrt listener and OnAir's MPEG-TS demuxer, units discarded
	nTargets
)

// ingestRound runs n publishers against OnAir's shows, nginx and OnAir's
// audio-only shows, and with -srt OnAir's shows over SRT. Every other round nginx goes first, so neither server
// always has the first run after a pause.
func ingestRound(ctx context.Context, o options, srv *benchkit.Server, ngx *nginx, floors [2]*srtFloor, n, round int, list, audio, overSRT []benchkit.Show, input string) ([nTargets]ingestResult, error) {
	var runs [nTargets]ingestResult
	onair := target{
		name:     "OnAir",
		pids:     func() []int { return []int{srv.PID()} },
		children: true,
		idle:     func() { time.Sleep(time.Second); waitNoChildren(srv.PID(), 30*time.Second) },
		urls: func(i int) (string, string) {
			return "rtmp://" + srv.RTMPAddr + "/live/" + list[i].StreamKey,
				fmt.Sprintf("%s/media/shows/%d/index.m3u8", srv.URL, list[i].ID)
		},
	}
	nginxT := target{
		name: "nginx",
		pids: ngx.pids,
		idle: func() { time.Sleep(time.Second) },
		urls: func(i int) (string, string) {
			key := fmt.Sprintf("bench-%d-%d-%d", n, round, i)
			return "rtmp://" + ngx.rtmpAddr + "/live/" + key, "http://" + ngx.httpAddr + "/hls/" + key + ".m3u8"
		},
	}
	onairAudio := target{
		name:     "OnAir audio-only",
		pids:     onair.pids,
		children: true,
		idle:     onair.idle,
		urls: func(i int) (string, string) {
			return "rtmp://" + srv.RTMPAddr + "/live/" + audio[i].StreamKey,
				fmt.Sprintf("%s/media/shows/%d/audio.m3u8", srv.URL, audio[i].ID)
		},
	}
	onairSRT := target{
		name:     "OnAir SRT",
		pids:     onair.pids,
		children: true,
		idle:     onair.idle,
		urls: func(i int) (string, string) {
			return "srt://" + srv.Env["ONAIR_SRT_ADDR"] + "?streamid=" + overSRT[i].StreamKey,
				fmt.Sprintf("%s/media/shows/%d/index.m3u8", srv.URL, overSRT[i].ID)
		},
	}
	targets := []target{onair, nginxT, onairAudio, onairSRT, {}, {}}
	for i, f := range floors {
		if f == nil {
			continue
		}
		name := []string{"bare gosrt", "bare gosrt + demuxer"}[i]
		targets[tFloor+i] = target{name: name, pids: f.pids, idle: func() { time.Sleep(time.Second) },
			urls: func(p int) (string, string) {
				return fmt.Sprintf("srt://%s?streamid=floor-%d-%d-%d", f.addr, n, round, p), ""
			}}
	}
	order := []int{tOnAir, tNginx, tAudio}
	if !o.audio {
		order = order[:2]
	}
	if o.srtOnly {
		order = []int{tOnAir}
	}
	if o.srt {
		order = append(order, tSRT)
		if o.srtFloors {
			order = append(order, tFloor, tFloorDemux)
		}
	}
	switch {
	case o.serveOnly:
		order = order[:1] // only to have live media to serve
	case round%2 == 1 && o.srt:
		// The other way round: RTMP and SRT each have the other's place.
		slices.Reverse(order)
	case round%2 == 1:
		order[0], order[1] = 1, 0
	}
	for _, j := range order {
		t := targets[j]
		fmt.Fprintf(os.Stderr, "%s: %d publisher(s) for %d s (round %d of %d)...\n", t.name, n, o.seconds, round+1, o.rounds)
		var profiled, allocs chan error
		if o.profile != "" && (j == tOnAir || j == tSRT) && !o.serveOnly {
			name := fmt.Sprintf("ingest-%d", n)
			if j == tSRT {
				name = fmt.Sprintf("ingest-srt-%d", n)
			}
			if round > 0 {
				name += fmt.Sprintf("-round%d", round+1)
			}
			profiled = profile(srv, o.seconds, filepath.Join(o.profile, name+".cpu.pprof"))
			allocs = profileAllocs(srv, o.seconds, filepath.Join(o.profile, name+".cpu.pprof"))
		}
		res, err := runIngest(ctx, t, input, n, o.seconds)
		for _, p := range []chan error{profiled, allocs} {
			if p == nil {
				continue
			}
			if err := <-p; err != nil {
				return runs, err
			}
		}
		if err != nil {
			return runs, fmt.Errorf("%s, %d publishers: %w", t.name, n, err)
		}
		for _, f := range res.failures {
			fmt.Fprintln(os.Stderr, "  FAILED:", f)
		}
		fmt.Fprintf(os.Stderr, "  CPU %.3f s/stream (children %.2f), mid-stream %.2f ms/s a stream, first segment median %s max %s, load %s\n",
			res.cpu.Seconds(), res.children.Seconds(), float64(res.mid)/1e6, res.firstMedian().Round(time.Millisecond), res.firstMax().Round(time.Millisecond), res.load)
		runs[j] = res
	}
	return runs, nil
}
