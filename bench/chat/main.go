// Command chat is the benchmark of chat fan-out: one show's room with
// 2,000, 5,000 then 10,000 WebSocket viewers on this machine while
// messages are posted through the REST API at 20 a second.
//
// It builds the onair binary and runs it as its own process (SQLite in a
// temporary data directory, 127.0.0.1), so the client's memory and CPU are
// not mixed into the server's; the server starts afresh for each crowd.
// Each viewer is an anonymous socket of the public room route with a
// viewer cookie of its own. Messages come from a pool of users (twice the
// rate, so each user posts every 2 s, within the one-a-second limit), each
// with the send time in its text, sent by a process of their own (this
// binary run again with -post-child): a poster is not one of the
// audience, and the POSTs must not wait for a core behind the benchmark's
// own thousands of reading sockets. The benchmark reports delivery latency
// from the POST to the receipt (p50/p99 over a sample of sockets), the
// POST's own latency (p50/p99), the sockets the server dropped,
// messages delivered per second (counted on every socket) as a fraction of
// the ideal viewers × rate, and the server's RSS growth per viewer
// (/proc/PID/status before and after the crowd connects).
//
//	go run ./bench/chat                          # 2,000, 5,000 and 10,000 viewers
//	go run ./bench/chat -viewers 500,2000 -seconds 10 -docs ''
//	bash bench/chat/run.sh -nodes 2 -viewers 20000 -viewer-ids distinct
//
// With -nodes N the room is served by N onair processes on one MariaDB
// database and one Redis, as a multi-node deployment runs (nodes.go): the
// viewers are split evenly over the nodes, each node's read by a process
// of its own (children.go), and the POSTs go to the nodes in turn.
//
// 10,000 sockets need that many file descriptors in both processes (the Go
// runtime raises the soft limit to the hard one; bench/chat/run.sh raises
// the hard one). It is a program, not a timed test: the figures go to
// bench/results/DATE-chat.md (docs/benchmarks.md has the current ones).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/onair/onair/bench/internal/benchkit"
)

type options struct {
	viewers     []int
	modes       []string
	rate        int
	seconds     int
	posters     int
	sample      int
	concurrency int
	connectMax  time.Duration
	docs        string
	keep        bool
	profile     string
	profileSecs int
	traceSecs   int
	nodes       int
	nodesDB     string
	nodesRedis  string
	cluster     bool // MariaDB and Redis even with one node
	nodeProcs   int  // GOMAXPROCS of each node (0: the runtime's)
	// servicesNice, when not 0, is the autogroup nice the run gives the
	// machine's MariaDB and Redis (priority.go).
	servicesNice int
}

func main() {
	if len(os.Args) == 2 && os.Args[1] == postChildArg {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := postChild(ctx)
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, "chat: posting process:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) == 2 && os.Args[1] == viewerChildArg {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := viewerChild(ctx, os.Stdin, os.Stdout)
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, "chat: viewers' process:", err)
			os.Exit(1)
		}
		return
	}
	var o options
	counts := flag.String("viewers", benchkit.EnvOr("ONAIR_BENCH_VIEWERS", "2000,5000,10000"), "comma-separated crowd sizes, one phase each ($ONAIR_BENCH_VIEWERS)")
	modes := flag.String("viewer-ids", benchkit.EnvOr("ONAIR_BENCH_VIEWER_IDS", "distinct,shared"), "distinct: every socket is a viewer of its own (each join and leave is a presence event to the room); shared: one viewer id on every socket (one presence event), to measure message fan-out alone; comma-separated, one phase per crowd and mode ($ONAIR_BENCH_VIEWER_IDS)")
	flag.IntVar(&o.rate, "rate", envInt("ONAIR_BENCH_RATE", 20), "messages posted per second ($ONAIR_BENCH_RATE)")
	flag.IntVar(&o.seconds, "seconds", envInt("ONAIR_BENCH_SECONDS", 20), "seconds of posting per phase ($ONAIR_BENCH_SECONDS)")
	flag.IntVar(&o.posters, "posters", 0, "users who post, in turn (default twice the rate: each posts every 2 s)")
	flag.IntVar(&o.sample, "sample", 1000, "sockets whose delivery latency is recorded (deliveries are counted on all)")
	flag.IntVar(&o.concurrency, "dial-concurrency", 64, "sockets being opened at once")
	flag.DurationVar(&o.connectMax, "connect-within", 3*time.Minute, "give up opening sockets after this long")
	flag.StringVar(&o.docs, "docs", "bench/results/"+time.Now().UTC().Format("2006-01-02")+"-chat.md", "markdown file whose \"Chat fan-out\" section gets the figures, made if missing (empty: only print)")
	flag.BoolVar(&o.keep, "keep", false, "keep the temporary directory (server log, database)")
	flag.StringVar(&o.profile, "profile", "", "directory for each node's CPU profile of each phase's posting and its heap with the crowd connected (runs the onair build with pprof), and the viewers' CPU profile of the same time (this process's with one node, each viewers' process's with more): chat-N-MODE.{cpu,heap,viewers.cpu}.pprof, with -nodes above 1 chat-N-MODE-nodeI.{cpu,heap}.pprof and chat-N-MODE-viewersI.cpu.pprof")
	flag.IntVar(&o.profileSecs, "profile-seconds", 20, "length of the CPU profile from the first POST")
	flag.IntVar(&o.traceSecs, "trace-seconds", 0, "with -profile: also each node's Go execution trace of this many seconds from the middle of the posting, chat-N-MODE[-nodeI].trace (where the handlers wait: go tool trace -pprof=net|sched|syscall FILE); tracing slows the nodes a little")
	flag.IntVar(&o.nodes, "nodes", 1, "OnAir nodes sharing one MariaDB database (-nodes-db) and one Redis (-nodes-redis), as a multi-node deployment does; the viewers are split evenly over them, each node's read by a process of its own, and the POSTs go to each node in turn (nodes.go)")
	flag.StringVar(&o.nodesDB, "nodes-db", "mysql://root@127.0.0.1:3306/onair_bench_chat", "with -nodes above 1 (or -cluster): the MariaDB database of the nodes, dropped and made afresh for the run, which holds MariaDB's named lock on it (a second run at the same time is refused)")
	flag.StringVar(&o.nodesRedis, "nodes-redis", "redis://127.0.0.1:6379/0", "with -nodes above 1: the Redis of the nodes; the run's keys have a prefix of their own (onair_bench_chat:RANDOM:) and are deleted at its end")
	flag.IntVar(&o.nodeProcs, "node-procs", 0, "GOMAXPROCS of each OnAir node (0: the Go runtime's, every core the process may use); with -nodes 2 on two cores, 1 gives each node a core's worth, as a container's CPU limit of one core would")
	flag.BoolVar(&o.cluster, "cluster", false, "run the node(s) on -nodes-db and -nodes-redis even with -nodes 1 (implied by -nodes above 1): one node of a multi-node deployment, to tell what the shared parts cost from what a second node does")
	flag.IntVar(&o.servicesNice, "services-nice", 0, "with -nodes above 1 (or -cluster): for the run, the autogroup nice (-20 to 19) of this machine's mariadbd/mysqld and redis-server processes, the CPU weight docs/operations.md has a one-box deployment give them (-10: about 9 times a session's default); given back at the end (not after a kill -9); 0 leaves them alone; root, and the kernel's autogroups on")
	flag.Parse()
	o.cluster = o.cluster || o.nodes > 1
	if o.servicesNice != 0 && (!o.cluster || o.servicesNice < -20 || o.servicesNice > 19) {
		fmt.Fprintln(os.Stderr, "chat: -services-nice needs -nodes above 1 or -cluster, and a nice from -20 to 19")
		os.Exit(2)
	}
	for _, s := range strings.Split(*counts, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > 50_000 {
			fmt.Fprintf(os.Stderr, "chat: -viewers: %q is not a count between 1 and 50000\n", s)
			os.Exit(2)
		}
		o.viewers = append(o.viewers, n)
	}
	for _, m := range strings.Split(*modes, ",") {
		if m = strings.TrimSpace(m); m != "distinct" && m != "shared" {
			fmt.Fprintf(os.Stderr, "chat: -viewer-ids: %q is neither distinct nor shared\n", m)
			os.Exit(2)
		}
		o.modes = append(o.modes, strings.TrimSpace(m))
	}
	if o.rate < 1 || o.rate > 1000 || o.seconds < 1 || o.seconds > 600 {
		fmt.Fprintln(os.Stderr, "chat: -rate must be 1–1000 and -seconds 1–600")
		os.Exit(2)
	}
	if o.nodes < 1 || o.nodes > 8 {
		fmt.Fprintln(os.Stderr, "chat: -nodes must be 1–8")
		os.Exit(2)
	}
	if o.traceSecs < 0 || o.traceSecs > 0 && o.profile == "" {
		fmt.Fprintln(os.Stderr, "chat: -trace-seconds needs -profile DIR")
		os.Exit(2)
	}
	if o.posters == 0 {
		o.posters = 2 * o.rate
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "chat:", err)
		os.Exit(1)
	}
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return n
	}
	return def
}

// phase is the result of one crowd.
type phase struct {
	mode                string
	viewers, connected  int
	connectTime         time.Duration
	dialFailures        string
	presenceEvents      int64
	settled             bool
	rssBefore, rssAfter int64
	memBefore, memAfter memory // the server's Go heap and stacks, without and with the crowd
	posted              int    // messages the server stored
	ok, limited, failed int    // POST answers: 201, 429, other or none
	postP50, postP99    time.Duration
	postsOver50         int         // POSTs whose round trip took over 50 ms
	server              serverTimes // what the server measured of the phase
	delivered           int64
	window              time.Duration // first POST to last delivery
	p50, p99, max       time.Duration
	samples             int
	droppedBefore       int // sockets the server closed before posting began
	droppedByServer     int // ... by the end of the phase
	closedWhy           string
	slowDrops           int
	loadDuring          string
	maxConns            int // ONAIR_MAX_CONNS the server ran with (0: derived)
	nodes               []nodeFigures
	// posting is what the machine's processes did over the posting
	// window (sched.go); poster is the posting process's own usage.
	posting  schedWindow
	poster   usage
	posterOK bool
	// rowLocks is MariaDB's row-lock waits over the posting window
	// (-cluster and -nodes only; rowLocksOK says it was read).
	rowLocks   rowLocks
	rowLocksOK bool
	// CPU time from the first POST to the last delivery: the server's, and
	// this process's (the viewers reading), over the wall time between.
	cpuServer, cpuViewers, cpuWall time.Duration
}

// nofile is this process's descriptor limit (the server inherits the hard one).
func nofile() (soft, hard uint64) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, 0
	}
	return rl.Cur, rl.Max
}

func run(ctx context.Context, o options) error {
	root, err := benchkit.RepoRoot()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "onair-bench-chat-")
	if err != nil {
		return err
	}
	if o.keep {
		fmt.Fprintln(os.Stderr, "keeping", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	bin, err := benchkit.Build(root, tmp, o.profile != "")
	if err != nil {
		return err
	}
	env := map[string]string{}
	if o.profile != "" {
		if err := os.MkdirAll(o.profile, 0o755); err != nil {
			return err
		}
	}
	if o.cluster {
		shared, cleanup, err := sharedParts(ctx, o)
		if err != nil {
			return err
		}
		defer cleanup()
		for k, v := range shared {
			env[k] = v
		}
	}
	var servicesNiced string
	if o.servicesNice != 0 {
		ps, err := niceServices(servicesToNice(procFS()), o.servicesNice)
		if err != nil {
			return err
		}
		defer restoreNice(ps)
		servicesNiced = describeNice(ps, o.servicesNice)
		fmt.Fprintln(os.Stderr, servicesNiced)
	}
	var nodes []*benchkit.Server
	for i := range o.nodes {
		dataDir := filepath.Join(tmp, "onair")
		if o.nodes > 1 {
			dataDir = filepath.Join(tmp, fmt.Sprintf("onair-%d", i+1))
		}
		if err := os.MkdirAll(dataDir, 0o755); err != nil {
			return err
		}
		srv, err := benchkit.NewServer(bin, dataDir, maps.Clone(env))
		if err != nil {
			return err
		}
		if o.nodeProcs > 0 {
			srv.Env["GOMAXPROCS"] = strconv.Itoa(o.nodeProcs)
		}
		if o.profile != "" { // each node's pprof on an address of its own
			if srv.Env["ONAIR_BENCH_PPROF_ADDR"], err = benchkit.FreeAddr(); err != nil {
				return err
			}
		}
		nodes = append(nodes, srv)
	}
	fmt.Fprintf(os.Stderr, "creating %d posting users...\n", o.posters)
	tokens, err := createPosters(nodes[0], o.posters)
	if err != nil {
		return err
	}
	rep := report{o: o, started: time.Now(), loadBefore: benchkit.LoadAvg(), servicesNiced: servicesNiced}
	for _, mode := range o.modes {
		for _, n := range o.viewers {
			p, err := runPhase(ctx, nodes, tokens, n, mode, o)
			if err != nil {
				return fmt.Errorf("%d viewers (%s ids): %w", n, mode, err)
			}
			rep.phases = append(rep.phases, p)
		}
	}
	rep.loadAfter = benchkit.LoadAvg()
	fmt.Println(rep.table())
	if o.docs != "" {
		path := o.docs
		if !filepath.IsAbs(path) {
			path = filepath.Join(root, path)
		}
		if err := benchkit.WriteSection(path, "Chat fan-out", "bench/chat", rep.markdown()); err != nil {
			return err
		}
		fmt.Fprintln(os.Stderr, "wrote the figures into", path)
	}
	return nil
}

// createPosters makes the posting users with the CLI, the first alone
// (it may migrate a fresh database), the rest eight at a time.
func createPosters(srv *benchkit.Server, n int) ([]string, error) {
	tokens := make([]string, n)
	errs := make([]error, n)
	create := func(i int) {
		_, tokens[i], errs[i] = srv.CreateUser(fmt.Sprintf("Poster %d", i+1), fmt.Sprintf("poster%d@bench.invalid", i+1))
	}
	create(0)
	if errs[0] != nil {
		return nil, errs[0]
	}
	var (
		wg   sync.WaitGroup
		next atomic.Int64
	)
	for range 8 {
		wg.Go(func() {
			for i := int(next.Add(1)); i < n; i = int(next.Add(1)) {
				create(i)
			}
		})
	}
	wg.Wait()
	return tokens, errors.Join(errs...)
}

// nodeCap sets the server's connection cap for a share of n sockets. The
// cap is derived from its descriptor limit (ONAIR_MAX_CONNS=0: the limit
// less an eighth). Where the hard limit cannot be raised (run.sh tries)
// and the share does not fit under that cap, the cap is set as an
// operator would for a server of sockets alone: the limit less 64
// descriptors for its files and the POSTs. It returns the cap set (0:
// derived).
func nodeCap(srv *benchkit.Server, n int) int {
	delete(srv.Env, "ONAIR_MAX_CONNS")
	if _, hard := nofile(); n+256 > int(hard-max(128, hard/8)) {
		srv.Env["ONAIR_MAX_CONNS"] = strconv.Itoa(int(hard) - 64)
		return int(hard) - 64
	}
	return 0
}

// readEachTimes reads readServerTimes of every node.
func readEachTimes(ctx context.Context, nodes []*benchkit.Server) ([]serverTimes, error) {
	each := make([]serverTimes, len(nodes))
	for i, srv := range nodes {
		t, err := readServerTimes(ctx, srv)
		if err != nil {
			return nil, err
		}
		each[i] = t
	}
	return each, nil
}

// sumTimes sums the nodes' serverTimes.
func sumTimes(each []serverTimes) serverTimes {
	var sum serverTimes
	for _, t := range each {
		sum = sum.add(t)
	}
	return sum
}

// readAllTimes sums readServerTimes over the nodes.
func readAllTimes(ctx context.Context, nodes []*benchkit.Server) (serverTimes, error) {
	each, err := readEachTimes(ctx, nodes)
	return sumTimes(each), err
}

// watchedProcs lists the processes whose CPU and run-queue wait a phase
// reports: the nodes, the viewers' processes, this one (the viewers'
// with one node), and the MariaDB and Redis servers on the machine.
func watchedProcs(nodes []*benchkit.Server, c audience) []watched {
	var ws []watched
	for i, node := range nodes {
		ws = append(ws, watched{name: fmt.Sprintf("node %d", i+1), pid: node.PID()})
	}
	if _, ok := c.(*childCrowd); ok {
		for i, pid := range c.pids() {
			ws = append(ws, watched{name: fmt.Sprintf("viewers %d", i+1), pid: pid})
		}
		ws = append(ws, watched{name: "bench", pid: os.Getpid()})
	} else {
		ws = append(ws, watched{name: "bench (the viewers)", pid: os.Getpid()})
	}
	return append(ws, servicePIDs(procFS(), "mariadbd", "mysqld", "redis-server")...)
}

func pidsOf(nodes []*benchkit.Server) []int {
	pids := make([]int, len(nodes))
	for i, srv := range nodes {
		pids[i] = srv.PID()
	}
	return pids
}

// runPhase starts the servers, fills the room with n viewers split over
// them, posts for the configured time and measures what reached them.
func runPhase(ctx context.Context, nodes []*benchkit.Server, tokens []string, n int, mode string, o options) (phase, error) {
	p := phase{viewers: n, mode: mode}
	split := shares(n, len(nodes))
	// profPath names a profile: chat-N-MODE.KIND of the one node
	// (chat-N-MODE.viewers.KIND of this process's viewers), with more
	// nodes chat-N-MODE-node1.KIND, ...-viewers1.KIND (KIND: cpu.pprof,
	// heap.pprof, trace).
	profPath := func(i int, who, kind string) string {
		name := fmt.Sprintf("chat-%d-%s", n, mode)
		switch {
		case len(nodes) > 1:
			name += fmt.Sprintf("-%s%d", who, i+1)
		case who == "viewers":
			name += ".viewers"
		}
		return filepath.Join(o.profile, name+"."+kind)
	}
	p.nodes = make([]nodeFigures, len(nodes))
	for i, srv := range nodes {
		p.maxConns = max(p.maxConns, nodeCap(srv, split[i]))
	}
	stopAll := func() {
		var wg sync.WaitGroup
		for _, srv := range nodes {
			wg.Go(srv.Stop)
		}
		wg.Wait()
	}
	defer stopAll()
	logStart := make([]int, len(nodes))
	for i, srv := range nodes {
		if err := srv.Start(); err != nil {
			return p, err
		}
		logStart[i] = len(srv.Log())
	}
	srv := nodes[0]
	show, err := srv.CreateShow(ctx, tokens[0], fmt.Sprintf("Chat bench %d %s", n, mode))
	if err != nil {
		return p, err
	}
	// Warm each node's posting path once (users of their own: one post a
	// second each), then let the servers settle.
	for i, node := range nodes {
		if err := postOne(ctx, node, tokens[len(tokens)-1-i], show.ID, "warm-up"); err != nil {
			return p, err
		}
	}
	time.Sleep(2 * time.Second)
	for i, node := range nodes {
		if p.nodes[i].rssBefore, err = benchkit.RSS(node.PID()); err != nil {
			return p, err
		}
		p.rssBefore += p.nodes[i].rssBefore
	}
	idle, err := readAllTimes(ctx, nodes)
	if err != nil {
		return p, err
	}
	p.memBefore = idle.mem

	fmt.Fprintf(os.Stderr, "%d viewers, %s ids, %d node(s): connecting...\n", n, mode, len(nodes))
	var shared string
	if mode == "shared" {
		shared = uuid.NewString()
	}
	start := time.Now()
	var c audience
	var failed []string
	if len(nodes) == 1 {
		cookie := uuid.NewString
		if shared != "" {
			cookie = func() string { return shared }
		}
		wsURL := fmt.Sprintf("ws://%s/ws/shows/%d", srv.HTTPAddr, show.ID)
		cr, err := connect(ctx, wsURL, n, o.concurrency, o.sample, o.connectMax, cookie)
		if err != nil {
			return p, err
		}
		c, failed = cr, cr.failed
		p.nodes[0].connected = len(cr.viewers)
	} else {
		jobs := make([]viewerJob, len(nodes))
		for i, node := range nodes {
			jobs[i] = viewerJob{
				URL: fmt.Sprintf("ws://%s/ws/shows/%d", node.HTTPAddr, show.ID), Viewers: split[i],
				Concurrency: max(1, o.concurrency/len(nodes)), Sample: max(1, (o.sample*split[i]+n-1)/n),
				Within: o.connectMax, SharedID: shared,
			}
			if o.profile != "" {
				jobs[i].CPUProfile, jobs[i].ProfileSeconds = profPath(i, "viewers", "cpu.pprof"), o.profileSecs
			}
		}
		cc, err := connectChildren(ctx, jobs)
		if err != nil {
			return p, err
		}
		c, failed = cc, cc.failed
		for i, k := range cc.connected {
			p.nodes[i].connected = k
		}
	}
	defer c.finish()
	p.connectTime = time.Since(start)
	for _, f := range p.nodes {
		p.connected += f.connected
	}
	p.dialFailures = summarizeFailures(failed)
	fmt.Fprintf(os.Stderr, "  %d connected in %s (%d failed); waiting for presence events to settle...\n",
		p.connected, p.connectTime.Round(time.Millisecond), len(failed))
	p.settled, _ = settle(c, 3*time.Second, 2*time.Minute)
	_, p.presenceEvents, _, _ = c.totals()
	time.Sleep(time.Second)
	for i, node := range nodes {
		if p.nodes[i].rssAfter, err = benchkit.RSS(node.PID()); err != nil {
			return p, err
		}
		p.rssAfter += p.nodes[i].rssAfter
	}
	if o.profile != "" {
		for i, node := range nodes {
			if err := node.Profile("heap", 0, profPath(i, "node", "heap.pprof")); err != nil {
				return p, err
			}
		}
	}
	fmt.Fprintf(os.Stderr, "  %d presence events received (settled: %v); RSS %d → %d MB; posting %d/s for %d s...\n",
		p.presenceEvents, p.settled, p.rssBefore>>20, p.rssAfter>>20, o.rate, o.seconds)

	var (
		profiled chan error
		pending  int // profiles and traces being taken
	)
	if o.profile != "" {
		profiled = make(chan error, 2*len(nodes))
		for i, node := range nodes {
			pending++
			go func() { profiled <- node.Profile("profile", o.profileSecs, profPath(i, "node", "cpu.pprof")) }()
			if o.traceSecs > 0 {
				// From the middle of the posting, so that the trace sees
				// it in full flow.
				pending++
				go func() {
					time.Sleep(time.Duration(max(0, o.seconds-o.traceSecs)) * time.Second / 2)
					profiled <- node.Profile("trace", o.traceSecs, profPath(i, "node", "trace"))
				}()
			}
		}
		if cc, ok := c.(*childCrowd); ok {
			if err := cc.profile(); err != nil {
				return p, err
			}
		} else {
			stop, err := startCPUProfile(profPath(0, "viewers", "cpu.pprof"), time.Duration(o.profileSecs)*time.Second)
			if err != nil {
				return p, err
			}
			defer stop()
		}
	}
	chats0, _, _, closed0 := c.totals()
	each0, err := readEachTimes(ctx, nodes)
	if err != nil {
		return p, err
	}
	server0 := sumTimes(each0)
	p.memAfter = server0.mem
	cpu0, err := benchkit.ReadCPUs(pidsOf(nodes))
	if err != nil {
		return p, err
	}
	self0, err := benchkit.ReadCPUs(c.pids())
	if err != nil {
		return p, err
	}
	urls := make([]string, len(nodes))
	for i, node := range nodes {
		urls[i] = node.URL
	}
	ws := watchedProcs(nodes, c)
	var locks0 rowLocks
	if o.cluster {
		if locks0, err = readRowLocks(ctx, o.nodesDB); err != nil {
			return p, err
		}
	}
	sched0 := takeSnapshot(procFS(), ws)
	posts, err := postApart(ctx, urls, tokens, show.ID, o.rate, o.seconds)
	if err != nil {
		return p, err
	}
	p.posting = takeSnapshot(procFS(), ws).since(sched0, ws)
	if o.cluster {
		if locks1, err := readRowLocks(ctx, o.nodesDB); err == nil {
			p.rowLocks, p.rowLocksOK = locks1.since(locks0), true
		}
	}
	p.poster, p.posterOK = posts.self, posts.selfOK
	p.loadDuring = benchkit.LoadAvg()
	_, lastEvent := settle(c, 3*time.Second, time.Minute)
	if cpu1, err := benchkit.ReadCPUs(pidsOf(nodes)); err == nil {
		p.cpuServer = cpu1.Own - cpu0.Own
	}
	if self1, err := benchkit.ReadCPUs(c.pids()); err == nil {
		p.cpuViewers = self1.Own - self0.Own
	}
	// The settling's quiet seconds after the last delivery are not counted
	// as wall time, though their little CPU is.
	p.cpuWall = lastEvent.Sub(posts.start)
	each1, err := readEachTimes(ctx, nodes)
	if err != nil {
		return p, err
	}
	p.server = sumTimes(each1).since(server0)
	for i := range nodes {
		p.nodes[i].handler = each1[i].handler.since(each0[i].handler)
	}
	for i, d := range posts.latency {
		if i < len(posts.node) && posts.node[i] < len(p.nodes) {
			f := &p.nodes[posts.node[i]]
			f.postLatency = append(f.postLatency, d)
		}
	}
	for i := range p.nodes {
		slices.Sort(p.nodes[i].postLatency)
	}
	chats1, _, _, closed1 := c.totals()
	p.delivered = chats1 - chats0
	p.droppedBefore, p.droppedByServer = closed0, closed1
	p.ok, p.limited, p.failed = posts.ok, posts.limited, posts.failed
	p.window = lastEvent.Sub(posts.start)
	if p.posted, err = stored(ctx, srv, tokens[0], show.ID); err != nil {
		return p, err
	}
	p.posted -= len(nodes) // the warm-up messages
	slices.Sort(posts.latency)
	p.postP50, p.postP99 = benchkit.Percentile(posts.latency, 50), benchkit.Percentile(posts.latency, 99)
	for _, d := range posts.latency {
		if d > 50*time.Millisecond {
			p.postsOver50++
		}
	}

	if err := c.finish(); err != nil {
		return p, err
	}
	p.closedWhy = c.closedWhy()
	lat := c.latencies()
	slices.Sort(lat)
	p.samples = len(lat)
	p.p50, p.p99 = benchkit.Percentile(lat, 50), benchkit.Percentile(lat, 99)
	if len(lat) > 0 {
		p.max = lat[len(lat)-1]
	}
	for range pending {
		if err := <-profiled; err != nil {
			return p, err
		}
	}
	for i, node := range nodes {
		p.slowDrops += strings.Count(node.Log()[logStart[i]:], "dropping slow socket")
	}
	fmt.Fprintf(os.Stderr, "  stored %d (POST 201: %d, 429: %d, other: %d), delivered %d (%.1f%% of ideal), p50 %s p99 %s, server dropped %d sockets\n",
		p.posted, p.ok, p.limited, p.failed, p.delivered, 100*p.fraction(), p.p50.Round(time.Microsecond), p.p99.Round(time.Microsecond), p.droppedByServer)
	return p, nil
}

// fraction is the deliveries out of what every connected viewer should
// have received.
func (p phase) fraction() float64 {
	ideal := float64(p.posted) * float64(p.connected)
	if ideal == 0 {
		return 0
	}
	return float64(p.delivered) / ideal
}

// perSecond is the deliveries per second from the first POST to the last
// delivery.
func (p phase) perSecond() float64 {
	if p.window <= 0 {
		return 0
	}
	return float64(p.delivered) / p.window.Seconds()
}
