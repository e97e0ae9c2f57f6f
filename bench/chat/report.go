package main

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/onair/onair/bench/internal/benchkit"
)

type report struct {
	o                     options
	started               time.Time
	loadBefore, loadAfter string
	phases                []phase
	servicesNiced         string // the -services-nice processes ("" without)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond)) }

func (r *report) table() string {
	var b strings.Builder
	b.WriteString("| Viewer ids | Viewers (connected) | connect all | presence events received | delivery p50 (ms) | p99 (ms) | max (ms) | POST p50 / p99 (ms) | server: POST handler p99 / delivery p99 (ms) | delivered/s | ÷ ideal (viewers × rate) | sockets dropped by server (before posting / in all) | RSS per viewer (Go heap in use, stacks; goroutines) | CPU from the first POST to the last delivery: server / viewers / wall (s) | load (1/5/15 min) |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, p := range r.phases {
		perViewer := "–"
		if p.connected > 0 {
			n := float64(p.connected)
			perViewer = fmt.Sprintf("%.1f KB (heap %.1f, stacks %.1f KB; %.2f goroutines)", float64(p.rssAfter-p.rssBefore)/n/1024,
				(p.memAfter.heap-p.memBefore.heap)/n/1024, (p.memAfter.stack-p.memBefore.stack)/n/1024, (p.memAfter.goroutines-p.memBefore.goroutines)/n)
			if len(p.nodes) > 1 {
				perViewer = fmt.Sprintf("%s, the %d nodes' growth summed; per node %s", perViewer, len(p.nodes), p.perNode())
			}
		}
		p50, p99, pmax := ms(p.p50), ms(p.p99), ms(p.max)
		if p.samples == 0 {
			p50, p99, pmax = "–", "–", "–" // nothing reached a sampled socket
		}
		fmt.Fprintf(&b, "| %s | %d (%d) | %.1f s | %d | %s | %s | %s | %s / %s | %s | %.0f | %.3f | %d / %d | %s | %.1f / %.1f / %.1f | %s |\n",
			p.mode, p.viewers, p.connected, p.connectTime.Seconds(), p.presenceEvents,
			p50, p99, pmax, ms(p.postP50), ms(p.postP99), bucket(p.server.handler.quantile(0.99))+" / "+bucket(p.server.delivery.quantile(0.99)),
			p.perSecond(), p.fraction(), p.droppedBefore, p.droppedByServer, perViewer,
			p.cpuServer.Seconds(), p.cpuViewers.Seconds(), p.cpuWall.Seconds(), p.loadDuring)
	}
	for _, p := range r.phases {
		var notes []string
		if len(p.nodes) == 1 && r.o.cluster {
			notes = append(notes, "the server ran as one node of a multi-node deployment, on a MariaDB database and Redis (-cluster)")
		}
		if len(p.nodes) > 1 {
			counts := make([]string, len(p.nodes))
			for i, f := range p.nodes {
				counts[i] = fmt.Sprint(f.connected)
			}
			notes = append(notes, fmt.Sprintf("the crowd ran on %d OnAir nodes sharing one MariaDB database and one Redis, %s viewers connected to them, each node's read by a process of its own; the POSTs went to the nodes in turn; the server CPU, RSS and /metrics figures are the nodes' summed", len(p.nodes), strings.Join(counts, " / ")))
		}
		if p.maxConns > 0 {
			notes = append(notes, fmt.Sprintf("the descriptor limit (%d) could not be raised, so the server ran with ONAIR_MAX_CONNS=%d", p.maxConns+64, p.maxConns))
		}
		if p.dialFailures != "" {
			notes = append(notes, "sockets that failed to open: "+p.dialFailures)
		}
		if !p.settled {
			notes = append(notes, "presence events were still arriving 2 min after the last socket opened")
		}
		if p.limited+p.failed > 0 {
			notes = append(notes, fmt.Sprintf("POST answers: %d × 201, %d × 429, %d errors or timeouts (30 s); the server stored %d messages", p.ok, p.limited, p.failed, p.posted))
		}
		if p.postsOver50 > 0 {
			notes = append(notes, fmt.Sprintf("%d POSTs took over 50 ms from the poster's side; %d took over 50 ms in the server's handler", p.postsOver50, p.server.handler.over(0.05)))
		}
		if p.closedWhy != "" {
			notes = append(notes, "sockets the server ended: "+p.closedWhy)
		}
		if p.slowDrops > 0 {
			notes = append(notes, fmt.Sprintf("the server dropped %d sockets as slow (\"dropping slow socket\" in its log)", p.slowDrops))
		}
		if len(notes) > 0 {
			fmt.Fprintf(&b, "\n- %d viewers, %s ids: %s.", p.viewers, p.mode, strings.Join(notes, "; "))
		}
	}
	for _, p := range r.phases {
		if p.posting.wall > 0 {
			b.WriteString("\n\n" + strings.TrimSuffix(p.breakdown(), "\n"))
		}
	}
	return b.String()
}

// bucket is a histogram bound (seconds) as "≤ N" milliseconds.
func bucket(le float64) string {
	if math.IsInf(le, 1) {
		return "> 10,000"
	}
	return fmt.Sprintf("≤ %g", le*1000)
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

func (r *report) markdown() string {
	o := r.o
	counts := make([]string, len(o.viewers))
	for i, n := range o.viewers {
		counts[i] = fmt.Sprint(n)
	}
	var b strings.Builder
	servers := "server"
	if o.cluster {
		servers = "server (one node on MariaDB and Redis)"
	}
	if o.nodes > 1 {
		servers = fmt.Sprintf("%d OnAir nodes (one MariaDB database, one Redis)", o.nodes)
	}
	if o.nodeProcs > 0 {
		servers += fmt.Sprintf(" at GOMAXPROCS=%d", o.nodeProcs)
	}
	if r.servicesNiced != "" {
		servers += "; " + r.servicesNiced
	}
	fmt.Fprintf(&b, "Run of %s: %d cores (%s), %s, %s and clients on the same cores; load average %s before and %s after (1/5/15 min). %d messages a second for %d s from %d users in turn; latency sampled on %d sockets per crowd (every socket counted).\n\n",
		r.started.UTC().Format("2006-01-02 15:04 UTC"), runtime.NumCPU(), cpuModel(), runtime.Version(), servers, r.loadBefore, r.loadAfter,
		o.rate, o.seconds, o.posters, o.sample)
	b.WriteString(r.table())
	b.WriteString("\n\nCommand of this run:\n\n```sh\n")
	nodes := ""
	if o.nodes > 1 {
		nodes = fmt.Sprintf("-nodes %d ", o.nodes)
	} else if o.cluster {
		nodes = "-cluster "
	}
	if o.nodeProcs > 0 {
		nodes += fmt.Sprintf("-node-procs %d ", o.nodeProcs)
	}
	if o.servicesNice != 0 {
		nodes += fmt.Sprintf("-services-nice %d ", o.servicesNice)
	}
	fmt.Fprintf(&b, "bash bench/chat/run.sh %s-viewers %s -viewer-ids %s -rate %d -seconds %d   # or: task bench -- chat\n", nodes, strings.Join(counts, ","), strings.Join(o.modes, ","), o.rate, o.seconds)
	b.WriteString("```\n")
	return b.String()
}

// perNode is each node's RSS growth over its own viewers.
func (p phase) perNode() string {
	parts := make([]string, len(p.nodes))
	for i, f := range p.nodes {
		per := "–"
		if f.connected > 0 {
			per = fmt.Sprintf("%.1f KB", float64(f.rssAfter-f.rssBefore)/float64(f.connected)/1024)
		}
		parts[i] = fmt.Sprintf("%s of %d", per, f.connected)
	}
	return strings.Join(parts, ", ")
}

// breakdown tells where the phase's POST time went, measured: each
// node's POSTs as the poster timed them against its handler's own
// measure (the gap is the wait before and after the handler: accept,
// queues, a core), then each process's CPU and run-queue wait over the
// posting window, and the machine's CPU.
func (p phase) breakdown() string {
	var b strings.Builder
	w := p.posting
	fmt.Fprintf(&b, "**%d viewers, %s ids: where the POST time went**, over the posting window (%.1f s). The handler's time runs from the request read to the answer handed back; the rest of the round trip is outside it (connect, accept, the request and answer waiting for a core on either side). Run-queue wait is a process's threads' time runnable with no core free (/proc/PID/task/*/schedstat), per second of wall time.\n\n", p.viewers, p.mode, w.wall.Seconds())
	b.WriteString("| node | POSTs (201) | poster's round trip p50 / p99 (ms) | handler p50 / p99 (ms, interpolated in its /metrics buckets; the buckets' bounds) | handler samples |\n|---|---:|---:|---:|---:|\n")
	for i, f := range p.nodes {
		fmt.Fprintf(&b, "| %d | %d | %s / %s | %s / %s (%s / %s) | %d |\n", i+1, len(f.postLatency),
			ms(benchkit.Percentile(f.postLatency, 50)), ms(benchkit.Percentile(f.postLatency, 99)),
			estimateMS(f.handler, 0.5), estimateMS(f.handler, 0.99), bucket(f.handler.quantile(0.5)), bucket(f.handler.quantile(0.99)), f.handler.count)
	}
	b.WriteString("\n| process (pid) | CPU (ms/s) | run-queue wait (ms/s) | threads |\n|---|---:|---:|---:|\n")
	row := func(name string, u usage, wall time.Duration) {
		fmt.Fprintf(&b, "| %s | %.0f | %.0f | %d |\n", name, perSecond(u.cpu, wall), perSecond(u.wait, wall), u.threads)
	}
	for _, pu := range w.procs {
		name := fmt.Sprintf("%s (%d)", pu.name, pu.pid)
		if !pu.ok {
			fmt.Fprintf(&b, "| %s | – | – | – |\n", name)
			continue
		}
		row(name, pu.usage, w.wall)
	}
	if p.posterOK {
		row("posting process (over its life)", p.poster, w.wall)
	}
	if p.rowLocksOK {
		perPost := "–"
		if p.ok > 0 {
			perPost = fmt.Sprintf("%.1f", float64(p.rowLocks.timeMS)/float64(p.ok))
		}
		fmt.Fprintf(&b, "\nMariaDB's row-lock waits over the window (server-wide, Innodb_row_lock_waits and _time): %d waits, %d ms waited (%s ms per POST).\n",
			p.rowLocks.waits, p.rowLocks.timeMS, perPost)
	}
	if c := w.cpu; c.total() > 0 {
		cores := float64(runtime.NumCPU())
		share := func(d time.Duration) float64 { return cores * float64(d) / float64(c.total()) }
		fmt.Fprintf(&b, "\nThe machine: %.2f of %d cores busy (user %.2f, system %.2f, softirq %.2f, irq %.2f, steal %.2f; idle %.2f, iowait %.2f; /proc/stat).\n",
			share(c.busy()), runtime.NumCPU(), share(c.user+c.nice), share(c.system), share(c.softirq), share(c.irq), share(c.steal), share(c.idle), share(c.iowait))
	}
	return b.String()
}

// estimateMS is a histogram's q quantile in milliseconds.
func estimateMS(h buckets, q float64) string {
	if h.count == 0 {
		return "–"
	}
	v, beyond := h.estimate(q)
	if beyond {
		return fmt.Sprintf("> %g", v*1000)
	}
	return fmt.Sprintf("%.1f", v*1000)
}
