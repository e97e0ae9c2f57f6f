package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/onair/onair/app"
	"github.com/onair/onair/bench/internal/benchkit"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
)

// TestProcSchedSince: a window's usage is each thread's difference, a
// thread born inside it counted from its start, a thread gone ignored.
func TestProcSchedSince(t *testing.T) {
	t.Parallel()
	before := procSched{1: {cpu: 100, wait: 10}, 2: {cpu: 50, wait: 5}, 3: {cpu: 7, wait: 7}}
	after := procSched{1: {cpu: 400, wait: 60}, 2: {cpu: 50, wait: 5}, 4: {cpu: 30, wait: 20}}
	got := after.since(before)
	want := usage{cpu: 300 + 0 + 30, wait: 50 + 0 + 20, threads: 3}
	if got != want {
		t.Errorf("since = %+v, want %+v", got, want)
	}
}

// TestReadProcSchedOfThisProcess: this process's threads, read from the
// real /proc before and after a goroutine spins for 200 ms of CPU, show
// at least that CPU time; the test process is found by its command name
// as mariadbd and redis-server are.
func TestReadProcSchedOfThisProcess(t *testing.T) {
	ws := []watched{{name: "self", pid: os.Getpid()}}
	before := takeSnapshot(procFS(), ws)
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		start, _ := selfSched()
		for x := 1; ; x++ {
			for range 100_000 {
				x = x*31 + 7
			}
			if now, _ := selfSched(); now.cpu-start.cpu > 200*time.Millisecond {
				return
			}
		}
	}()
	<-done
	w := takeSnapshot(procFS(), ws).since(before, ws)
	u := w.procs[0]
	if !u.ok || u.cpu < 200*time.Millisecond || u.threads < 1 || u.wait < 0 {
		t.Errorf("usage over the spin: %+v, want ok, ≥ 200 ms of CPU and a thread", u)
	}
	if w.wall <= 0 || w.cpu.total() <= 0 || w.cpu.busy() <= 0 {
		t.Errorf("the machine over the spin: wall %s, %+v", w.wall, w.cpu)
	}
	comm, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range servicePIDs(procFS(), strings.TrimSpace(string(comm))) {
		found = found || p.pid == os.Getpid()
	}
	if !found {
		t.Errorf("servicePIDs(%q) does not list this process %d", strings.TrimSpace(string(comm)), os.Getpid())
	}
}

// TestMachineCPU: busy is every kind but idle and iowait; this machine's
// /proc/stat reads, through procfs, as time spent.
func TestMachineCPU(t *testing.T) {
	t.Parallel()
	tick := 10 * time.Millisecond
	c := machineCPU{user: 139634 * tick, system: 21846 * tick, idle: 28162 * tick, iowait: 965 * tick, softirq: 259 * tick, steal: 561 * tick}
	if busy := c.busy(); busy != (139634+21846+259+561)*tick {
		t.Errorf("busy = %s", busy)
	}
	if total := c.total(); total != (139634+21846+28162+965+259+561)*tick {
		t.Errorf("total = %s", total)
	}
	real, err := readMachineCPU(procFS())
	if err != nil || real.total() <= 0 {
		t.Errorf("this machine's /proc/stat: %+v, %v", real, err)
	}
}

func TestBucketsEstimate(t *testing.T) {
	t.Parallel()
	inf := math.Inf(1)
	h := buckets{count: 100, bounds: []float64{0.001, 0.01, 0.1, inf}, counts: []uint64{10, 60, 98, 100}}
	for _, tc := range []struct {
		q      float64
		want   float64
		beyond bool
	}{
		{q: 0.05, want: 0.0005},                 // half-way into the first bucket, from 0
		{q: 0.5, want: 0.001 + 0.009*40.0/50.0}, // rank 50 of the 50 in (1, 10] ms
		{q: 0.98, want: 0.1},                    // the last sample of (10, 100] ms
		{q: 0.99, want: 0.1, beyond: true},      // in the +Inf bucket
		{q: 0.6, want: 0.01},                    // exactly the bound
		{q: 0.7, want: 0.01 + 0.09*10.0/38.0},   // rank 70
		{q: 0.0, want: 0},                       // the lowest
		{q: 0.10, want: 0.001},                  // rank 10: the first bound
	} {
		got, beyond := h.estimate(tc.q)
		if math.Abs(got-tc.want) > 1e-12 || beyond != tc.beyond {
			t.Errorf("estimate(%g) = %g, %v; want %g, %v", tc.q, got, beyond, tc.want, tc.beyond)
		}
	}
	if v, beyond := (buckets{}).estimate(0.99); v != 0 || beyond {
		t.Errorf("no samples: %g, %v", v, beyond)
	}
}

// TestHandlerHistogramOfRealServer: a whole OnAir in this process (every
// module, SQLite) is read as the benchmark reads each node: its /metrics
// before and after five chat POSTs differ by those five in the chat
// POST route's histogram, whatever came before them, and the estimates
// lie within the buckets that hold them.
func TestHandlerHistogramOfRealServer(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{})
	_, owner := env.CreateUser("Owner")
	show := onairtest.CreateShow(t, env, owner, nil)
	postAs := func(tok, text string) {
		env.Do("POST", fmt.Sprintf("/v1/shows/%d/chats", show.ID), tok, map[string]any{"message": text}).Expect(t, http.StatusCreated)
	}
	postAs(owner, "before the window")
	ctx := context.Background()
	node := &benchkit.Server{URL: env.URL}
	before, err := readServerTimes(ctx, node)
	if err != nil {
		t.Fatal(err)
	}
	if before.handler.count != 1 || len(before.handler.bounds) == 0 || !math.IsInf(before.handler.bounds[len(before.handler.bounds)-1], 1) {
		t.Fatalf("before: %+v, want one POST and buckets up to +Inf", before.handler)
	}
	for i := range 5 {
		_, tok := env.CreateUser(fmt.Sprintf("Fan %d", i))
		postAs(tok, fmt.Sprintf("in the window %d", i))
	}
	after, err := readServerTimes(ctx, node)
	if err != nil {
		t.Fatal(err)
	}
	d := after.handler.since(before.handler)
	if d.count != 5 || d.counts[len(d.counts)-1] != 5 {
		t.Fatalf("the window's histogram: %+v, want 5 samples", d)
	}
	for _, q := range []float64{0.5, 0.99} {
		v, beyond := d.estimate(q)
		bound := d.quantile(q)
		if beyond || v <= 0 || v > bound {
			t.Errorf("estimate(%g) = %g (beyond %v), want within (0, %g], the bound of its bucket", q, v, beyond, bound)
		}
	}
	// The report's rows come out of the same figures.
	p := phase{viewers: 1, mode: "distinct", nodes: []nodeFigures{{handler: d, postLatency: []time.Duration{time.Millisecond, 2 * time.Millisecond}}},
		posting: schedWindow{wall: time.Second}}
	if got := p.breakdown(); !strings.Contains(got, "| 1 | 2 | 1.0 / 1.0 | ") || !strings.Contains(got, "| 5 |") {
		t.Errorf("breakdown:\n%s", got)
	}
}

// TestRowLocksOfRealMariaDB: the two status variables parse, and on the
// test MariaDB a transaction that waits for another's row lock shows as
// one more wait.
func TestRowLocksOfRealMariaDB(t *testing.T) {
	t.Parallel()
	got, err := parseRowLocks(map[string]string{"Innodb_row_lock_waits": "12", "Innodb_row_lock_time": "3400"})
	if err != nil || got != (rowLocks{waits: 12, timeMS: 3400}) {
		t.Errorf("parseRowLocks = %+v, %v", got, err)
	}
	if _, err := parseRowLocks(map[string]string{"Innodb_row_lock_waits": "12"}); err == nil {
		t.Error("a missing variable parsed")
	}
	raw := os.Getenv(onairtest.MySQLEnv)
	if raw == "" {
		testload.Skip(t, "%s unset: no MariaDB to ask", onairtest.MySQLEnv)
	}
	ctx := context.Background()
	_, dsn, err := app.ParseDatabaseURL(raw)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	table := fmt.Sprintf("chatprof_lock_%d", time.Now().UnixNano())
	if _, err := db.ExecContext(ctx, "CREATE TABLE "+table+" (id INT PRIMARY KEY, n INT) ENGINE=InnoDB"); err != nil {
		t.Fatal(err)
	}
	defer db.ExecContext(ctx, "DROP TABLE "+table)
	if _, err := db.ExecContext(ctx, "INSERT INTO "+table+" VALUES (1, 0)"); err != nil {
		t.Fatal(err)
	}
	before, err := readRowLocks(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	holder, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := holder.ExecContext(ctx, "UPDATE "+table+" SET n = n + 1 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() {
		_, err := db.ExecContext(ctx, "UPDATE "+table+" SET n = n + 1 WHERE id = 1")
		waited <- err
	}()
	testload.Poll(t, "the second UPDATE waiting for the row lock", func() error {
		var n int
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT'").Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return errors.New("no transaction in LOCK WAIT")
		}
		return nil
	})
	if err := holder.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	after, err := readRowLocks(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	if d := after.since(before); d.waits < 1 || d.timeMS < 0 {
		t.Errorf("row locks %+v then %+v: want at least one more wait", before, after)
	}
}
