package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
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

// threadTimes is one thread's CPU time and run-queue wait so far.
type threadTimes struct{ cpu, wait time.Duration }

// parseSchedstat reads a schedstat line: "CPU_NS WAIT_NS TIMESLICES".
func parseSchedstat(s string) (threadTimes, error) {
	f := strings.Fields(s)
	if len(f) < 2 {
		return threadTimes{}, fmt.Errorf("schedstat %q: want 3 fields", s)
	}
	cpu, err1 := strconv.ParseInt(f[0], 10, 64)
	wait, err2 := strconv.ParseInt(f[1], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return threadTimes{}, fmt.Errorf("schedstat %q: %w", s, err)
	}
	return threadTimes{cpu: time.Duration(cpu), wait: time.Duration(wait)}, nil
}

// procSched is a process's threads' times, by thread id.
type procSched map[int]threadTimes

// readProcSched reads every thread of pid under proc (/proc).
func readProcSched(proc string, pid int) (procSched, error) {
	dir := filepath.Join(proc, strconv.Itoa(pid), "task")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	s := procSched{}
	for _, e := range entries {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "schedstat"))
		if err != nil {
			continue // the thread has exited since the listing
		}
		t, err := parseSchedstat(string(b))
		if err != nil {
			return nil, fmt.Errorf("%d: %w", tid, err)
		}
		s[tid] = t
	}
	if len(s) == 0 {
		return nil, fmt.Errorf("%s: no thread's schedstat", dir)
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
func servicePIDs(proc string, names ...string) []watched {
	entries, _ := os.ReadDir(proc)
	var out []watched
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(proc, e.Name(), "comm"))
		if err != nil {
			continue
		}
		comm := strings.TrimSpace(string(b))
		for _, n := range names {
			if comm == n {
				out = append(out, watched{name: comm, pid: pid})
			}
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

func takeSnapshot(proc string, ws []watched) schedSnapshot {
	s := schedSnapshot{at: time.Now(), procs: make([]procSched, len(ws))}
	for i, w := range ws {
		s.procs[i], _ = readProcSched(proc, w.pid)
	}
	s.cpu, _ = readMachineCPU(filepath.Join(proc, "stat"))
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

// userHZ is the unit of /proc/stat (USER_HZ, 100 on every Linux
// architecture Go supports).
const userHZ = 100

// parseProcStat reads the "cpu" line of /proc/stat's text.
func parseProcStat(text string) (machineCPU, error) {
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) < 9 || f[0] != "cpu" {
			continue
		}
		var v [8]time.Duration
		for i := range v {
			n, err := strconv.ParseInt(f[i+1], 10, 64)
			if err != nil {
				return machineCPU{}, fmt.Errorf("/proc/stat: %q: %w", line, err)
			}
			v[i] = time.Duration(n) * time.Second / userHZ
		}
		return machineCPU{user: v[0], nice: v[1], system: v[2], idle: v[3], iowait: v[4], irq: v[5], softirq: v[6], steal: v[7]}, nil
	}
	return machineCPU{}, errors.New("/proc/stat: no cpu line")
}

func readMachineCPU(path string) (machineCPU, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return machineCPU{}, err
	}
	return parseProcStat(string(b))
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
	s, err := readProcSched("/proc", os.Getpid())
	if err != nil {
		return usage{}, false
	}
	return s.since(nil), true
}
