package main

import (
	"fmt"
	"strings"
	"time"
)

// Markdown is the report of a run: the verdict, the bound of each figure,
// the samples and what the load did.
func (r Result) Markdown() string {
	c := r.Config
	var b strings.Builder
	verdict := "passed"
	if !r.Passed() {
		verdict = "FAILED: " + r.Failures()
	}
	fmt.Fprintf(&b, "# Soak, %s\n\n", r.Started.UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, "`go run ./bench/soak -duration %s -interval %s -warmup %s` on %s (%s); load average at the end %s.\n\n",
		short(c.Duration), short(c.Interval), short(c.Warmup), r.CPUModel, cores(), r.LoadEnd)
	fmt.Fprintf(&b, "Load: %d live shows (ffmpeg, looped 360p25 ~560 kb/s FLV over RTMP), %d HLS viewers (one in five on LL-HLS parts; sessions of 1–5 min), "+
		"chat at %d messages/s through the API to %d WebSocket viewers (reconnecting every 30–120 s), a show update every %s to a show.updated webhook on a loopback receiver.\n\n",
		c.Shows, c.HLSViewers, c.ChatRate, c.ChatViewers, short(c.UpdateEvery))
	fmt.Fprintf(&b, "**Result: %s.**\n\n", verdict)

	b.WriteString("| figure | baseline (at the end of the warm-up) | min–max after | largest change | allowed | |\n|---|---:|---:|---:|---:|---|\n")
	for _, ch := range r.Checks {
		mark := "ok"
		if !ch.Passed {
			mark = "**broken**"
		}
		pct := 0.0
		if ch.Baseline > 0 {
			pct = 100 * ch.Worst / ch.Baseline
		}
		fmt.Fprintf(&b, "| %s | %s | %s–%s | %s (%.1f %%, at %s) | %s | %s |\n", ch.Name, ch.fmt(ch.Baseline), ch.fmt(ch.Min), ch.fmt(ch.Max),
			ch.fmt(ch.Worst), pct, short(ch.WorstAt.Round(time.Second)), ch.fmt(ch.Allowed), mark)
	}
	fmt.Fprintf(&b, "\nAllowed: %.0f %% of the baseline, or %d MiB of RSS, %d goroutines, %d descriptors when larger. Each figure of a sample is the least of %d readings %s apart.\n\n",
		100*c.Bound, c.RSSSlackMiB, c.GoroutineSlack, c.FDSlack, readings, readingEvery)

	b.WriteString("| at | RSS MiB | goroutines | fds | load | segments | parts | HLS errors | chats posted | chats delivered | webhooks |\n|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|\n")
	for _, s := range r.Samples {
		at := short(s.At.Round(time.Second))
		if s.At < c.Warmup-c.Interval/4 {
			at += " (warm-up)"
		}
		n := s.Counters
		fmt.Fprintf(&b, "| %s | %.1f | %d | %d | %s | %d | %d | %d | %d | %d | %d |\n", at, mib(s.RSS), s.Goroutines, s.FDs, s.Load,
			n.Segments, n.Parts, n.HLSErrors, n.ChatPosted, n.ChatDelivered, n.Webhooks)
	}
	f := r.Final
	fmt.Fprintf(&b, "\nOver %s: %d playlists, %d segments and %d parts fetched in %d viewer sessions, %d HLS errors; "+
		"%d chat messages posted (%d failed), %d deliveries to sockets over %d connections (%d failed to connect, %d closed by the server); "+
		"%d show updates (%d failed), %d webhook deliveries received; %d publisher restarts.\n",
		short(r.Elapsed.Round(time.Second)), f.Playlists, f.Segments, f.Parts, f.Sessions, f.HLSErrors,
		f.ChatPosted, f.ChatFailed, f.ChatDelivered, f.WSDials, f.WSFailed, f.WSDropped,
		f.Updates, f.UpdateFailed, f.Webhooks, f.PublisherRestarts)
	if w := r.Warm; w.HLSErrors > 0 || w.ChatFailed > 0 {
		fmt.Fprintf(&b, "\nIn the warm-up (not checked): %d HLS errors, %d chat POSTs failed.\n", w.HLSErrors, w.ChatFailed)
	}
	for _, p := range r.Problems {
		fmt.Fprintf(&b, "\n- problem: %s", p)
	}
	if len(r.Problems) > 0 {
		b.WriteString("\n")
	}
	return b.String()
}

// short prints a duration without its zero tails ("30m", "1m30s").
func short(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
