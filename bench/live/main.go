// Command live is the benchmark of live media: RTMP ingest with HLS
// packaging, and HLS serving, of OnAir beside nginx with libnginx-mod-rtmp
// measured in the same run on the same input and segment length.
//
// It encodes once a 60 s 720p H.264+AAC FLV (~2.5 Mb/s, a keyframe every
// 2 s) into a cache directory, builds the onair binary and runs it as its
// own process (SQLite in a temporary data directory) next to an nginx with
// a temporary prefix, both on 127.0.0.1. For each count of publishers it
// copies the FLV with `ffmpeg -re -c copy` to each server in turn and
// reports the server's CPU seconds per stream (/proc/PID/stat) and the time
// from a publisher's start to the first live playlist that lists a segment;
// then the same input to OnAir's audio-only shows (audio_only: the video
// dropped, the audio rendition alone), against OnAir's own A/V figure.
// With -srt, the same input as MPEG-TS over SRT to OnAir, to a bare gosrt
// listener that discards what it reads and to one that also demuxes it
// (bench/internal/srtfloor, each a process of its own): SRT's CPU beside
// RTMP's and beside the library's own floor.
// Then wrk measures requests per second for a live playlist and a ~600 KB
// segment from OnAir's /media route and the same bytes as static files of
// nginx.
//
//	go run ./bench/live                      # 1 and 4 publishers, 30 s each
//	go run ./bench/live -publishers 1,2,8 -seconds 20 -docs ''
//	go run ./bench/live -serve-only          # only the HLS serving rows
//	go run ./bench/live -transcode -rounds 3 # what a ladder costs (transcode.go)
//	go run ./bench/live -ingest-only -srt -rounds 3
//	go run ./bench/live -srt-only            # RTMP, SRT and the gosrt floors only
//	go run ./bench/live -many 300            # 300 publishers at once (many.go)
//	go run ./bench/live -blocking-clients 500 # LL-HLS blocking reloads under a crowd (blocking.go)
//
// Needs ffmpeg, nginx, libnginx-mod-rtmp and wrk. It is a program, not a
// timed test: the figures go to bench/results/DATE-live.md (docs/benchmarks.md
// has the current ones).
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/onair/onair/bench/internal/benchkit"
)

type options struct {
	publishers      []int
	rounds          int
	audio           bool
	seconds         int
	inputSeconds    int
	inputKbps       int
	cacheDir        string
	nginxModule     string
	nginxWorkers    int
	wrkDuration     time.Duration
	wrkConns        int
	wrkThreads      int
	segmentSize     int
	docs            string
	keep            bool
	profile         string
	latency         int
	latencyOnly     bool
	serveOnly       bool
	ingestOnly      bool
	srt             bool
	partDuration    string
	transcode       bool
	transcodeRungs  string
	transcodeCard   string
	srtOnly         bool
	srtFloors       bool
	many            int
	manyDBs         []string
	manySize        string
	manyKbps        int
	manyLimit       time.Duration
	manyWindow      time.Duration
	manyEvery       time.Duration
	manyLag         time.Duration
	blockingClients int
	blockingSeconds int
	serverTree      string
}

func main() {
	var o options
	cache, _ := os.UserCacheDir()
	pubs := flag.String("publishers", benchkit.EnvOr("ONAIR_BENCH_PUBLISHERS", "1,4"), "comma-separated counts of simultaneous publishers, one run each ($ONAIR_BENCH_PUBLISHERS)")
	flag.IntVar(&o.rounds, "rounds", envInt("ONAIR_BENCH_ROUNDS", 1), "ingest runs per publisher count, each with its own OnAir, nginx and audio-only run, nginx first in every other round; the table gives the median and each round ($ONAIR_BENCH_ROUNDS)")
	flag.BoolVar(&o.audio, "audio", true, "with the ingest runs: also OnAir's audio-only shows in each round (false: OnAir and nginx only, a third less time a round)")
	flag.IntVar(&o.seconds, "seconds", envInt("ONAIR_BENCH_SECONDS", 30), "seconds each publisher streams ($ONAIR_BENCH_SECONDS)")
	flag.IntVar(&o.inputSeconds, "input-seconds", 60, "length of the pre-encoded input")
	flag.IntVar(&o.inputKbps, "input-kbps", 2400, "H.264 rate of the pre-encoded 720p30 input in kb/s (6000: what OBS suggests for 1080p)")
	flag.StringVar(&o.cacheDir, "cache", benchkit.EnvOr("ONAIR_BENCH_CACHE", filepath.Join(cache, "onair-bench")), "where the pre-encoded input is kept ($ONAIR_BENCH_CACHE)")
	flag.StringVar(&o.nginxModule, "nginx-module", "/usr/lib/nginx/modules/ngx_rtmp_module.so", "the RTMP module of nginx (Debian libnginx-mod-rtmp)")
	flag.IntVar(&o.nginxWorkers, "nginx-workers", runtime.NumCPU(), "nginx worker processes (OnAir uses every core too)")
	flag.DurationVar(&o.wrkDuration, "wrk-duration", 10*time.Second, "wrk run per HLS request kind and server")
	flag.IntVar(&o.wrkConns, "wrk-connections", 64, "wrk connections")
	flag.IntVar(&o.wrkThreads, "wrk-threads", 2, "wrk threads")
	flag.IntVar(&o.segmentSize, "segment-size", 600<<10, "serve the recorded segment whose size is closest to this (bytes)")
	flag.StringVar(&o.docs, "docs", "bench/results/"+time.Now().UTC().Format("2006-01-02")+"-live.md", "markdown file whose \"Live media\" section gets the figures, made if missing (empty: only print)")
	flag.BoolVar(&o.keep, "keep", false, "keep the temporary directory (server logs, nginx prefix, media)")
	flag.StringVar(&o.profile, "profile", "", "directory for OnAir's CPU profiles of each ingest run, of its first wrk run of each request and of a -blocking-clients crowd (runs the onair build with pprof)")
	flag.IntVar(&o.latency, "latency-seconds", 40, "seconds of glass-to-glass latency measurement per server with hls.js in headless Chromium (0: skip)")
	flag.BoolVar(&o.latencyOnly, "latency-only", false, "measure only the glass-to-glass latency (no ingest CPU, no wrk)")
	flag.BoolVar(&o.serveOnly, "serve-only", false, "measure only HLS serving: one publisher streams -seconds to OnAir (not measured), then wrk; the docs get the serving table in its own block")
	flag.BoolVar(&o.srt, "srt", os.Getenv("ONAIR_BENCH_SRT") == "1", "also publish the same input over SRT (MPEG-TS, -c copy) to OnAir's SRT listener, beside RTMP and nginx-rtmp ($ONAIR_BENCH_SRT=1)")
	flag.BoolVar(&o.srtOnly, "srt-only", false, "with -ingest-only: only OnAir over RTMP, over SRT and the bare gosrt floors (no nginx, no audio-only shows); implies -srt")
	flag.BoolVar(&o.srtFloors, "srt-floors", true, "with -srt: also measure the bare gosrt floors (false: OnAir's RTMP and SRT only, half the time of -srt-only)")
	flag.BoolVar(&o.ingestOnly, "ingest-only", false, "measure only the ingest CPU (no latency, no wrk); the figures go to their own generated block of the docs section")
	flag.BoolVar(&o.transcode, "transcode", false, "measure only what a ladder costs: the CPU of an OnAir with ONAIR_TRANSCODE=-transcode-rungs and its ffmpeg, less a plain OnAir's, against the same ffmpeg command run alone on the same input; then glass to glass on the lowest rung against the source's")
	flag.StringVar(&o.transcodeRungs, "transcode-rungs", "360p,240p", "the ladder of -transcode (ONAIR_TRANSCODE)")
	flag.StringVar(&o.transcodeCard, "transcode-card", "640:360", "the size of -transcode's latency test card, W:H (its lowest rung is the lowest of -transcode-rungs below it)")
	flag.StringVar(&o.partDuration, "part-duration", "", "OnAir's ONAIR_HLS_PART_DURATION for the run (default: OnAir's own; 0 turns LL-HLS parts off)")
	flag.IntVar(&o.many, "many", 0, "measure only N publishers connecting at the same moment (issue #35, goal 4; many.go): when all are live, how far each playlist is behind real time, OnAir's CPU and RSS; once per database of -many-db")
	manyDBs := flag.String("many-db", "sqlite,mysql://root@127.0.0.1:3306/onair_bench_many", "with -many: comma-separated databases, each run on a fresh one (sqlite: a file in the data directory; a mysql:// URL's database is dropped and made)")
	flag.StringVar(&o.manySize, "many-size", "320x180", "with -many: the picture size of each publisher's stream")
	flag.IntVar(&o.manyKbps, "many-kbps", 300, "with -many: each publisher's H.264 rate in kb/s (AAC 64 kb/s beside it)")
	flag.DurationVar(&o.manyLimit, "many-limit", time.Minute, "with -many: how long every show has to go live")
	flag.DurationVar(&o.manyWindow, "many-window", time.Minute, "with -many: how long all publishers stream while measured")
	flag.DurationVar(&o.manyEvery, "many-every", 5*time.Second, "with -many: how often every playlist is read during the window")
	flag.DurationVar(&o.manyLag, "many-lag", 3*time.Second, "with -many: a playlist whose newest part or segment ends further behind real time has not kept up")
	flag.IntVar(&o.blockingClients, "blocking-clients", 0, "measure only LL-HLS blocking reloads: this many clients follow one live show's playlist with _HLS_msn/_HLS_part reloads and part fetches; reports the wake (arrival − the part's publication) p50/p99 (blocking.go)")
	flag.IntVar(&o.blockingSeconds, "blocking-seconds", 30, "seconds -blocking-clients runs")
	flag.StringVar(&o.serverTree, "server-tree", "", "build the measured onair from this checkout instead of this one (another worktree: its server under this benchmark's clients)")
	flag.Parse()
	for _, s := range strings.Split(*manyDBs, ",") {
		if s = strings.TrimSpace(s); s != "" {
			o.manyDBs = append(o.manyDBs, s)
		}
	}
	for _, s := range strings.Split(*pubs, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > 64 {
			fmt.Fprintf(os.Stderr, "live: -publishers: %q is not a count between 1 and 64\n", s)
			os.Exit(2)
		}
		o.publishers = append(o.publishers, n)
	}
	if o.srtOnly {
		o.srt, o.ingestOnly = true, true
	}
	if o.serveOnly {
		o.publishers, o.latency, o.latencyOnly, o.rounds = []int{1}, 0, false, 1
	}
	if (o.rounds < 1 && !(o.transcode && o.rounds == 0)) || o.rounds > 20 {
		fmt.Fprintln(os.Stderr, "live: -rounds must be between 1 and 20 (0 with -transcode: only the latency)")
		os.Exit(2)
	}
	if o.seconds < 5 || o.seconds > o.inputSeconds {
		fmt.Fprintf(os.Stderr, "live: -seconds must be between 5 and %d\n", o.inputSeconds)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "live:", err)
		os.Exit(1)
	}
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return n
	}
	return def
}

func run(ctx context.Context, o options) error {
	tools := []string{"ffmpeg", "nginx", "wrk"}
	switch {
	case o.transcode || o.many > 0:
		tools = tools[:1]
	case o.latencyOnly || o.ingestOnly:
		tools = tools[:2]
	case o.blockingClients > 0:
		tools = tools[:1]
	}
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s is not on PATH (apt-get install -y ffmpeg nginx libnginx-mod-rtmp wrk)", tool)
		}
	}
	if _, err := os.Stat(o.nginxModule); err != nil && !o.transcode && o.many == 0 && o.blockingClients == 0 {
		return fmt.Errorf("nginx RTMP module: %w (apt-get install -y libnginx-mod-rtmp)", err)
	}
	root, err := benchkit.RepoRoot()
	if err != nil {
		return err
	}
	input, err := ensureInput(o.cacheDir, o.inputSeconds, o.inputKbps)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "onair-bench-live-")
	if err != nil {
		return err
	}
	if o.keep {
		fmt.Fprintln(os.Stderr, "keeping", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	serverTree := root
	if o.serverTree != "" {
		serverTree = o.serverTree
	}
	bin, err := benchkit.Build(serverTree, tmp, o.profile != "")
	if err != nil {
		return err
	}
	if o.transcode {
		return runTranscode(ctx, o, root, bin, input, tmp)
	}
	if o.many > 0 {
		return runMany(ctx, o, root, bin, tmp)
	}

	// OnAir: a user, a token and one show per publisher of every run.
	dataDir := filepath.Join(tmp, "onair")
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return err
	}
	env := map[string]string{
		// Nothing of the lifecycle should run during the measurements:
		// a publisher leaving keeps its show live for an hour.
		"ONAIR_RECONNECT_WINDOW": "1h",
		"ONAIR_RATE_LIMIT":       "100000",
		// Every publisher connects from 127.0.0.1 at the same moment:
		// lift the per-address admission caps meant for the internet.
		"ONAIR_RTMP_MAX_PUBLISHERS_PER_IP": "128",
		"ONAIR_RTMP_MAX_PENDING_PER_IP":    "128",
		"ONAIR_RTMP_MAX_PENDING":           "128",
	}
	if o.partDuration != "" {
		env["ONAIR_HLS_PART_DURATION"] = o.partDuration
	}
	if o.blockingClients > 0 {
		// The whole crowd connects from 127.0.0.1.
		env["ONAIR_MAX_CONNS_PER_IP"] = strconv.Itoa(4 * o.blockingClients)
	}
	if o.profile != "" {
		if err := os.MkdirAll(o.profile, 0o755); err != nil {
			return err
		}
		if env["ONAIR_BENCH_PPROF_ADDR"], err = benchkit.FreeAddr(); err != nil {
			return err
		}
	}
	if o.srt {
		if env["ONAIR_SRT_ADDR"], err = benchkit.FreeAddr(); err != nil { // a free TCP port; UDP's is as free
			return err
		}
	}
	srv, err := benchkit.NewServer(bin, dataDir, env)
	if err != nil {
		return err
	}
	_, token, err := srv.CreateUser("Bench DJ", "dj@bench.invalid")
	if err != nil {
		return err
	}
	if err := srv.Start(); err != nil {
		return err
	}
	defer srv.Stop()
	if o.blockingClients > 0 {
		res, err := runBlocking(ctx, o, srv, token, input)
		if err != nil {
			return err
		}
		text := res.markdown()
		fmt.Println(text)
		if o.docs != "" {
			path := o.docs
			if !filepath.IsAbs(path) {
				path = filepath.Join(root, path)
			}
			if err := benchkit.WriteSection(path, "Live media (RTMP ingest and HLS)", "bench/live -blocking-clients", text); err != nil {
				return err
			}
		}
		return nil
	}
	// Every round of every publisher count has shows of its own, so each
	// run is a show going live, never one resuming.
	shows, audioShows, srtShows := map[int][]benchkit.Show{}, map[int][]benchkit.Show{}, map[int][]benchkit.Show{}
	for _, n := range o.publishers {
		for i := range n * o.rounds {
			sh, err := srv.CreateShow(ctx, token, fmt.Sprintf("Bench %d publishers #%d", n, i+1))
			if err != nil {
				return err
			}
			shows[n] = append(shows[n], sh)
			sh, err = srv.CreateShowWith(ctx, token, fmt.Sprintf("Bench %d publishers audio-only #%d", n, i+1), map[string]any{"audio_only": true})
			if err != nil {
				return err
			}
			audioShows[n] = append(audioShows[n], sh)
			if o.srt {
				if sh, err = srv.CreateShow(ctx, token, fmt.Sprintf("Bench %d publishers SRT #%d", n, i+1)); err != nil {
					return err
				}
				srtShows[n] = append(srtShows[n], sh)
			}
		}
	}
	ngx, err := startNginx(filepath.Join(tmp, "nginx"), o.nginxModule, o.nginxWorkers)
	if err != nil {
		return err
	}
	defer ngx.stop()
	var floors [2]*srtFloor
	if o.srt && o.srtFloors {
		for i := range floors {
			f, err := startSRTFloor(root, tmp, i == 1)
			if err != nil {
				return err
			}
			defer f.stop()
			floors[i] = f
		}
	}

	if o.latency > 0 && !o.ingestOnly {
		sh, err := srv.CreateShow(ctx, token, "Bench latency")
		if err != nil {
			return err
		}
		targets := []latencyTarget{
			{name: "OnAir (LL-HLS, 2 s segments, " + cmp.Or(o.partDuration, "200ms") + " parts)", rtmp: "rtmp://" + srv.RTMPAddr + "/live/" + sh.StreamKey,
				playlist: fmt.Sprintf("%s/media/shows/%d/master.m3u8", srv.URL, sh.ID),
				ready:    func(text string) bool { return strings.Contains(text, "#EXT-X-STREAM-INF") }, follow: true},
			{name: "nginx-rtmp (HLS, 2 s fragments)", rtmp: "rtmp://" + ngx.rtmpAddr + "/live/latency",
				playlist: "http://" + ngx.httpAddr + "/hls/latency.m3u8",
				ready:    func(text string) bool { return strings.Contains(text, "#EXTINF") }},
		}
		warmup := min(10, o.latency/4)
		res, err := runLatency(ctx, root, targets, o.latency, warmup)
		if err != nil {
			return fmt.Errorf("latency: %w", err)
		}
		// OnAir's master appears with its first segment; its first
		// part is in the media playlist before that.
		fmt.Print("\n### Glass-to-glass latency\n\n")
		fmt.Println(latencyMarkdown(res, o.latency, warmup))
		fmt.Println("nginx-rtmp:", nginxVersion())
		if o.latencyOnly {
			return nil
		}
	}

	rep := report{o: o, input: input, started: time.Now(), loadBefore: benchkit.LoadAvg(), nginxConf: ngx.confText, nginxPrefix: ngx.prefix, nginxRTMP: ngx.rtmpAddr}
	if fi, err := os.Stat(input); err == nil {
		rep.inputRate = float64(fi.Size()) * 8 / float64(o.inputSeconds) / 1e6
	}
	// Each server's own CPU with no publisher over the same time, measured
	// side by side: what a run costs whatever the streams.
	fmt.Fprintf(os.Stderr, "both servers idle for %d s...\n", o.seconds)
	if rep.idle, err = measureIdle(ctx, [][]int{{srv.PID()}, ngx.pids()}, time.Duration(o.seconds)*time.Second); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "  idle CPU OnAir %.2f s, nginx %.2f s\n", rep.idle[0].Seconds(), rep.idle[1].Seconds())
	for _, n := range o.publishers {
		set := ingestSet{publishers: n}
		for round := range o.rounds {
			list := shows[n][round*n : (round+1)*n]
			audio := audioShows[n][round*n : (round+1)*n]
			var overSRT []benchkit.Show
			if o.srt {
				overSRT = srtShows[n][round*n : (round+1)*n]
			}
			runs, err := ingestRound(ctx, o, srv, ngx, floors, n, round, list, audio, overSRT, input)
			if err != nil {
				return err
			}
			set.runs = append(set.runs, runs)
		}
		if !o.serveOnly {
			rep.ingest = append(rep.ingest, set)
		}
	}
	if o.ingestOnly {
		rep.loadAfter = benchkit.LoadAvg()
		rep.cpuModel = cpuModel()
		fmt.Println(rep.ingestTable() + rep.notes())
		if o.docs != "" {
			path := o.docs
			if !filepath.IsAbs(path) {
				path = filepath.Join(root, path)
			}
			if err := benchkit.WriteSection(path, "Live media (RTMP ingest and HLS)", "bench/live -ingest-only", rep.markdown()); err != nil {
				return err
			}
			fmt.Fprintln(os.Stderr, "wrote the ingest figures into", path)
		}
		return nil
	}

	// Serving: the same playlist and segment bytes from OnAir's media route
	// and as static files of nginx.
	show := shows[o.publishers[len(o.publishers)-1]][0]
	dir := filepath.Join(dataDir, "media", "shows", fmt.Sprint(show.ID))
	seg, size, err := closestSegment(dir, int64(o.segmentSize))
	if err != nil {
		return err
	}
	rep.segment, rep.segmentSize = seg, size
	kinds := []struct{ name, file string }{{"live playlist (index.m3u8)", "index.m3u8"}, {fmt.Sprintf("segment (%d KB)", size>>10), seg}}
	for _, k := range kinds {
		onairURL := fmt.Sprintf("%s/media/shows/%d/%s", srv.URL, show.ID, k.file)
		nginxURL := "http://" + ngx.httpAddr + "/static/" + k.file
		// nginx gets the bytes OnAir answers with: with the memory cache
		// on, the live playlist OnAir serves (with its LL-HLS parts) is
		// not the plain one on disk.
		a, err := fetch(onairURL)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(ngx.prefix, "static", k.file), a, 0o644); err != nil {
			return err
		}
		b, err := fetch(nginxURL)
		if err != nil {
			return err
		}
		if len(a) != len(b) {
			return fmt.Errorf("%s: OnAir serves %d bytes, nginx %d", k.file, len(a), len(b))
		}
		// OnAir, nginx, nginx, OnAir: a drift in the machine's load
		// weighs on both sides alike; each side's figure is its mean.
		var runs [2][]wrkResult
		for i, j := range []int{0, 1, 1, 0} {
			url := []string{onairURL, nginxURL}[j]
			pids := []int{srv.PID()}
			if j == 1 {
				pids = ngx.pids()
			}
			fmt.Fprintf(os.Stderr, "wrk %s for %s...\n", url, o.wrkDuration)
			var profiled chan error
			if o.profile != "" && i == 0 {
				profiled = profile(srv, int(o.wrkDuration.Seconds())-1, filepath.Join(o.profile, "serve-"+k.file+".cpu.pprof"))
			}
			r, err := runWrk(url, o.wrkThreads, o.wrkConns, o.wrkDuration, pids)
			if err != nil {
				return err
			}
			if profiled != nil {
				if err := <-profiled; err != nil {
					return err
				}
			}
			r.load = benchkit.LoadAvg()
			fmt.Fprintf(os.Stderr, "  %.0f req/s, p50 %s, p99 %s, server CPU %.0f µs/request %s\n", r.rps, r.p50, r.p99, r.cpuPerRequest(), r.errors)
			runs[j] = append(runs[j], r)
		}
		pair := [2]wrkResult{mergeWrk(runs[0]), mergeWrk(runs[1])}
		rep.serving = append(rep.serving, servingRow{name: k.name, bytes: len(a), onair: pair[0], nginx: pair[1]})
	}
	rep.loadAfter = benchkit.LoadAvg()
	rep.cpuModel = cpuModel()

	table := rep.tables()
	if o.serveOnly {
		table = rep.servingTable()
	}
	fmt.Println(table)
	if o.docs != "" {
		path := o.docs
		if !filepath.IsAbs(path) {
			path = filepath.Join(root, path)
		}
		name, text := "bench/live", rep.markdown()
		if o.serveOnly {
			name, text = "bench/live -serve-only", rep.servingMarkdown()
		}
		if err := benchkit.WriteSection(path, "Live media (RTMP ingest and HLS)", name, text); err != nil {
			return err
		}
		fmt.Fprintln(os.Stderr, "wrote the figures into", path)
	}
	return nil
}

// profile records OnAir's CPU profile of the next seconds in the background.
func profile(srv *benchkit.Server, seconds int, path string) chan error {
	done := make(chan error, 1)
	go func() { done <- srv.Profile("profile", max(1, seconds), path) }()
	return done
}

// profileAllocs records, beside profile, what OnAir allocates over the
// same seconds (a delta of the allocs profile), to path's .cpu.pprof
// changed to .allocs.pprof.
func profileAllocs(srv *benchkit.Server, seconds int, path string) chan error {
	done := make(chan error, 1)
	path = strings.TrimSuffix(path, ".cpu.pprof") + ".allocs.pprof"
	go func() { done <- srv.Profile("allocs", max(1, seconds), path) }()
	return done
}

// closestSegment picks, among the A/V segments of the live playlist (those
// players fetch during a live), the one whose size is nearest to want.
func closestSegment(dir string, want int64) (string, int64, error) {
	list, err := os.ReadFile(filepath.Join(dir, "index.m3u8"))
	if err != nil {
		return "", 0, err
	}
	var files []string
	for _, line := range strings.Split(string(list), "\n") {
		if strings.HasPrefix(line, "seg-") && strings.HasSuffix(line, ".ts") {
			files = append(files, filepath.Join(dir, line))
		}
	}
	if len(files) == 0 {
		return "", 0, fmt.Errorf("no segments in the live playlist of %s", dir)
	}
	best, bestSize := "", int64(0)
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			continue
		}
		if best == "" || math.Abs(float64(fi.Size()-want)) < math.Abs(float64(bestSize-want)) {
			best, bestSize = filepath.Base(f), fi.Size()
		}
	}
	return best, bestSize, nil
}

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
