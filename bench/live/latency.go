package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/chromedp"
)

// Glass-to-glass latency: ffmpeg generates a live picture (a test card
// whose top strip carries the frame number as 20 black or white blocks,
// and the strip below it the wall clock's milliseconds, modulo 2^20, at
// which ffmpeg's filters made the frame) in real time, encodes it once (x264 zerolatency, a keyframe every 2 s,
// AAC) and publishes the same encoded stream to OnAir and to nginx-rtmp at
// once (tee muxer). One headless Chromium tab per server plays the
// server's live playlist with hls.js (the configuration of OnAir's player:
// lowLatencyMode, catch-up at up to 1.25x) and, for every frame it
// presents (requestVideoFrameCallback), reads the frame number back from
// the picture: latency = presentation time − the moment ffmpeg generated
// that frame (its start + frame number / frame rate), less ffmpeg's
// start-up: the median, over the frames shown, of the clock a frame
// carries less that nominal moment (ffmpeg's -re paces its input from
// its first read, after it has set up its outputs, connections included;
// that wait is before the first frame exists, not latency). A clock
// misread in a frame moves the median little; one read wrong in most
// would show as a start-up outside ffmpeg's start to its first output.
// With ONAIR_BENCH_TRACE set, each tab's hls.js log and the player's
// state every second (time, buffer, level, frames, the frame number read)
// go to the standard error.

const latencyFPS = 25

// latencyPage plays ?src= with hls.js and records glass-to-glass samples.
const latencyPage = `<!DOCTYPE html><meta charset="utf-8"><title>latency</title>
<video id="v" muted autoplay playsinline crossorigin="anonymous" width="640" height="360"></video>
<script src="/hls.js"></script>
<script>
const q = new URLSearchParams(location.search);
const t0 = Number(q.get('t0')), fps = Number(q.get('fps'));
window.samples = []; window.firstFrame = 0; window.backwards = 0; let lastN = -1;
const v = document.getElementById('v');
const c = document.createElement('canvas'); c.width = 640; c.height = 32;
const g = c.getContext('2d', {willReadFrequently: true});
function onFrame(now, meta) {
  g.drawImage(v, 0, 0, v.videoWidth, 32 * v.videoHeight / 360, 0, 0, 640, 32);
  const bits = (y) => { const row = g.getImageData(0, y, 640, 1).data; let n = 0; for (let k = 0; k < 20; k++) if (row[4 * (32 * k + 16)] > 128) n += 1 << k; return n; };
  const n = bits(8), clock = bits(24);
  if (n < lastN) window.backwards++;
  lastN = n;
  const shown = performance.timeOrigin + meta.expectedDisplayTime;
  if (!window.firstFrame) window.firstFrame = shown;
  // The frame's making on the wall clock: the latest moment up to shown
  // whose milliseconds modulo 2^20 are the clock's.
  const whole = Math.floor(shown), made = whole - ((whole - clock) % 1048576 + 1048576) % 1048576;
  window.samples.push([shown, shown - (t0 + 1000 * n / fps), hls.latency || 0, made - (t0 + 1000 * n / fps)]);
  v.requestVideoFrameCallback(onFrame);
}
v.requestVideoFrameCallback(onFrame);
// ?debug=1 (ONAIR_BENCH_TRACE): hls.js's own log, and the player's state
// every second, kept for the program to print.
const debug = !!q.get('debug');
window.logs = []; window.trace = [];
const lg = (k) => (...a) => { if (window.logs.length < 3000) window.logs.push(Math.round(performance.now()) + ' ' + k + ' ' + a.map(String).join(' ')); };
const hls = new Hls({ backBufferLength: 60, lowLatencyMode: true, liveSyncOnStallIncrease: 0.2, maxLiveSyncPlaybackRate: 1, debug: debug ? {log: lg('L'), info: lg('I'), warn: lg('W'), error: lg('E'), debug: lg('D')} : false });
// As OnAir's player: its own catch-up, up to 1.25x while behind the target
// by up to a target duration with more than 0.3 s buffered.
v.addEventListener('timeupdate', () => {
  const d = hls.latestLevelDetails, target = hls.targetLatency, b = v.buffered;
  if (!d || !d.live || target == null || v.paused || !b.length) return;
  const late = hls.latency - target, ahead = b.end(b.length - 1) - v.currentTime;
  const rate = late > 0.05 && late < d.targetduration && ahead > 0.3 ? 1 + Math.round(Math.min(late, 0.5) * 10) / 20 : 1;
  if (v.playbackRate !== rate && v.playbackRate !== 0) v.playbackRate = rate;
});
// As OnAir's player (modules/pages/static/onair.js): once, as the show
// starts playing, a player more than a second behind the hold-back jumps there.
window.resynced = 0;
v.addEventListener('playing', function resync() {
  v.removeEventListener('playing', resync);
  const d = hls.latestLevelDetails, edge = hls.liveSyncPosition;
  if (d && d.live && edge != null && edge - v.currentTime > 1) { window.resynced = edge - v.currentTime; v.currentTime = edge; }
});
hls.on(Hls.Events.MANIFEST_PARSED, () => {
  // A level locked (the ladder's benchmark): hls.js's levels are the
  // video variants by bit rate. Set before hls.js starts loading (it
  // does right after this event), not as currentLevel, which switches
  // a level already loading and flushes the buffer.
  if (q.get('level') === 'lowest') { hls.startLevel = 0; hls.loadLevel = 0; }
  if (q.get('level') === 'highest') { hls.startLevel = hls.levels.length - 1; hls.loadLevel = hls.levels.length - 1; }
  v.play();
});
window.errors = {};
hls.on(Hls.Events.ERROR, (_, d) => {
  const k = d.details + (d.fatal ? ' (fatal)' : '');
  window.errors[k] = (window.errors[k] || 0) + 1;
  if (d.fatal) setTimeout(() => hls.loadSource(q.get('src')), 500);
});
hls.loadSource(q.get('src'));
hls.attachMedia(v);
window.hls = hls;
if (debug) {
hls.on(Hls.Events.FRAG_BUFFERED, (_, d) => window.trace.push(['frag', Math.round(performance.now()), d.frag.level, d.frag.sn, d.part ? d.part.index : -1, +d.frag.start.toFixed(3), +(d.part ? d.part.start : 0).toFixed(3)]));
hls.on(Hls.Events.LEVEL_SWITCHED, (_, d) => window.trace.push(['switched', Math.round(performance.now()), d.level]));
setInterval(() => {
  const q = v.getVideoPlaybackQuality();
  const b = v.buffered.length ? [+v.buffered.start(0).toFixed(2), +v.buffered.end(v.buffered.length-1).toFixed(2), v.buffered.length] : [];
  window.trace.push(['tick', Math.round(performance.now()), +v.currentTime.toFixed(3), v.playbackRate, v.readyState, b, hls.currentLevel, hls.loadLevel, +(hls.latency||0).toFixed(2), q.totalVideoFrames, q.droppedVideoFrames, lastN]);
}, 1000);
}
</script>`

// latencyTarget is one server under measurement.
type latencyTarget struct {
	name, rtmp, playlist string
	// ready reports whether a playlist text is playable for this server:
	// OnAir's has a part, nginx-rtmp's a segment.
	ready func(text string) bool
	// level, when set, locks hls.js to the master's "lowest" or
	// "highest" video level.
	level string
	// follow: the playlist is OnAir's, whose blocking reloads say when
	// each part was published (the breakdown).
	follow bool
}

// latencyResult is what one server achieved.
type latencyResult struct {
	name       string
	firstPart  time.Duration // publish → first playable part (or segment) in the playlist
	firstFrame time.Duration // publish → first frame presented by hls.js
	samples    []float64     // glass-to-glass seconds, after the warm-up
	p50, p10   float64
	p90, max   float64
	hlsLatency float64 // hls.js's own latency estimate at the end
	// backwards counts frames whose number read lower than the one
	// before: misread codes (or a player gone back), which make samples
	// wrong.
	backwards int
	errors    map[string]int // hls.js's errors by details, counted
	// resynced is how far behind its hold-back the player was when the
	// show started playing, when it jumped (0: it did not).
	resynced float64
	// The breakdown (breakdown.go), medians in seconds: encoder is a
	// frame's arrival at the FLV sink, published a part's publication,
	// each less the nominal generation of its media; hlsEdge is hls.js's
	// distance to the live edge over the samples.
	encoder, published, hlsEdge float64
	frames, parts               int
	// startup is ffmpeg's start to its first output (the FLV header).
	startup float64
	// madeAfter is how long after its nominal moment ffmpeg made a frame
	// (the clock strip; the median over the samples, seconds): ffmpeg's
	// start-up before its first frame, taken out of the samples and the
	// breakdown. clockRead counts the samples with a sane clock.
	madeAfter float64
	clockRead int
}

func (r *latencyResult) summarize() {
	s := slices.Clone(r.samples)
	slices.Sort(s)
	if len(s) == 0 {
		return
	}
	at := func(q float64) float64 { return s[min(len(s)-1, int(q*float64(len(s))))] }
	r.p10, r.p50, r.p90, r.max = at(0.1), at(0.5), at(0.9), s[len(s)-1]
}

// latencyArgs encodes the frame-numbered test card and a tone live and
// publishes them to every url.
func latencyArgs(urls []string, seconds int, scale string) []string {
	scaled := ""
	if scale != "" {
		// The whole card, code strip included, at another size (the
		// page reads the strip relative to the picture's height).
		scaled = ",scale=" + scale
	}
	var outs []string
	for _, u := range urls {
		if u == "" {
			continue
		}
		outs = append(outs, "[f=flv:onfail=ignore]"+u)
	}
	return []string{"-hide_banner", "-loglevel", "error", "-re",
		"-f", "lavfi", "-i", fmt.Sprintf("testsrc2=size=640x360:rate=%d", latencyFPS),
		"-f", "lavfi", "-i", fmt.Sprintf("nullsrc=size=640x32:rate=%d", latencyFPS),
		"-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100",
		// The code strips: rows 0–15 the frame number N, rows 16–31 the
		// wall clock's milliseconds modulo 2^20 as the filter made the
		// frame (its timestamp set to RTCTIME in microseconds for geq's
		// T, then back to N at the frame rate).
		"-filter_complex", fmt.Sprintf("[1]settb=1/1000000,setpts=RTCTIME,format=gray,"+
			"geq=lum='255*bitand(floor(if(lt(Y,16),N,mod(floor(T*1000),1048576))/pow(2,floor(X/32))),1)',"+
			"settb=1/%d,setpts=N,format=yuv420p[code];[0][code]overlay=0:0", latencyFPS) + scaled + "[v]",
		"-map", "[v]", "-map", "2:a", "-t", fmt.Sprint(seconds),
		"-c:v", "libx264", "-preset", "veryfast", "-tune", "zerolatency", "-pix_fmt", "yuv420p",
		"-g", fmt.Sprint(2 * latencyFPS), "-keyint_min", fmt.Sprint(2 * latencyFPS), "-b:v", "1500k",
		"-c:a", "aac", "-b:a", "128k",
		// The tee muxer: each FLV output needs the codec headers out of band.
		"-flags", "+global_header", "-f", "tee", strings.Join(outs, "|")}
}

// runLatency measures every target at once on one publication.
func runLatency(ctx context.Context, root string, targets []latencyTarget, seconds, warmup int) ([]latencyResult, error) {
	return runLatencySized(ctx, root, targets, seconds, warmup, "")
}

// runLatencySized is runLatency with the test card scaled (ffmpeg's
// scale=W:H; empty: 640x360). Targets without an RTMP URL are fed by the
// publication of another.
func runLatencySized(ctx context.Context, root string, targets []latencyTarget, seconds, warmup int, scale string) ([]latencyResult, error) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		if chromium, err = exec.LookPath("chromium-browser"); err != nil {
			return nil, fmt.Errorf("chromium is not on PATH (apt-get install -y chromium)")
		}
	}
	hlsJS, err := os.ReadFile(filepath.Join(root, "modules/pages/static/hls.light.min.js"))
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	page := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hls.js" {
			w.Header().Set("Content-Type", "text/javascript")
			w.Write(hlsJS)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, latencyPage)
	})}
	go page.Serve(ln)
	defer page.Close()

	// One Chromium per server: a background tab would not play.
	browsers := make([]context.Context, len(targets))
	for i := range targets {
		dir, err := os.MkdirTemp("", "onair-bench-chromium-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		alloc, cancelAlloc := chromedp.NewExecAllocator(ctx,
			chromedp.ExecPath(chromium), chromedp.UserDataDir(dir),
			chromedp.Flag("headless", true), chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true),
			chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("no-first-run", true),
			chromedp.Flag("autoplay-policy", "no-user-gesture-required"), chromedp.Flag("mute-audio", true),
			chromedp.WindowSize(800, 600))
		defer cancelAlloc()
		browser, cancelBrowser := chromedp.NewContext(alloc)
		defer cancelBrowser()
		if err := chromedp.Do(browser, chromedp.Navigate("about:blank")); err != nil {
			return nil, fmt.Errorf("start chromium: %w", err)
		}
		browsers[i] = browser
	}

	urls := make([]string, len(targets))
	for i, t := range targets {
		urls[i] = t.rtmp
	}
	sink, err := newFLVSink()
	if err != nil {
		return nil, err
	}
	defer sink.close()
	urls = append([]string{sink.url()}, urls...)
	began := time.Now()
	sink.t0 = began
	t0 := float64(began.UnixNano()) / 1e6
	ff := exec.CommandContext(ctx, "ffmpeg", latencyArgs(urls, seconds+10, scale)...)
	var stderr strings.Builder
	ff.Stderr = &stderr
	if err := ff.Start(); err != nil {
		return nil, err
	}
	defer func() { ff.Process.Kill(); ff.Wait() }()

	results := make([]latencyResult, len(targets))
	var wg sync.WaitGroup
	errs := make([]error, len(targets))
	for i, t := range targets {
		results[i].name = t.name
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = measure(browsers[i], ln.Addr().String(), t, t0, began, seconds, warmup, &results[i])
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("%s: %w (ffmpeg: %s)", targets[i].name, err, stderr.String())
		}
	}
	enc, frames, header := sink.median()
	for i := range results {
		results[i].encoder, results[i].frames, results[i].startup = enc, frames, header.Seconds()
	}
	return results, nil
}

// measure waits for the target's first playable playlist, then plays it
// in a tab for seconds and keeps the samples after warmup seconds.
func measure(browser context.Context, pageAddr string, t latencyTarget, t0 float64, began time.Time, seconds, warmup int, r *latencyResult) error {
	deadline := began.Add(30 * time.Second)
	for {
		if text, err := getText(t.playlist); err == nil && t.ready(text) {
			r.firstPart = time.Since(began)
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no playable playlist at %s within 30 s", t.playlist)
		}
		time.Sleep(20 * time.Millisecond)
	}
	tab := browser
	url := fmt.Sprintf("http://%s/?fps=%d&t0=%.3f&level=%s&src=%s", pageAddr, latencyFPS, t0, t.level, t.playlist)
	if os.Getenv("ONAIR_BENCH_TRACE") != "" {
		url += "&debug=1"
	}
	if err := chromedp.Do(tab, chromedp.Navigate(url)); err != nil {
		return err
	}
	var parts chan *partFollower
	if t.follow {
		parts = make(chan *partFollower, 1)
		fctx, cancel := context.WithTimeout(context.Background(), time.Duration(seconds)*time.Second)
		defer cancel()
		go func() { parts <- followParts(fctx, t.playlist, began) }()
	}
	time.Sleep(time.Duration(seconds) * time.Second)
	if parts != nil {
		f := <-parts
		r.published, r.parts = mid(f.lags), len(f.lags)
	}
	type result struct {
		Samples    [][4]float64
		FirstFrame float64
		Latency    float64
		Backwards  int
		Errors     map[string]int
		Trace      []any
		Logs       []string
		Resynced   float64
	}
	out, err := chromedp.Run(tab, chromedp.Evaluate[result](`({Samples: window.samples, FirstFrame: window.firstFrame, Latency: window.hls.latency, Backwards: window.backwards, Errors: window.errors, Trace: window.trace, Logs: window.logs, Resynced: window.resynced})`))
	if os.Getenv("ONAIR_BENCH_TRACE") != "" {
		for _, e := range out.Trace {
			fmt.Fprintf(os.Stderr, "TRACE %s %v\n", t.level, e)
		}
		for _, e := range out.Logs {
			fmt.Fprintf(os.Stderr, "LOG %s %s\n", t.level, e)
		}
	}
	if err != nil {
		return err
	}
	if out.FirstFrame == 0 {
		return fmt.Errorf("hls.js presented no frame of %s in %d s", t.playlist, seconds)
	}
	r.firstFrame = time.Duration((out.FirstFrame - t0) * 1e6)
	r.hlsLatency = out.Latency
	r.backwards = out.Backwards
	r.errors = out.Errors
	r.resynced = out.Resynced
	from := out.FirstFrame + float64(warmup)*1000
	var edge, made []float64
	for _, s := range out.Samples {
		// A clock beyond ffmpeg's first minute is a misread one.
		if s[0] >= from && s[3] >= 0 && s[3] < 60000 {
			made = append(made, s[3]/1000)
		}
	}
	r.madeAfter, r.clockRead = mid(made), len(made)
	for _, s := range out.Samples {
		if s[0] >= from && s[1] > 0 && s[1] < 60000 {
			r.samples = append(r.samples, s[1]/1000-r.madeAfter)
			edge = append(edge, s[2])
		}
	}
	r.hlsEdge = mid(edge)
	r.summarize()
	return nil
}

func getText(url string) (string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", url, resp.Status)
	}
	var b strings.Builder
	_, err = io.Copy(&b, bufio.NewReader(resp.Body))
	return b.String(), err
}

// latencyMarkdown is the markdown table of the measurement.
func latencyMarkdown(res []latencyResult, seconds, warmup int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| server | publish → first playable part/segment | publish → first frame shown | glass-to-glass median | p10 | p90 | max | samples | hls.js latency estimate |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range res {
		fmt.Fprintf(&b, "| %s | %.2f s | %.2f s | **%.2f s** | %.2f s | %.2f s | %.2f s | %d | %.2f s |\n",
			r.name, r.firstPart.Seconds(), r.firstFrame.Seconds(), r.p50, r.p10, r.p90, r.max, len(r.samples), r.hlsLatency)
	}
	fmt.Fprintf(&b, "\n%d s of playback per server after a %d s warm-up, 25 fps frames, both servers fed by one ffmpeg (tee) at the same time.\n", seconds-warmup, warmup)
	for _, r := range res {
		if r.published > 0 {
			fmt.Fprintf(&b, "%s, where the median goes (each a moment less the making of its media): encoder %.3f s (%d frames at an FLV sink); part published %.3f s (%d parts; %.3f s after the encoder); to glass %.2f s more (fetch, hold-back, presentation; hls.js's distance to the edge %.2f s).\n",
				r.name, r.encoder-r.madeAfter, r.frames, r.published-r.madeAfter, r.parts, r.published-r.encoder, r.p50-(r.published-r.madeAfter), r.hlsEdge)
		}
		if r.clockRead > 0 {
			fmt.Fprintf(&b, "%s: ffmpeg made each frame %.3f s after its nominal moment (its start + frame number ÷ frame rate; median of %d frames' clocks), its start-up before the first frame (%.2f s from its start to its first output), left out of every figure above; with it the median would be %.2f s.\n",
				r.name, r.madeAfter, r.clockRead, r.startup, r.p50+r.madeAfter)
		} else {
			fmt.Fprintf(&b, "%s: no frame's clock could be read; ffmpeg's start-up (%.2f s to its first output) is in every figure above.\n", r.name, r.startup)
		}
		if r.resynced > 0 {
			fmt.Fprintf(&b, "%s: the player started %.2f s behind its hold-back and jumped there (as OnAir's player does).\n", r.name, r.resynced)
		}
		if len(r.errors) > 0 {
			fmt.Fprintf(&b, "%s: hls.js errors %v.\n", r.name, r.errors)
		}
	}
	return b.String()
}
