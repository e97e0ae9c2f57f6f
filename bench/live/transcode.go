package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/onair/onair/bench/internal/benchkit"
)

// -transcode: what a ladder (ONAIR_TRANSCODE) costs. Two OnAirs run side
// by side, one without a ladder and one with -transcode-rungs; the same
// 720p input is published at once (so that on a busy machine the three
// share its load alike), for the same seconds, to
//
//   - the plain OnAir: its process's CPU (the source alone, packaged);
//   - the OnAir with the ladder: its process's CPU and that of its
//     transcoding ffmpeg child (whose command line is read from /proc);
//   - that same ffmpeg command line run alone, fed the same input as FLV
//     on its standard input (an `ffmpeg -re -c copy` feeding it, not
//     counted, like the publishers of the OnAirs), its outputs read and
//     dropped by this program.
//
// The ladder's cost is the laddered OnAir with its child minus the plain
// OnAir; the figure is that cost ÷ the ffmpeg run alone (goal ≤ 1.05×).
// Each runs on -seconds of input and is counted whole, from its start to
// the show's stop (on a busy machine a starved process takes longer, not
// less CPU), in -rounds rounds; the median of the rounds is the figure. Then the glass
// to glass latency (as -latency-only measures it, the test card at 720p)
// of the source's rendition and of the lowest rung, played at once from
// the same publication, each through the master playlist with hls.js
// locked to that level.

// transcodeRun is one measured publication: CPU seconds per second of
// input of each process counted.
type transcodeRun struct {
	server, child float64 // CPU s per s
	wall          time.Duration
}

type transcodeRound struct {
	plain, ladder, alone transcodeRun
	load                 string
}

// ladderCost is the laddered OnAir and its child minus the plain OnAir.
func (r transcodeRound) ladderCost() float64 {
	return r.ladder.server + r.ladder.child - r.plain.server
}

func runTranscode(ctx context.Context, o options, root, bin, input, tmp string) error {
	env := map[string]string{
		"ONAIR_RECONNECT_WINDOW": "1h",
		"ONAIR_RATE_LIMIT":       "100000",
	}
	var servers [2]*benchkit.Server
	var tokens [2]string
	for i, name := range []string{"plain", "ladder"} {
		dir := filepath.Join(tmp, "onair-"+name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		e := map[string]string{}
		for k, v := range env {
			e[k] = v
		}
		if name == "ladder" {
			e["ONAIR_TRANSCODE"] = o.transcodeRungs
			if o.profile != "" {
				if err := os.MkdirAll(o.profile, 0o755); err != nil {
					return err
				}
				addr, err := benchkit.FreeAddr()
				if err != nil {
					return err
				}
				e["ONAIR_BENCH_PPROF_ADDR"] = addr
			}
		}
		srv, err := benchkit.NewServer(bin, dir, e)
		if err != nil {
			return err
		}
		if _, tokens[i], err = srv.CreateUser("Bench DJ", "dj@bench.invalid"); err != nil {
			return err
		}
		if err := srv.Start(); err != nil {
			return err
		}
		defer srv.Stop()
		servers[i] = srv
	}
	plain, ladder := servers[0], servers[1]
	loadBefore := benchkit.LoadAvg()

	// A short publication first, not measured, to read the ladder's
	// command line from /proc.
	var argv []string
	if o.rounds > 0 {
		fmt.Fprintln(os.Stderr, "reading the ladder's command line (8 s, not measured)...")
		if _, err := publishMeasured(ctx, ladder, tokens[1], input, 8, true); err != nil {
			return fmt.Errorf("ladder's command line: %w", err)
		}
		argv = lastLadderArgv
	}
	var rounds []transcodeRound
	for round := range o.rounds {
		// The three at once, on the same input at the same pace: on a
		// busy machine they share its load alike.
		fmt.Fprintf(os.Stderr, "round %d: plain OnAir, laddered OnAir and ffmpeg alone at once, %d s of input...\n", round+1, o.seconds)
		var rd transcodeRound
		var errs [3]error
		var wg sync.WaitGroup
		wg.Add(3)
		var profiled chan error
		if o.profile != "" && round == 0 {
			// The laddered OnAir's CPU profile over most of the round.
			profiled = profile(ladder, o.seconds-4, filepath.Join(o.profile, "transcode.cpu.pprof"))
		}
		go func() {
			defer wg.Done()
			rd.plain, errs[0] = publishMeasured(ctx, plain, tokens[0], input, o.seconds, false)
		}()
		go func() {
			defer wg.Done()
			rd.ladder, errs[1] = publishMeasured(ctx, ladder, tokens[1], input, o.seconds, true)
		}()
		go func() {
			defer wg.Done()
			rd.alone, errs[2] = ffmpegAlone(ctx, argv, input, o.seconds)
		}()
		wg.Wait()
		if profiled != nil {
			if err := <-profiled; err != nil {
				return fmt.Errorf("profile: %w", err)
			}
		}
		if err := errors.Join(errs[:]...); err != nil {
			return fmt.Errorf("round %d: %w", round+1, err)
		}
		rd.load = benchkit.LoadAvg()
		fmt.Fprintf(os.Stderr, "  plain OnAir %.3f, ladder OnAir %.3f + ffmpeg %.3f, ffmpeg alone %.3f CPU s/s: ladder cost ÷ alone %.3f×\n",
			rd.plain.server, rd.ladder.server, rd.ladder.child, rd.alone.child, rd.ladderCost()/rd.alone.child)
		rounds = append(rounds, rd)
	}

	// Glass to glass: the source's rendition and the lowest rung of one
	// publication to the laddered OnAir, each in its own Chromium.
	var lat []latencyResult
	if o.latency > 0 {
		sh, err := ladder.CreateShow(ctx, tokens[1], "Bench ladder latency")
		if err != nil {
			return err
		}
		master := fmt.Sprintf("%s/media/shows/%d/master.m3u8", ladder.URL, sh.ID)
		_, h, _ := strings.Cut(o.transcodeCard, ":")
		cardHeight, _ := strconv.Atoi(h)
		lowest := lowestRung(o.transcodeRungs)
		hasRung := func(text string) bool { return strings.Contains(text, fmt.Sprintf("x%d,", lowest)) }
		rtmp := "rtmp://" + ladder.RTMPAddr + "/live/" + sh.StreamKey
		targets := []latencyTarget{
			{name: fmt.Sprintf("OnAir, the source's rendition (%dp, copied)", cardHeight), rtmp: rtmp, playlist: master, ready: hasRung, level: "highest"},
			{name: fmt.Sprintf("OnAir, the lowest rung (%dp)", lowest), playlist: master, ready: hasRung, level: "lowest"},
		}
		warmup := min(10, o.latency/4)
		// The transcoder's health, read every second while the players
		// play: its slowest speed says whether it kept up.
		watch, stopWatch := context.WithCancel(ctx)
		healthDone := make(chan struct{})
		go func() {
			defer close(healthDone)
			for watch.Err() == nil {
				var out struct {
					Health struct {
						Transcode *struct {
							Speed    float64 `json:"speed"`
							Dropped  []int   `json:"dropped"`
							Restarts int     `json:"restarts"`
						} `json:"transcode"`
					} `json:"health"`
				}
				if ladder.API(watch, "GET", fmt.Sprintf("/v1/shows/%d/health", sh.ID), tokens[1], nil, &out) == nil && out.Health.Transcode != nil {
					tc := out.Health.Transcode
					if tc.Speed > 0 && (latHealth.minSpeed == 0 || tc.Speed < latHealth.minSpeed) {
						latHealth.minSpeed = tc.Speed
					}
					latHealth.dropped, latHealth.restarts = tc.Dropped, tc.Restarts
				}
				select {
				case <-watch.Done():
				case <-time.After(time.Second):
				}
			}
		}()
		card := o.transcodeCard
		if card == "640:360" {
			card = "" // the card's own size
		}
		lat, err = runLatencySized(ctx, root, targets, o.latency, warmup, card)
		stopWatch()
		<-healthDone
		if err != nil {
			return fmt.Errorf("latency: %w", err)
		}
	}

	text := transcodeMarkdown(o, rounds, lat, loadBefore, benchkit.LoadAvg(), argv)
	fmt.Println(text)
	if o.docs != "" {
		path := o.docs
		if !filepath.IsAbs(path) {
			path = filepath.Join(root, path)
		}
		name := "bench/live -transcode"
		if o.rounds == 0 {
			name += " -rounds 0"
		}
		if err := benchkit.WriteSection(path, "Live media (RTMP ingest and HLS)", name, text); err != nil {
			return err
		}
		fmt.Fprintln(os.Stderr, "wrote the ladder figures into", path)
	}
	return nil
}

// latHealth is what the transcoder's health said during the latency
// measurement.
var latHealth struct {
	minSpeed float64
	dropped  []int
	restarts int
}

// lastLadderArgv is the command line of the laddered OnAir's ffmpeg, as
// the last ladder run read it from /proc.
var lastLadderArgv []string

// publishMeasured publishes seconds of the input to a new show of srv,
// stops the show when the publisher is done, and returns the CPU the
// server (and, with child, its transcoding ffmpeg) spent on the whole of
// it, per second of input. The work is the same whatever the machine's
// load: a process the scheduler starves takes longer, not less CPU.
func publishMeasured(ctx context.Context, srv *benchkit.Server, token, input string, seconds int, child bool) (transcodeRun, error) {
	var run transcodeRun
	sh, err := srv.CreateShow(ctx, token, fmt.Sprintf("Bench ladder %d", time.Now().UnixNano()))
	if err != nil {
		return run, err
	}
	before, err := benchkit.ReadCPU(srv.PID())
	if err != nil {
		return run, err
	}
	start := time.Now()
	pub := exec.CommandContext(ctx, "ffmpeg", publishArgs(input, "rtmp://"+srv.RTMPAddr+"/live/"+sh.StreamKey, seconds)...)
	var stderr strings.Builder
	pub.Stderr = &stderr
	if err := pub.Start(); err != nil {
		return run, err
	}
	published := make(chan error, 1)
	go func() { published <- pub.Wait() }()
	defer pub.Process.Kill()
	var childCPU chan time.Duration
	if child {
		pid, err := awaitLadderChild(srv.PID(), 30*time.Second)
		if err != nil {
			return run, err
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			return run, err
		}
		lastLadderArgv = strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		childCPU = make(chan time.Duration, 1)
		go func() {
			// The child's CPU until it ends (OnAir waits for it,
			// so its /proc entry goes with its last figures): read
			// every 10 ms, the last reading is at most that short.
			var last time.Duration
			for {
				c, err := benchkit.ReadCPU(pid)
				if err != nil {
					childCPU <- last
					return
				}
				last = c.Own
				time.Sleep(10 * time.Millisecond)
			}
		}()
	}
	select {
	case err := <-published:
		if err != nil {
			return run, fmt.Errorf("publisher: %w: %s", err, stderr.String())
		}
	case <-ctx.Done():
		return run, ctx.Err()
	}
	if err := srv.API(ctx, "POST", fmt.Sprintf("/v1/shows/%d/stop", sh.ID), token, nil, nil); err != nil {
		return run, fmt.Errorf("stop the show: %w", err)
	}
	if child {
		select {
		case c := <-childCPU:
			run.child = c.Seconds() / float64(seconds)
		case <-time.After(30 * time.Second):
			return run, fmt.Errorf("the transcoding ffmpeg still runs 30 s after the show stopped")
		}
	}
	waitNoChildren(srv.PID(), 30*time.Second) // thumbnails
	after, err := benchkit.ReadCPU(srv.PID())
	if err != nil {
		return run, err
	}
	run.wall = time.Since(start)
	run.server = (after.Own - before.Own).Seconds() / float64(seconds)
	return run, nil
}

// awaitLadderChild finds OnAir's transcoding ffmpeg among its children.
func awaitLadderChild(pid int, within time.Duration) (int, error) {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		for _, c := range benchkit.ChildPIDs(pid) {
			if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", c)); err == nil && strings.Contains(string(b), "-filter_complex") {
				return c, nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return 0, fmt.Errorf("no transcoding ffmpeg under OnAir's pid %d within %s (is ONAIR_TRANSCODE below the input's 720p?)", pid, within)
}

// ffmpegAlone runs the ladder's command line by itself on seconds of the
// input, fed on its standard input by `ffmpeg -re -c copy -f flv` (not
// counted), each of its pipe:N outputs read and dropped here, and
// returns its CPU (rusage) per second of input.
func ffmpegAlone(ctx context.Context, argv []string, input string, seconds int) (transcodeRun, error) {
	var run transcodeRun
	if len(argv) < 2 {
		return run, fmt.Errorf("no ladder command line read")
	}
	fds := 0
	for _, a := range argv {
		if n, ok := strings.CutPrefix(a, "pipe:"); ok {
			if k, err := strconv.Atoi(n); err == nil && k >= 3 {
				fds = max(fds, k-2)
			}
		}
	}
	feed := exec.CommandContext(ctx, "ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-re", "-i", input,
		"-t", fmt.Sprint(seconds), "-c", "copy", "-f", "flv", "pipe:1")
	lad := exec.CommandContext(ctx, argv[0], argv[1:]...)
	pipe, err := feed.StdoutPipe()
	if err != nil {
		return run, err
	}
	lad.Stdin = pipe
	var stderr strings.Builder
	lad.Stderr = &stderr
	var reads []*os.File
	for range fds {
		r, w, err := os.Pipe()
		if err != nil {
			return run, err
		}
		lad.ExtraFiles = append(lad.ExtraFiles, w)
		reads = append(reads, r)
	}
	if err := feed.Start(); err != nil {
		return run, err
	}
	defer func() { feed.Process.Kill(); feed.Wait() }()
	start := time.Now()
	if err := lad.Start(); err != nil {
		return run, err
	}
	for _, w := range lad.ExtraFiles {
		w.Close()
	}
	for _, r := range reads {
		go func() { io.Copy(io.Discard, r); r.Close() }()
	}
	if err := lad.Wait(); err != nil {
		return run, fmt.Errorf("ffmpeg alone: %w: %s", err, stderr.String())
	}
	run.wall = time.Since(start)
	st := lad.ProcessState
	run.child = (st.UserTime() + st.SystemTime()).Seconds() / float64(seconds)
	return run, nil
}

// lowestRung is the lowest height of ONAIR_TRANSCODE's text.
func lowestRung(rungs string) int {
	low := 0
	for _, r := range strings.Split(rungs, ",") {
		h, _, _ := strings.Cut(strings.TrimSpace(r), ":")
		if n, err := strconv.Atoi(strings.TrimSuffix(h, "p")); err == nil && (low == 0 || n < low) {
			low = n
		}
	}
	return low
}

func medianOf(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

func transcodeMarkdown(o options, rounds []transcodeRound, lat []latencyResult, loadBefore, loadAfter string, argv []string) string {
	var b strings.Builder
	if len(rounds) > 0 {
		fmt.Fprintf(&b, "Ladder `ONAIR_TRANSCODE=%s` on the 720p30 input (~2.5 Mb/s): %d s of it published in real time to each of the three at once, %d round(s); each process's whole CPU (user + system) for it, from its start to the show's stop, in seconds per second of input (1.00 = a core).\n\n", o.transcodeRungs, o.seconds, len(rounds))
		b.WriteString("| round | plain OnAir | laddered OnAir | its ffmpeg | ffmpeg alone | ladder cost (laddered OnAir + ffmpeg − plain OnAir) | **ladder cost ÷ ffmpeg alone** | its ffmpeg ÷ ffmpeg alone | load (1/5/15 min) |\n")
		b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
		var costs, childs []float64
		for i, r := range rounds {
			c := r.ladderCost() / r.alone.child
			costs = append(costs, c)
			childs = append(childs, r.ladder.child/r.alone.child)
			fmt.Fprintf(&b, "| %d | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f× | %.3f× | %s |\n", i+1, r.plain.server, r.ladder.server, r.ladder.child, r.alone.child, r.ladderCost(), c, r.ladder.child/r.alone.child, r.load)
		}
		fmt.Fprintf(&b, "| median | | | | | | **%.3f×** | %.3f× | before %s, after %s |\n\n", medianOf(costs), medianOf(childs), loadBefore, loadAfter)
	}
	if len(lat) == 2 {
		fmt.Fprintf(&b, "Glass to glass, the test card at %s, `ONAIR_TRANSCODE=%s`, both players through the master playlist, hls.js locked to the source's level and to the lowest:\n\n", o.transcodeCard, o.transcodeRungs)
		b.WriteString(latencyMarkdown(lat, o.latency, min(10, o.latency/4)))
		fmt.Fprintf(&b, "\nLowest rung − source, glass to glass (median): %+.2f s. Frame numbers read lower than the frame before (misread codes or the player going back): source %d, lowest rung %d. The transcoder's slowest speed in health meanwhile: %.2f (dropped rungs %v, restarts %d).\n",
			lat[1].p50-lat[0].p50, lat[0].backwards, lat[1].backwards, latHealth.minSpeed, latHealth.dropped, latHealth.restarts)
		fmt.Fprintf(&b, "hls.js's errors: source %v, lowest rung %v.\n", lat[0].errors, lat[1].errors)
	}
	if len(argv) > 0 {
		fmt.Fprintf(&b, "\nThe ladder's command line, as OnAir ran it and as it was run alone:\n\n    %s\n", strings.Join(argv, " "))
	}
	return b.String()
}
