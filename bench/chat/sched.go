package main

import (
	"fmt"
	"math"
	"os"
	"slices"
	"time"

	"github.com/prometheus/procfs"
)

// Where a POST's time goes when its round trip is far longer than the
// handler's own measure: waiting for a core. Over the posting window the
// benchmark reads, for each process on the machine that matters (the
// nodes, the viewers' processes, itself, mariadbd and redis-server), the
// CPU time of its threads and their time runnable but waiting on a run
// queue (/proc/PID/task/TID/schedstat, fields 1 and 2, in ns), and the
// machine's CPU use (/proc/stat). A thread that exits inside the window
// takes its figures with it; Go's and MariaDB's threads live as long as
// the process.

// procFS is the machine's /proc; were none mounted, every read through
// it fails and the report leaves those figures out.
func procFS() procfs.FS {
	fs, _ := procfs.NewDefaultFS()
	return fs
}

// threadTimes is one thread's CPU time and run-queue wait so far.
type threadTimes struct{ cpu, wait time.Duration }

// procSched is a process's threads' times, by thread id.
type procSched map[int]threadTimes

// readProcSched reads every thread of pid (prometheus/procfs reads
// /proc/PID/task/TID/schedstat).
func readProcSched(fs procfs.FS, pid int) (procSched, error) {
	threads, err := fs.AllThreads(pid)
	if err != nil {
		return nil, err
	}
	s := procSched{}
	for _, t := range threads {
		st, err := t.Schedstat()
		if err != nil {
			continue // the thread has exited since the listing
		}
		s[t.PID] = threadTimes{cpu: time.Duration(st.RunningNanoseconds), wait: time.Duration(st.WaitingNanoseconds)}
	}
	if len(s) == 0 {
		return nil, fmt.Errorf("process %d: no thread's schedstat", pid)
	}
	return s, nil
}

// usage is what a process did over a window: its threads' CPU time and
// run-queue wait, and how many threads it had at the end.
type usage struct {
	cpu, wait time.Duration
	threads   int
}

// since is the usage between before and s, thread by thread: a thread
// born in between counts from its start.
func (s procSched) since(before procSched) usage {
	u := usage{threads: len(s)}
	for tid, t := range s {
		b := before[tid]
		u.cpu += t.cpu - b.cpu
		u.wait += t.wait - b.wait
	}
	return u
}

// watched is a process whose usage a phase reports.
type watched struct {
	name string
	pid  int
}

// servicePIDs finds the processes whose command name (/proc/PID/comm) is
// one of names: mariadbd and redis-server run as services, not as the
// benchmark's children.
func servicePIDs(fs procfs.FS, names ...string) []watched {
	procs, _ := fs.AllProcs()
	var out []watched
	for _, p := range procs {
		comm, err := p.Comm()
		if err == nil && slices.Contains(names, comm) {
			out = append(out, watched{name: comm, pid: p.PID})
		}
	}
	return out
}

// schedSnapshot is the watched processes' threads at one moment, and the
// machine's CPU counters.
type schedSnapshot struct {
	at    time.Time
	procs []procSched // by the index of the watched process (nil: unreadable)
	cpu   machineCPU
}

func takeSnapshot(fs procfs.FS, ws []watched) schedSnapshot {
	s := schedSnapshot{at: time.Now(), procs: make([]procSched, len(ws))}
	for i, w := range ws {
		s.procs[i], _ = readProcSched(fs, w.pid)
	}
	s.cpu, _ = readMachineCPU(fs)
	return s
}

// procUsage is one watched process's usage over a window.
type procUsage struct {
	watched
	usage
	ok bool // read at both ends
}

// schedWindow is what the machine's processes did over a window.
type schedWindow struct {
	wall  time.Duration
	procs []procUsage
	cpu   machineCPU // the machine's CPU time over the window
}

func (s schedSnapshot) since(before schedSnapshot, ws []watched) schedWindow {
	w := schedWindow{wall: s.at.Sub(before.at), cpu: s.cpu.since(before.cpu)}
	for i, p := range ws {
		u := procUsage{watched: p}
		if s.procs[i] != nil && before.procs[i] != nil {
			u.usage, u.ok = s.procs[i].since(before.procs[i]), true
		}
		w.procs = append(w.procs, u)
	}
	return w
}

// machineCPU is the machine's CPU time by kind, summed over its cores
// (the first line of /proc/stat).
type machineCPU struct {
	user, nice, system, idle, iowait, irq, softirq, steal time.Duration
}

// readMachineCPU reads the "cpu" line of /proc/stat.
func readMachineCPU(fs procfs.FS) (machineCPU, error) {
	st, err := fs.Stat()
	if err != nil {
		return machineCPU{}, err
	}
	c := st.CPUTotal
	d := func(seconds float64) time.Duration { return time.Duration(math.Round(seconds * float64(time.Second))) }
	return machineCPU{user: d(c.User), nice: d(c.Nice), system: d(c.System), idle: d(c.Idle), iowait: d(c.Iowait),
		irq: d(c.IRQ), softirq: d(c.SoftIRQ), steal: d(c.Steal)}, nil
}

func (c machineCPU) since(b machineCPU) machineCPU {
	return machineCPU{user: c.user - b.user, nice: c.nice - b.nice, system: c.system - b.system, idle: c.idle - b.idle,
		iowait: c.iowait - b.iowait, irq: c.irq - b.irq, softirq: c.softirq - b.softirq, steal: c.steal - b.steal}
}

// busy is the CPU time not idle (nor idle waiting on I/O).
func (c machineCPU) busy() time.Duration {
	return c.user + c.nice + c.system + c.irq + c.softirq + c.steal
}

func (c machineCPU) total() time.Duration { return c.busy() + c.idle + c.iowait }

// perSecond is d as milliseconds per second of wall.
func perSecond(d, wall time.Duration) float64 {
	if wall <= 0 {
		return 0
	}
	return float64(d) / float64(time.Millisecond) / wall.Seconds()
}

// selfSched is this process's own usage since it started (the posting
// process reports it as it ends: it lives for the posting window alone).
func selfSched() (usage, bool) {
	s, err := readProcSched(procFS(), os.Getpid())
	if err != nil {
		return usage{}, false
	}
	return s.since(nil), true
}
