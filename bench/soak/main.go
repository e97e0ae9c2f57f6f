// Command soak runs one OnAir node under a steady mixed load for a long
// time and checks that it does not grow: its resident memory (RSS, from
// /proc/PID/status), goroutines (go_goroutines) and open descriptors
// (process_open_fds, both from /metrics), sampled at an interval, must stay
// within a bound of their value at the end of the warm-up.
//
// The load, all on 127.0.0.1 against the onair binary run as its own
// process (SQLite in a temporary data directory):
//
//   - 5 live shows, each an ffmpeg publisher copying a looped 360p
//     H.264+AAC FLV over RTMP (`-re -stream_loop -1 -c copy`);
//   - 500 HLS viewers, Go clients that poll a show's live media playlist
//     like a player and fetch each new segment (four in five) or each new
//     LL-HLS part (one in five), each on its own connections; a viewer's
//     session ends after 1–5 minutes and a fresh one (new connections)
//     takes its place, so connection set-up and tear-down run all along;
//   - chat posted through the REST API at 10 messages a second (40 users,
//     each within the one-a-second limit, over the 5 shows) to 100
//     WebSocket viewers, each reconnecting after 30–120 s;
//   - a webhook for show.updated registered through the API to a loopback
//     receiver of this program (ONAIR_WEBHOOK_ALLOW_PRIVATE=true), fed by a
//     show update every 2 s.
//
// It writes a markdown report (the samples, the bound per figure, what the
// load did) and exits 1 when a figure leaves its bound or the load did not
// run (no segment fetched, no chat delivered, no webhook received).
//
//	go run ./bench/soak                                  # 30 minutes, a sample a minute
//	go run ./bench/soak -duration 3m -interval 15s -warmup 45s -report ''
//	go run ./bench/soak -report bench/results/$(date -u +%F)-soak.md
//
// bench/soak/soak_test.go runs the short form under `go test`. Needs ffmpeg.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/onair/onair/bench/internal/benchkit"
)

func main() {
	c := defaultConfig()
	flag.DurationVar(&c.Duration, "duration", 30*time.Minute, "how long the load runs, warm-up included")
	flag.DurationVar(&c.Interval, "interval", time.Minute, "time between two samples")
	flag.DurationVar(&c.Warmup, "warmup", 5*time.Minute, "time before the baseline sample; samples before it are shown, not checked")
	flag.IntVar(&c.Shows, "shows", c.Shows, "live shows, one ffmpeg publisher each")
	flag.IntVar(&c.HLSViewers, "hls-viewers", c.HLSViewers, "HLS viewers over the shows")
	flag.IntVar(&c.ChatViewers, "chat-viewers", c.ChatViewers, "WebSocket chat viewers over the shows")
	flag.IntVar(&c.ChatRate, "chat-rate", c.ChatRate, "chat messages posted per second")
	flag.DurationVar(&c.UpdateEvery, "update-every", c.UpdateEvery, "time between two show updates (each a show.updated webhook delivery)")
	flag.Float64Var(&c.Bound, "bound", c.Bound, "allowed change from the baseline, as a fraction of it")
	flag.IntVar(&c.GoroutineSlack, "goroutine-slack", c.GoroutineSlack, "allowed change of goroutines when larger than the fraction")
	flag.IntVar(&c.FDSlack, "fd-slack", c.FDSlack, "allowed change of open descriptors when larger than the fraction")
	flag.Int64Var(&c.RSSSlackMiB, "rss-slack-mib", c.RSSSlackMiB, "allowed change of RSS in MiB when larger than the fraction")
	report := flag.String("report", "", "markdown file to write the report to (relative to the repository root; empty: standard output only)")
	flag.BoolVar(&c.Keep, "keep", false, "keep the temporary directory (server log, media)")
	flag.Parse()
	if err := c.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(2)
	}
	c.Log = func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, time.Now().UTC().Format("15:04:05 ")+format+"\n", args...)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := Run(ctx, c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
	text := res.Markdown()
	fmt.Print(text)
	if *report != "" {
		path := *report
		if !filepath.IsAbs(path) {
			root, err := benchkit.RepoRoot()
			if err != nil {
				fmt.Fprintln(os.Stderr, "soak:", err)
				os.Exit(1)
			}
			path = filepath.Join(root, path)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "soak:", err)
			os.Exit(1)
		}
		fmt.Fprintln(os.Stderr, "wrote", path)
	}
	if !res.Passed() {
		fmt.Fprintln(os.Stderr, "soak: FAILED:", res.Failures())
		os.Exit(1)
	}
}
