package main

import (
	"cmp"
	"fmt"
	"math"
	"os/exec"
	"runtime"
	"slices"
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
	ingest                []ingestSet     // per publisher count, each round: OnAir, nginx, OnAir audio-only shows
	idle                  []time.Duration // OnAir, nginx: CPU with no publisher over the same seconds
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

// ingestTable is the table of the ingest runs (with -srt, followed by the
// SRT table): with several rounds, each figure is the median of the
// rounds followed by every round's.
func (r *report) ingestTable() string {
	var b strings.Builder
	if !r.o.srtOnly {
		b.WriteString("| Publishers | OnAir CPU s/stream | nginx CPU s/stream | CPU OnAir ÷ nginx | OnAir first segment p50 (max) | nginx first segment p50 (max) | first segment OnAir ÷ nginx | OnAir audio-only show CPU s/stream | CPU audio-only ÷ A/V show | load (1/5/15 min) |\n")
		b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
		for _, set := range r.ingest {
			cpu := set.cpu()
			var cpuRatio, audioRatio []float64
			var first [2]ingestResult // every round's first segments, OnAir and nginx
			var loads []string
			for _, run := range set.runs {
				cpuRatio = append(cpuRatio, quotient(run[tOnAir].cpu.Seconds(), run[tNginx].cpu.Seconds()))
				audioRatio = append(audioRatio, quotient(run[tAudio].cpu.Seconds(), run[tOnAir].cpu.Seconds()))
				for j := range first {
					first[j].first = append(first[j].first, run[j].first...)
				}
				loads = append(loads, run[tNginx].load)
			}
			audioCPU, audioQ := rounds(cpu[tAudio], "%.2f"), rounds(audioRatio, "%.2f×")
			if !r.o.audio {
				audioCPU, audioQ = "–", "–"
			}
			fmt.Fprintf(&b, "| %d | %s | %s | %s | %s s (%s) | %s s (%s) | %s | %s | %s | %s |\n",
				set.publishers, rounds(cpu[tOnAir], "%.2f"), rounds(cpu[tNginx], "%.2f"), rounds(cpuRatio, "%.2f×"),
				secs(first[0].firstMedian()), secs(first[0].firstMax()), secs(first[1].firstMedian()), secs(first[1].firstMax()),
				ratio(first[0].firstMedian().Seconds(), first[1].firstMedian().Seconds()),
				audioCPU, audioQ, strings.Join(loads, "; "))
		}
	}
	if !r.o.srtOnly {
		b.WriteString("\n" + r.midTable())
	}
	if r.o.srt {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString(r.srtTable())
	}
	return b.String()
}

// midTable is the CPU of the middle of each stream (from 5 s after the
// publishers start to 2 s before their input ends), read from the
// processes' CPU clocks: the steady state, without the start, the end and
// the idle second of a round's whole-run figure.
func (r *report) midTable() string {
	var b strings.Builder
	b.WriteString("| Publishers | mid-stream OnAir CPU ms/s a stream | nginx | OnAir ÷ nginx | spread of the ratio (min–max) |\n")
	b.WriteString("|---:|---:|---:|---:|---|\n")
	for _, set := range r.ingest {
		var onair, ngx, q []float64
		for _, run := range set.runs {
			a, n := float64(run[tOnAir].mid)/1e6, float64(run[tNginx].mid)/1e6
			onair, ngx = append(onair, a), append(ngx, n)
			q = append(q, quotient(a, n))
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %.2f–%.2f× |\n", set.publishers,
			rounds(onair, "%.2f"), rounds(ngx, "%.2f"), rounds(q, "%.2f×"), slices.Min(q), slices.Max(q))
	}
	return b.String()
}

// cpu is each target's CPU seconds per stream, one value a round.
func (set ingestSet) cpu() [nTargets][]float64 {
	var cpu [nTargets][]float64
	for _, run := range set.runs {
		for j := range run {
			cpu[j] = append(cpu[j], run[j].cpu.Seconds())
		}
	}
	return cpu
}

// srtTable sets OnAir's SRT ingest beside its RTMP ingest of the same
// input and beside the floors of bare gosrt, in the same rounds.
func (r *report) srtTable() string {
	var b strings.Builder
	b.WriteString("| Publishers | OnAir RTMP CPU s/stream | OnAir SRT CPU s/stream | CPU SRT ÷ RTMP | bare gosrt CPU s/stream | gosrt + demuxer CPU s/stream | CPU SRT ÷ bare gosrt | CPU SRT ÷ gosrt + demuxer | SRT first segment p50 (max) | load (1/5/15 min) |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, set := range r.ingest {
		cpu := set.cpu()
		var vsRTMP, vsFloor, vsDemux []float64
		var first ingestResult
		var loads []string
		for _, run := range set.runs {
			srt := run[tSRT].cpu.Seconds()
			vsRTMP = append(vsRTMP, quotient(srt, run[tOnAir].cpu.Seconds()))
			vsFloor = append(vsFloor, quotient(srt, run[tFloor].cpu.Seconds()))
			vsDemux = append(vsDemux, quotient(srt, run[tFloorDemux].cpu.Seconds()))
			first.first = append(first.first, run[tSRT].first...)
			loads = append(loads, run[tSRT].load)
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s | %s | %s | %s s (%s) | %s |\n",
			set.publishers, rounds(cpu[tOnAir], "%.2f"), rounds(cpu[tSRT], "%.2f"), rounds(vsRTMP, "%.2f×"),
			rounds(cpu[tFloor], "%.2f"), rounds(cpu[tFloorDemux], "%.2f"), rounds(vsFloor, "%.2f×"), rounds(vsDemux, "%.2f×"),
			secs(first.firstMedian()), secs(first.firstMax()), strings.Join(loads, "; "))
	}
	return b.String()
}

// quotient is a/b, NaN when b is zero (a server that used no measurable CPU).
func quotient(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}

// rounds formats one figure of every round: the value alone for a single
// round, else the median then each round's value in order. NaN is "–".
func rounds(v []float64, format string) string {
	one := func(x float64) string {
		if math.IsNaN(x) {
			return "–"
		}
		return fmt.Sprintf(format, x)
	}
	if len(v) == 1 {
		return one(v[0])
	}
	each := make([]string, len(v))
	for i, x := range v {
		each[i] = one(x)
	}
	return fmt.Sprintf("**%s** (%s)", one(median(v)), strings.Join(each, ", "))
}

// median of v, NaN values last (so they count as the largest).
func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.SortFunc(s, func(a, b float64) int {
		switch {
		case math.IsNaN(a) && math.IsNaN(b):
			return 0
		case math.IsNaN(a):
			return 1
		case math.IsNaN(b):
			return -1
		}
		return cmp.Compare(a, b)
	})
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// notes lists failures and the thumbnail CPU, one bullet each.
func (r *report) notes() string {
	var b strings.Builder
	var notes []string
	if len(r.idle) == 2 {
		notes = append(notes, fmt.Sprintf("Idle, with no publisher, over %d s side by side: OnAir %.2f s of CPU, nginx %.2f s (included in every CPU figure above, divided by the publishers).",
			r.o.seconds, r.idle[0].Seconds(), r.idle[1].Seconds()))
	}
	for _, set := range r.ingest {
		var children []float64
		for _, run := range set.runs {
			for _, x := range run {
				notes = append(notes, x.failures...)
			}
			children = append(children, run[tOnAir].children.Seconds())
		}
		if slices.Max(children) > 0 {
			notes = append(notes, fmt.Sprintf("OnAir's thumbnail ffmpeg (niced child processes, not in the CPU column) used %s s/stream more with %d publisher(s).", rounds(children, "%.2f"), set.publishers))
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
	if o.rounds > 1 {
		extra += fmt.Sprintf(" -rounds %d", o.rounds)
	}
	if !o.audio {
		extra += " -audio=false"
	}
	switch {
	case o.srtOnly:
		extra += " -srt-only"
	case o.srt:
		extra += " -srt"
	}
	if o.ingestOnly {
		fmt.Fprintf(&b, "go run ./bench/live -ingest-only -publishers %s -seconds %d%s\n", strings.Join(pubs, ","), o.seconds, extra)
	} else {
		fmt.Fprintf(&b, "go run ./bench/live -publishers %s -seconds %d -wrk-duration %s -wrk-connections %d%s   # or: task bench -- live\n",
			strings.Join(pubs, ","), o.seconds, o.wrkDuration, o.wrkConns, extra)
	}
	fmt.Fprintf(&b, "# the input, once, into %s:\nffmpeg %s\n", "$XDG_CACHE_HOME/onair-bench", shellJoin(encodeArgs(inputName(o.inputSeconds, o.inputKbps), o.inputSeconds, o.inputKbps)))
	order := "OnAir, nginx, then OnAir's audio-only shows"
	if o.rounds > 1 {
		order += " (nginx first in every other round)"
	}
	fmt.Fprintf(&b, "# each publisher, against %s:\nffmpeg %s\n", order, shellJoin(publishArgs("$INPUT", "rtmp://127.0.0.1:$PORT/live/$KEY", o.seconds)))
	if o.srt {
		fmt.Fprintf(&b, "# then over SRT to OnAir, to a bare gosrt listener (bench/internal/srtfloor) and to one with the demuxer (-demux):\nffmpeg %s\n", shellJoin(publishArgs("$INPUT", "srt://127.0.0.1:$PORT?streamid=$KEY", o.seconds)))
	}
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
