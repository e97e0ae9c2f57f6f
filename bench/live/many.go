package main

// -many N: issue #35's goal 4, N publishers connecting to one node at the
// same moment. The publishers are goroutines of this program speaking RTMP
// with OnAir's own client (modules/live/rtmp), each replaying a small
// pre-recorded FLV paced on its timestamps from an address of its own
// (127.1.x.y: every loopback address is local, so OnAir's per-address
// admission caps stay at their defaults, as for encoders on the internet).
// A publisher refused or dropped retries after 2 s, as OBS does. The
// benchmark reports when every publish was accepted, when every show was
// live (the API's live list), how far each live playlist's newest part
// or segment is behind real time while all of them stream, and OnAir's
// CPU and memory meanwhile; once per database of -many-db.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/onair/onair/bench/internal/benchkit"
	"github.com/onair/onair/modules/live/flv"
	"github.com/onair/onair/modules/live/rtmp"
)

// manyResult is one -many run on one database.
type manyResult struct {
	db          string
	publishers  int
	accepted    []time.Duration // each publisher's first accepted publish, from the common start
	attempts    []int
	refusals    map[string]int // error text → count
	allLive     time.Duration  // 0: not within the limit
	liveAtLimit int
	window      time.Duration
	cpuOwn      time.Duration // OnAir's own CPU over the window
	cpuChildren time.Duration // its waited-for children (thumbnail ffmpeg) over the window
	rssIdle     int64
	rssMax      int64
	lags        []time.Duration // every playlist sample's distance to real time
	behind      int             // playlists that were ever more than -many-lag behind
	unreadable  int             // playlist samples that failed or had no media
	late        time.Duration   // the publishers' worst lateness (this program's own pacing)
	dropped     int             // publishers whose connection ended during the window
	loadBefore  string
	loadAfter   string
}

// smallInput encodes (once) the -many input: a test card of size at
// 25 fps, H.264 at kbps with a keyframe every 2 s, and AAC 64 kb/s.
func smallInput(cacheDir, size string, kbps int) (string, error) {
	path := filepath.Join(cacheDir, fmt.Sprintf("testsrc2-%s-25-%dk-g50-60s.flv", size, kbps))
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return "", err
	}
	tmp := path + ".part"
	cmd := exec.Command("ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-y",
		"-f", "lavfi", "-i", "testsrc2=size="+size+":rate=25",
		"-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
		"-t", "60", "-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p",
		"-b:v", fmt.Sprintf("%dk", kbps), "-maxrate", fmt.Sprintf("%dk", kbps), "-bufsize", fmt.Sprintf("%dk", 2*kbps),
		"-g", "50", "-keyint_min", "50", "-sc_threshold", "0",
		"-c:a", "aac", "-b:a", "64k", "-ac", "2", "-f", "flv", tmp)
	if out, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("encode the -many input: %w\n%s", err, out)
	}
	return path, os.Rename(tmp, path)
}

// recording is an FLV's audio and video tags in file order; the first of
// each kind is its sequence header.
type recording struct {
	tags    []flv.Tag
	headers map[int]bool // indexes of the sequence headers
	length  uint32       // ms: one loop of the recording
}

func readRecording(path string) (recording, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return recording{}, err
	}
	r, err := flv.NewReader(bytes.NewReader(data))
	if err != nil {
		return recording{}, err
	}
	rec := recording{headers: map[int]bool{}}
	seen := map[uint8]bool{}
	for {
		tag, err := r.ReadTag()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return recording{}, err
		}
		if tag.Type != flv.TagAudio && tag.Type != flv.TagVideo {
			continue
		}
		if !seen[tag.Type] {
			seen[tag.Type] = true
			rec.headers[len(rec.tags)] = true
		}
		rec.tags = append(rec.tags, tag)
		rec.length = max(rec.length, tag.Timestamp+40)
	}
	if len(rec.headers) != 2 {
		return recording{}, fmt.Errorf("%s: want audio and video", path)
	}
	return rec, nil
}

// manyPublisher is one encoder of a -many run.
type manyPublisher struct {
	url      string
	local    net.IP
	accepted time.Duration // from the start; 0 until accepted
	attempts int
	errs     []string
	late     time.Duration
	dropped  atomic.Bool
}

// run connects at start (retrying every 2 s, as OBS does) and streams
// the recording in a loop until ctx ends.
func (p *manyPublisher) run(ctx context.Context, rec recording, start time.Time, measuring *atomic.Bool) {
	for ctx.Err() == nil {
		p.attempts++
		c, err := rtmp.Publish(ctx, p.url, rtmp.ClientOptions{
			Dialer: &net.Dialer{Timeout: 10 * time.Second, LocalAddr: &net.TCPAddr{IP: p.local}},
		})
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			p.errs = append(p.errs, shortError(err))
			select {
			case <-ctx.Done():
				return
			case <-time.After(2 * time.Second):
			}
			continue
		}
		if p.accepted == 0 {
			p.accepted = time.Since(start)
		}
		err = p.stream(ctx, c, rec)
		c.Close()
		if ctx.Err() != nil {
			return
		}
		if measuring.Load() {
			p.dropped.Store(true)
		}
		p.errs = append(p.errs, "dropped: "+shortError(err))
	}
}

func (p *manyPublisher) stream(ctx context.Context, c *rtmp.Client, rec recording) error {
	begin := time.Now()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for n := uint32(0); ; n++ {
		for i, tag := range rec.tags {
			if n > 0 && rec.headers[i] {
				continue
			}
			ts := tag.Timestamp + n*rec.length
			due := begin.Add(time.Duration(ts) * time.Millisecond)
			if wait := time.Until(due); wait > 0 {
				timer.Reset(wait)
				select {
				case <-ctx.Done():
					return nil
				case <-c.Done():
					return c.Err()
				case <-timer.C:
				}
			} else if late := -wait; late > p.late {
				p.late = late
			}
			var err error
			if tag.Type == flv.TagVideo {
				err = c.WriteVideo(ts, tag.Data)
			} else {
				err = c.WriteAudio(ts, tag.Data)
			}
			if err != nil {
				return err
			}
		}
	}
}

// addrs are the addresses and ports in an error's text, which differ from
// one publisher to the next.
var addrs = regexp.MustCompile(`(read|write) tcp [0-9.:]+->[0-9.:]+: | to [0-9.]+:[0-9]+`)

// shortError keeps what tells failures apart.
func shortError(err error) string {
	s := strings.ReplaceAll(addrs.ReplaceAllString(err.Error(), ""), "\n", "; ")
	if len(s) > 120 {
		s = s[:120]
	}
	return s
}

func runMany(ctx context.Context, o options, root, bin, tmp string) error {
	input, err := smallInput(o.cacheDir, o.manySize, o.manyKbps)
	if err != nil {
		return err
	}
	rec, err := readRecording(input)
	if err != nil {
		return err
	}
	fi, err := os.Stat(input)
	if err != nil {
		return err
	}
	rate := float64(fi.Size()) * 8 / 60 / 1e6
	var results []manyResult
	for i, db := range o.manyDBs {
		res, err := manyRun(ctx, o, bin, filepath.Join(tmp, fmt.Sprintf("many-%d", i)), db, rec)
		if err != nil {
			return fmt.Errorf("-many on %s: %w", db, err)
		}
		fmt.Fprintln(os.Stderr, res.summary())
		results = append(results, res)
	}
	text := manyMarkdown(o, results, input, rate)
	fmt.Println(text)
	if o.docs != "" {
		path := o.docs
		if !filepath.IsAbs(path) {
			path = filepath.Join(root, path)
		}
		if err := benchkit.WriteSection(path, "Many publishers (issue #35, goal 4)", "bench/live -many", text); err != nil {
			return err
		}
		fmt.Fprintln(os.Stderr, "wrote the figures into", path)
	}
	return nil
}

func manyRun(ctx context.Context, o options, bin, dataDir, db string, rec recording) (manyResult, error) {
	res := manyResult{db: db, publishers: o.many, refusals: map[string]int{}}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return res, err
	}
	env := map[string]string{
		"ONAIR_RECONNECT_WINDOW": "1h",
		"ONAIR_RATE_LIMIT":       "100000",
	}
	if strings.HasPrefix(db, "mysql://") {
		if err := benchkit.MySQLDatabase(ctx, db, true); err != nil {
			return res, err
		}
		env["ONAIR_DATABASE_URL"] = db
	}
	if o.partDuration != "" {
		env["ONAIR_HLS_PART_DURATION"] = o.partDuration
	}
	if o.profile != "" {
		if err := os.MkdirAll(o.profile, 0o755); err != nil {
			return res, err
		}
		addr, err := benchkit.FreeAddr()
		if err != nil {
			return res, err
		}
		env["ONAIR_BENCH_PPROF_ADDR"] = addr
	}
	srv, err := benchkit.NewServer(bin, dataDir, env)
	if err != nil {
		return res, err
	}
	_, token, err := srv.CreateUser("Bench DJ", "dj@bench.invalid")
	if err != nil {
		return res, err
	}
	if err := srv.Start(); err != nil {
		return res, err
	}
	defer srv.Stop()
	showList := make([]benchkit.Show, o.many)
	for i := range showList {
		if showList[i], err = srv.CreateShow(ctx, token, fmt.Sprintf("Bench many #%d", i+1)); err != nil {
			return res, err
		}
	}
	// Settle after the set-up, then the idle figures.
	time.Sleep(3 * time.Second)
	if res.rssIdle, err = benchkit.RSS(srv.PID()); err != nil {
		return res, err
	}
	res.loadBefore = benchkit.LoadAvg()

	pctx, stopPublishers := context.WithCancel(ctx)
	defer stopPublishers()
	pubs := make([]*manyPublisher, o.many)
	var measuring atomic.Bool
	var wg sync.WaitGroup
	start := time.Now()
	for i, sh := range showList {
		pubs[i] = &manyPublisher{url: "rtmp://" + srv.RTMPAddr + "/live/" + sh.StreamKey, local: net.IPv4(127, 1, byte(i/250), byte(i%250+1))}
		wg.Go(func() { pubs[i].run(pctx, rec, start, &measuring) })
	}
	defer func() { stopPublishers(); wg.Wait() }()
	fmt.Fprintf(os.Stderr, "%s: %d publishers started together\n", db, o.many)
	var arrived chan error
	if o.profile != "" {
		// Where going live spends its time: OnAir's CPU from the start
		// (one CPU profile at a time: the window's waits for it), and its
		// goroutines a third of the way into the limit.
		arrival := filepath.Join(o.profile, fmt.Sprintf("many-%d-%s-arrival", o.many, dbKind(db)))
		arrived = profile(srv, int(min(o.manyLimit, 30*time.Second).Seconds()), arrival+".cpu.pprof")
		go func() {
			time.Sleep(o.manyLimit / 3)
			if err := goroutines(srv, arrival+".goroutines.txt"); err != nil {
				fmt.Fprintln(os.Stderr, "  goroutines:", err)
			}
		}()
	}

	// Every show live, as the API's list of live shows tells.
	want := map[int64]bool{}
	for _, sh := range showList {
		want[sh.ID] = true
	}
	limit := start.Add(o.manyLimit)
	for {
		n, err := countLive(ctx, srv, token, want)
		if err != nil {
			// A busy node may answer 503: ask again.
			fmt.Fprintln(os.Stderr, "  live list:", err)
			n = res.liveAtLimit
		}
		res.liveAtLimit = n
		if n == len(want) {
			res.allLive = time.Since(start)
			break
		}
		if time.Now().After(limit) {
			break
		}
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(time.Second):
		}
	}
	fmt.Fprintf(os.Stderr, "  %d of %d live after %v\n", res.liveAtLimit, o.many, time.Since(start).Round(time.Millisecond))

	if arrived != nil {
		if err := <-arrived; err != nil {
			fmt.Fprintln(os.Stderr, "  arrival profile:", err)
		}
	}

	// The window: every publisher streams; CPU, memory and each playlist's
	// distance to real time.
	measuring.Store(true)
	cpu0, err := benchkit.ReadCPU(srv.PID())
	if err != nil {
		return res, err
	}
	var profiled chan error
	if o.profile != "" {
		profiled = profile(srv, int(o.manyWindow.Seconds())-1, filepath.Join(o.profile, fmt.Sprintf("many-%d-%s.cpu.pprof", o.many, dbKind(db))))
	}
	windowStart := time.Now()
	end := windowStart.Add(o.manyWindow)
	ever := map[int64]bool{}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	for time.Now().Before(end) {
		round := time.Now()
		if rss, err := benchkit.RSS(srv.PID()); err == nil {
			res.rssMax = max(res.rssMax, rss)
		}
		lags, bad := playlistLags(client, srv.URL, showList)
		res.unreadable += bad
		for id, lag := range lags {
			res.lags = append(res.lags, lag)
			if lag > o.manyLag {
				ever[id] = true
			}
		}
		if rss, err := benchkit.RSS(srv.PID()); err == nil {
			res.rssMax = max(res.rssMax, rss)
		}
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(time.Until(round.Add(o.manyEvery))):
		}
	}
	cpu1, err := benchkit.ReadCPU(srv.PID())
	if err != nil {
		return res, err
	}
	res.window = time.Since(windowStart)
	res.cpuOwn, res.cpuChildren = cpu1.Own-cpu0.Own, cpu1.Children-cpu0.Children
	if profiled != nil {
		if err := <-profiled; err != nil {
			return res, err
		}
	}
	res.behind = len(ever)
	res.loadAfter = benchkit.LoadAvg()
	stopPublishers()
	wg.Wait()
	for _, p := range pubs {
		res.accepted = append(res.accepted, p.accepted)
		res.attempts = append(res.attempts, p.attempts)
		res.late = max(res.late, p.late)
		if p.dropped.Load() {
			res.dropped++
		}
		for _, e := range p.errs {
			res.refusals[e]++
		}
	}
	return res, nil
}

// goroutines saves the server's goroutines, grouped by stack (pprof's
// debug=1 text), to path.
func goroutines(srv *benchkit.Server, path string) error {
	resp, err := http.Get("http://" + srv.Env["ONAIR_BENCH_PPROF_ADDR"] + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(path, body, 0o644)
}

func dbKind(db string) string {
	if strings.HasPrefix(db, "mysql://") {
		return "mariadb"
	}
	return "sqlite"
}

// countLive counts the shows of want in the API's live list.
func countLive(ctx context.Context, srv *benchkit.Server, token string, want map[int64]bool) (int, error) {
	n := 0
	for page := 1; ; page++ {
		var out struct {
			Shows []struct {
				ID   int64 `json:"id"`
				Live bool  `json:"live"`
			} `json:"shows"`
		}
		if err := srv.API(ctx, "GET", fmt.Sprintf("/v1/shows?live=true&page=%d", page), token, nil, &out); err != nil {
			return 0, err
		}
		for _, s := range out.Shows {
			if want[s.ID] && s.Live {
				n++
			}
		}
		if len(out.Shows) < 50 {
			return n, nil
		}
	}
}

// playlistLags fetches every show's live A/V playlist (8 at a time) and
// returns how far its newest part or segment ends behind now: the last
// EXT-X-PROGRAM-DATE-TIME plus the segment after it and the parts after
// that segment.
func playlistLags(client *http.Client, base string, list []benchkit.Show) (map[int64]time.Duration, int) {
	var mu sync.Mutex
	out := map[int64]time.Duration{}
	bad := 0
	next := make(chan benchkit.Show)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for sh := range next {
				lag, err := playlistLag(client, fmt.Sprintf("%s/media/shows/%d/index.m3u8", base, sh.ID))
				mu.Lock()
				if err != nil {
					bad++
				} else {
					out[sh.ID] = lag
				}
				mu.Unlock()
			}
		})
	}
	for _, sh := range list {
		next <- sh
	}
	close(next)
	wg.Wait()
	return out, bad
}

func playlistLag(client *http.Client, u string) (time.Duration, error) {
	resp, err := client.Get(u)
	if err != nil {
		return 0, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	now := time.Now()
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s: %d", u, resp.StatusCode)
	}
	var pdt time.Time
	var after, parts float64 // seconds: the segment after pdt, the parts after that segment
	for _, line := range strings.Split(string(body), "\n") {
		switch {
		case strings.HasPrefix(line, "#EXT-X-PROGRAM-DATE-TIME:"):
			t, err := time.Parse(time.RFC3339Nano, strings.TrimPrefix(line, "#EXT-X-PROGRAM-DATE-TIME:"))
			if err != nil {
				return 0, err
			}
			pdt, after, parts = t, 0, 0
		case strings.HasPrefix(line, "#EXTINF:"):
			v, _, _ := strings.Cut(strings.TrimPrefix(line, "#EXTINF:"), ",")
			d, _ := strconv.ParseFloat(v, 64)
			// The parts before it were this segment's.
			after, parts = after+d, 0
		case strings.HasPrefix(line, "#EXT-X-PART:"):
			if i := strings.Index(line, "DURATION="); i >= 0 {
				v, _, _ := strings.Cut(line[i+len("DURATION="):], ",")
				d, _ := strconv.ParseFloat(v, 64)
				parts += d
			}
		}
	}
	if pdt.IsZero() {
		return 0, fmt.Errorf("%s: no segment yet", u)
	}
	edge := pdt.Add(time.Duration((after + parts) * float64(time.Second)))
	return now.Sub(edge), nil
}

func (r manyResult) summary() string {
	return fmt.Sprintf("  %s: all live after %v (%d of %d at the limit), OnAir %.2f cores, RSS max %d MB", r.db,
		r.allLive.Round(time.Millisecond), r.liveAtLimit, r.publishers, r.cpuOwn.Seconds()/r.window.Seconds(), r.rssMax>>20)
}

func manyMarkdown(o options, results []manyResult, input string, rate float64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d publishers connecting at the same moment, each from its own loopback address with OnAir's default admission limits, each to its own show, replaying `%s` (%s, 25 fps, H.264 %d kb/s with a keyframe every 2 s, AAC 64 kb/s: %.2f Mb/s in all) paced on its timestamps with OnAir's RTMP client; a refused or dropped publisher retries after 2 s. Then %s of all of them streaming: OnAir's CPU (its own; its thumbnail ffmpeg children apart) and RSS, and every %s each show's live playlist, how far its newest part or segment ends behind real time.\n\n",
		o.many, filepath.Base(input), o.manySize, o.manyKbps, rate, o.manyWindow, o.manyEvery)
	b.WriteString("| database | accepted p50 / max | attempts > 1 | all live after | playlist behind real time p50 / p99 / max | playlists ever > " + o.manyLag.String() + " behind | OnAir CPU (cores) | thumbnails' CPU (cores) | OnAir RSS idle → max | dropped during the window | publishers' own lateness (max) | load before; after |\n")
	b.WriteString("|---|---|---:|---|---|---:|---:|---:|---|---:|---:|---|\n")
	for _, r := range results {
		acc := slices.Clone(r.accepted)
		slices.Sort(acc)
		retried := 0
		for _, a := range r.attempts {
			if a > 1 {
				retried++
			}
		}
		lags := slices.Clone(r.lags)
		slices.Sort(lags)
		live := "not within " + o.manyLimit.String() + fmt.Sprintf(" (%d of %d)", r.liveAtLimit, r.publishers)
		if r.allLive > 0 {
			live = fmt.Sprintf("**%.1f s**", r.allLive.Seconds())
		}
		fmt.Fprintf(&b, "| %s | %.2f / %.2f s | %d | %s | %.2f / %.2f / %.2f s (%d samples, %d unreadable) | %d | **%.2f** | %.2f | %d → **%d MB** | %d | %.2f s | %s; %s |\n",
			dbKind(r.db), benchkit.Percentile(acc, 50).Seconds(), benchkit.Percentile(acc, 100).Seconds(), retried, live,
			benchkit.Percentile(lags, 50).Seconds(), benchkit.Percentile(lags, 99).Seconds(), benchkit.Percentile(lags, 100).Seconds(),
			len(lags), r.unreadable, r.behind, r.cpuOwn.Seconds()/r.window.Seconds(), r.cpuChildren.Seconds()/r.window.Seconds(),
			r.rssIdle>>20, r.rssMax>>20, r.dropped, r.late.Seconds(), r.loadBefore, r.loadAfter)
	}
	for _, r := range results {
		if len(r.refusals) == 0 {
			continue
		}
		keys := make([]string, 0, len(r.refusals))
		for k := range r.refusals {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		fmt.Fprintf(&b, "\nFailed attempts on %s:", dbKind(r.db))
		for _, k := range keys {
			fmt.Fprintf(&b, " %d× `%s`;", r.refusals[k], k)
		}
		b.WriteString("\n")
	}
	return b.String()
}
