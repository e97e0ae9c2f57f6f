package main

import (
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

type servingRow struct {
	name         string
	bytes        int
	onair, nginx wrkResult
}

// report is everything a run prints and writes to the docs.
type report struct {
	o                     options
	input                 string
	inputRate             float64 // Mb/s
	started               time.Time
	loadBefore, loadAfter string
	cpuModel              string
	nginxConf             string
	nginxPrefix           string
	nginxRTMP             string
	ingest                [][3]ingestResult // per publisher count: OnAir, nginx, OnAir audio-only shows
	idle                  []time.Duration   // OnAir, nginx: CPU with no publisher over the same seconds
	segment               string
	segmentSize           int64
	serving               []servingRow
}

func ratio(a, b float64) string {
	if b == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

func secs(d time.Duration) string { return fmt.Sprintf("%.2f", d.Seconds()) }

func (r *report) tables() string {
	return r.ingestTable() + "\n" + r.servingTable() + r.notes()
}

// ingestTable is the table of the ingest runs.
func (r *report) ingestTable() string {
	var b strings.Builder
	b.WriteString("| Publishers | OnAir CPU s/stream | nginx CPU s/stream | CPU OnAir ÷ nginx | OnAir first segment p50 (max) | nginx first segment p50 (max) | first segment OnAir ÷ nginx | OnAir audio-only show CPU s/stream | CPU audio-only ÷ A/V show | load (1/5/15 min) |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, p := range r.ingest {
		a, n, au := p[0], p[1], p[2]
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s s (%s) | %s s (%s) | %s | %s | %s | %s |\n",
			a.publishers, secs(a.cpu), secs(n.cpu), ratio(a.cpu.Seconds(), n.cpu.Seconds()),
			secs(a.firstMedian()), secs(a.firstMax()), secs(n.firstMedian()), secs(n.firstMax()),
			ratio(a.firstMedian().Seconds(), n.firstMedian().Seconds()), secs(au.cpu), ratio(au.cpu.Seconds(), a.cpu.Seconds()), n.load)
	}
	return b.String()
}

// notes lists failures and the thumbnail CPU, one bullet each.
func (r *report) notes() string {
	var b strings.Builder
	var notes []string
	if len(r.idle) == 2 {
		notes = append(notes, fmt.Sprintf("Idle, with no publisher, over %d s side by side: OnAir %.2f s of CPU, nginx %.2f s (included in every CPU figure above, divided by the publishers).",
			r.o.seconds, r.idle[0].Seconds(), r.idle[1].Seconds()))
	}
	for _, p := range r.ingest {
		for _, x := range p {
			notes = append(notes, x.failures...)
		}
		if c := p[0].children; c > 0 {
			notes = append(notes, fmt.Sprintf("OnAir's thumbnail ffmpeg (niced child processes, not in the CPU column) used %.2f s/stream more with %d publisher(s).", c.Seconds(), p[0].publishers))
		}
	}
	for _, s := range r.serving {
		if s.onair.errors != "" {
			notes = append(notes, "OnAir "+s.name+": "+s.onair.errors)
		}
		if s.nginx.errors != "" {
			notes = append(notes, "nginx "+s.name+": "+s.nginx.errors)
		}
	}
	for _, n := range notes {
		b.WriteString("\n- " + n)
	}
	return b.String()
}

// servingTable is the table of the HLS requests.
func (r *report) servingTable() string {
	var b strings.Builder
	b.WriteString("| HLS request | bytes | OnAir req/s | nginx req/s | req/s OnAir ÷ nginx | OnAir CPU µs/request | nginx CPU µs/request | CPU OnAir ÷ nginx | OnAir p50 / p99 (each run) | nginx p50 / p99 (each run) |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, s := range r.serving {
		fmt.Fprintf(&b, "| %s | %d | %.0f | %.0f | %s | %.0f | %.0f | %s | %s / %s | %s / %s |\n",
			s.name, s.bytes, s.onair.rps, s.nginx.rps, ratio(s.onair.rps, s.nginx.rps),
			s.onair.cpuPerRequest(), s.nginx.cpuPerRequest(), ratio(s.onair.cpuPerRequest(), s.nginx.cpuPerRequest()),
			s.onair.p50, s.onair.p99, s.nginx.p50, s.nginx.p99)
	}
	return b.String()
}

// servingMarkdown is what a -serve-only run writes to the docs: the
// serving table, its notes and commands.
func (r *report) servingMarkdown() string {
	o := r.o
	var b strings.Builder
	fmt.Fprintf(&b, "Serving-only run (`-serve-only`) of %s: %d cores (%s), %s with GOMAXPROCS=%d, %s with %d workers; load average %s before and %s after (1/5/15 min). One publisher streamed %d s to OnAir first; the segment is one of its live playlist.\n\n",
		r.started.UTC().Format("2006-01-02 15:04 UTC"), runtime.NumCPU(), r.cpuModel, runtime.Version(), runtime.NumCPU(), nginxVersion(), o.nginxWorkers, r.loadBefore, r.loadAfter, o.seconds)
	b.WriteString(r.servingTable())
	for _, s := range r.serving {
		if s.onair.errors != "" {
			b.WriteString("\n- OnAir " + s.name + ": " + s.onair.errors)
		}
		if s.nginx.errors != "" {
			b.WriteString("\n- nginx " + s.name + ": " + s.nginx.errors)
		}
	}
	b.WriteString("\n\nCommands of this run:\n\n```sh\n")
	fmt.Fprintf(&b, "go run ./bench/live -serve-only -seconds %d -wrk-duration %s -wrk-connections %d\n", o.seconds, o.wrkDuration, o.wrkConns)
	fmt.Fprintf(&b, "# twice each in the order OnAir, nginx, nginx, OnAir; OnAir's /media/shows/$ID/$FILE, nginx's /static/$FILE (the same bytes):\nwrk %s\n```\n", shellJoin(wrkArgs("$URL", o.wrkThreads, o.wrkConns, o.wrkDuration)))
	return b.String()
}

func nginxVersion() string {
	out, err := exec.Command("nginx", "-v").CombinedOutput()
	if err != nil {
		return "nginx"
	}
	return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(out)), "nginx version: "))
}

func (r *report) markdown() string {
	o := r.o
	var b strings.Builder
	pubs := make([]string, len(o.publishers))
	for i, n := range o.publishers {
		pubs[i] = fmt.Sprint(n)
	}
	fmt.Fprintf(&b, "Run of %s: %d cores (%s), %s with GOMAXPROCS=%d, %s with %d workers; load average %s before and %s after (1/5/15 min).\n\n",
		r.started.UTC().Format("2006-01-02 15:04 UTC"), runtime.NumCPU(), r.cpuModel, runtime.Version(), runtime.NumCPU(), nginxVersion(), o.nginxWorkers, r.loadBefore, r.loadAfter)
	fmt.Fprintf(&b, "Input: %d s of `testsrc2` 1280×720 at 30 fps and a 440 Hz tone, H.264 (x264 veryfast, keyframe every 60 frames = 2 s) and AAC 128 kb/s in FLV, %.2f Mb/s in all. Each publisher streams the first %d s of it.\n\n",
		o.inputSeconds, r.inputRate, o.seconds)
	if o.ingestOnly {
		b.WriteString(r.ingestTable() + r.notes())
	} else {
		b.WriteString(r.tables())
	}
	b.WriteString("\n\nCommands of this run:\n\n```sh\n")
	extra := ""
	if o.partDuration != "" {
		extra = " -part-duration " + o.partDuration
	}
	if o.ingestOnly {
		fmt.Fprintf(&b, "go run ./bench/live -ingest-only -publishers %s -seconds %d%s\n", strings.Join(pubs, ","), o.seconds, extra)
	} else {
		fmt.Fprintf(&b, "go run ./bench/live -publishers %s -seconds %d -wrk-duration %s -wrk-connections %d%s   # or: task bench -- live\n",
			strings.Join(pubs, ","), o.seconds, o.wrkDuration, o.wrkConns, extra)
	}
	fmt.Fprintf(&b, "# the input, once, into %s:\nffmpeg %s\n", "$XDG_CACHE_HOME/onair-bench", shellJoin(encodeArgs("testsrc2-720p30-2500k-g60-60s.flv", o.inputSeconds)))
	fmt.Fprintf(&b, "# each publisher, against OnAir, nginx, then OnAir's audio-only shows:\nffmpeg %s\n", shellJoin(publishArgs("$INPUT", "rtmp://127.0.0.1:$PORT/live/$KEY", o.seconds)))
	if !o.ingestOnly {
		fmt.Fprintf(&b, "# serving, twice each in the order OnAir, nginx, nginx, OnAir; OnAir's /media/shows/$ID/$FILE, nginx's /static/$FILE (the same bytes):\nwrk %s\n", shellJoin(wrkArgs("$URL", o.wrkThreads, o.wrkConns, o.wrkDuration)))
	}
	b.WriteString("```\n\nThe nginx side (`nginx -p $PREFIX -g 'daemon off;'`):\n\n```nginx\n")
	conf := r.nginxConf
	if i := strings.Index(conf, "rtmp {"); i >= 0 {
		if j := strings.Index(conf, "\nhttp {"); j > i {
			conf = conf[i:j]
		}
	}
	conf = strings.ReplaceAll(conf, r.nginxPrefix, "$PREFIX")
	conf = strings.ReplaceAll(conf, r.nginxRTMP, "127.0.0.1:$PORT")
	b.WriteString(strings.TrimSpace(conf))
	b.WriteString("\n```\n")
	return b.String()
}

func shellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, " =;'\"*") && !strings.HasPrefix(a, "$") {
			a = "'" + a + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}
