package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/google/uuid"
)

// With -nodes above 1 the audience is more sockets than one process may
// hold (this container's descriptor limit is 20,000, and it cannot be
// raised), so each node's viewers are read by a process of their own:
// this binary run again with viewerChildArg, the same lean client as the
// in-process crowd (connect, readers, frames). The parent speaks to each
// child in JSON lines: a viewerJob on its stdin is answered with a
// viewerHello once the sockets are open; then "totals" with a
// viewerTotals, and "close" with a viewerFinal (the sampled latencies,
// how the server ended sockets), after which the child exits.

// viewerChildArg makes the benchmark's binary one viewers' process.
const viewerChildArg = "-viewer-child"

// audience is what a phase asks of its viewers, in this process (crowd)
// or in children (childCrowd).
type audience interface {
	totals() (chats, presence, other int64, closed int)
	// finish stops reading and closes every socket (once).
	finish() error
	// latencies and why are what finish gathered: the sampled delivery
	// latencies and how the server ended the sockets it closed.
	latencies() []time.Duration
	closedWhy() string
	// pids are the processes that read the sockets (their CPU is the
	// viewers').
	pids() []int
}

func (c *crowd) finish() error { c.close(); return nil }
func (c *crowd) pids() []int   { return []int{os.Getpid()} }

type viewerJob struct {
	URL         string
	Viewers     int
	Concurrency int
	Sample      int
	Within      time.Duration
	SharedID    string // the one viewer id of every socket ("" : one each)
	// CPUProfile is where "profile" writes the process's CPU profile of
	// the next ProfileSeconds (or until "close").
	CPUProfile     string
	ProfileSeconds int
}

// viewerAck answers "profile": Err is why it could not start.
type viewerAck struct{ Err string }

type viewerHello struct {
	Connected int
	Failed    []string
}

type viewerTotals struct {
	Chats, Presence, Other int64
	Closed                 int
}

type viewerFinal struct {
	Latency []time.Duration
	Why     []string
}

// viewerChild is a viewers' process: its job from stdin, its answers on
// stdout.
func viewerChild(ctx context.Context, in io.Reader, out io.Writer) error {
	dec, enc := json.NewDecoder(in), json.NewEncoder(out)
	var job viewerJob
	if err := dec.Decode(&job); err != nil {
		return err
	}
	cookie := uuid.NewString
	if job.SharedID != "" {
		cookie = func() string { return job.SharedID }
	}
	c, err := connect(ctx, job.URL, job.Viewers, job.Concurrency, job.Sample, job.Within, cookie)
	if err != nil {
		return err
	}
	defer c.close()
	stopProfile := func() {}
	defer func() { stopProfile() }()
	if err := enc.Encode(viewerHello{Connected: len(c.viewers), Failed: c.failed}); err != nil {
		return err
	}
	for {
		var op string
		if err := dec.Decode(&op); err != nil {
			return err
		}
		switch op {
		case "totals":
			var t viewerTotals
			t.Chats, t.Presence, t.Other, t.Closed = c.totals()
			err = enc.Encode(t)
		case "profile":
			var ack viewerAck
			if stopProfile, err = startCPUProfile(job.CPUProfile, time.Duration(job.ProfileSeconds)*time.Second); err != nil {
				ack.Err, stopProfile = err.Error(), func() {}
			}
			err = enc.Encode(ack)
		case "close":
			stopProfile()
			c.close()
			var f viewerFinal
			f.Latency = c.latencies()
			for _, v := range c.viewers {
				if v.why != "" {
					f.Why = append(f.Why, v.why)
				}
			}
			return enc.Encode(f)
		default:
			err = fmt.Errorf("unknown request %q", op)
		}
		if err != nil {
			return err
		}
	}
}

// kid is one viewers' process as the parent sees it.
type kid struct {
	cmd *exec.Cmd
	enc *json.Encoder
	dec *json.Decoder
	in  io.Closer
}

// childCrowd is the viewers of a phase spread over processes.
type childCrowd struct {
	kids   []*kid
	mu     sync.Mutex // one request at a time on the pipes
	once   sync.Once
	err    error
	final  viewerFinal
	failed []string
	// connected is each child's open sockets.
	connected []int
}

// connectChildren starts one viewers' process per job and waits until
// each has opened its sockets.
func connectChildren(ctx context.Context, jobs []viewerJob) (*childCrowd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	c := &childCrowd{connected: make([]int, len(jobs))}
	for _, job := range jobs {
		cmd := exec.CommandContext(ctx, exe, viewerChildArg)
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			c.finish()
			return nil, err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			c.finish()
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			c.finish()
			return nil, fmt.Errorf("viewers' process: %w", err)
		}
		k := &kid{cmd: cmd, enc: json.NewEncoder(stdin), dec: json.NewDecoder(bufio.NewReader(stdout)), in: stdin}
		c.kids = append(c.kids, k)
		if err := k.enc.Encode(job); err != nil {
			c.finish()
			return nil, err
		}
	}
	hellos := make([]viewerHello, len(c.kids))
	errs := make([]error, len(c.kids))
	var wg sync.WaitGroup
	for i, k := range c.kids {
		wg.Go(func() { errs[i] = k.dec.Decode(&hellos[i]) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		c.finish()
		return nil, fmt.Errorf("viewers' process: %w", err)
	}
	for i, h := range hellos {
		c.connected[i] = h.Connected
		c.failed = append(c.failed, h.Failed...)
	}
	return c, nil
}

// ask sends op to every child and decodes each answer into out(i).
func (c *childCrowd) ask(op string, out func(i int) any) error {
	for _, k := range c.kids {
		if err := k.enc.Encode(op); err != nil {
			return err
		}
	}
	for i, k := range c.kids {
		if err := k.dec.Decode(out(i)); err != nil {
			return fmt.Errorf("viewers' process %d: %w", i, err)
		}
	}
	return nil
}

// profile starts each child's CPU profile (viewerJob.CPUProfile).
func (c *childCrowd) profile() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	acks := make([]viewerAck, len(c.kids))
	if err := c.ask("profile", func(i int) any { return &acks[i] }); err != nil {
		c.err = err
		return err
	}
	var errs []error
	for i, a := range acks {
		if a.Err != "" {
			errs = append(errs, fmt.Errorf("viewers' process %d: profile: %s", i, a.Err))
		}
	}
	return errors.Join(errs...)
}

// startCPUProfile writes this process's CPU profile to path for d (or
// until the returned stop is called, whichever is first).
func startCPUProfile(path string, d time.Duration) (stop func(), err error) {
	if path == "" {
		return nil, errors.New("no profile path")
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			pprof.StopCPUProfile()
			f.Close()
		})
	}
	time.AfterFunc(d, stop)
	return stop, nil
}

func (c *childCrowd) totals() (chats, presence, other int64, closed int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ts := make([]viewerTotals, len(c.kids))
	if c.err == nil {
		c.err = c.ask("totals", func(i int) any { return &ts[i] })
	}
	t := sumTotals(ts)
	return t.Chats, t.Presence, t.Other, t.Closed
}

func (c *childCrowd) finish() error {
	c.once.Do(func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		finals := make([]viewerFinal, len(c.kids))
		err := c.err
		if err == nil && len(c.kids) > 0 {
			err = c.ask("close", func(i int) any { return &finals[i] })
		}
		for _, k := range c.kids {
			k.in.Close()
			if werr := k.cmd.Wait(); werr != nil && err == nil {
				err = fmt.Errorf("viewers' process: %w", werr)
			}
		}
		c.final = mergeFinals(finals)
		c.err = err
	})
	return c.err
}

func (c *childCrowd) latencies() []time.Duration { return c.final.Latency }
func (c *childCrowd) closedWhy() string          { return summarizeFailures(c.final.Why) }

func (c *childCrowd) pids() []int {
	var p []int
	for _, k := range c.kids {
		p = append(p, k.cmd.Process.Pid)
	}
	return p
}

// sumTotals adds the children's counters.
func sumTotals(ts []viewerTotals) viewerTotals {
	var sum viewerTotals
	for _, t := range ts {
		sum.Chats += t.Chats
		sum.Presence += t.Presence
		sum.Other += t.Other
		sum.Closed += t.Closed
	}
	return sum
}

// mergeFinals puts the children's latency samples and endings together.
func mergeFinals(fs []viewerFinal) viewerFinal {
	var all viewerFinal
	for _, f := range fs {
		all.Latency = append(all.Latency, f.Latency...)
		all.Why = append(all.Why, f.Why...)
	}
	return all
}

// shares splits n viewers over k nodes as evenly as whole sockets allow
// (the first nodes take one more).
func shares(n, k int) []int {
	s := make([]int, k)
	for i := range s {
		s[i] = n / k
		if i < n%k {
			s[i]++
		}
	}
	return s
}
