// Command shows is the benchmark of the shows API: it seeds a million shows
// into MySQL/MariaDB with multi-row INSERTs (once; later runs reuse them),
// boots the whole OnAir server on 127.0.0.1, and measures p50/p99 latency
// and throughput of GET /v1/shows (with and without filters), GET
// /v1/users/:id/shows and GET /v1/shows/:id beside the same server's
// static-JSON ceiling, with a Go HTTP client of N workers on loopback.
//
//	go run ./bench/shows -db mysql://root@127.0.0.1:3306/onair_bench
//
// It is a program, not a timed test: the figures go to bench/results/ and
// docs/benchmarks.md.
package main

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/app"
	"github.com/onair/onair/bench/internal/benchkit"
	_ "github.com/onair/onair/modules"
	"github.com/onair/onair/modules/shows"
	"github.com/onair/onair/modules/users"
)

// staticModule adds the ceiling routes: a constant JSON body at the root
// (no auth) and under /v1 (behind the same token check and rate limiter as
// the API), so the table separates routing, auth and the shows work.
type staticModule struct{}

func (staticModule) Name() string { return "bench-static" }

var staticBody = []byte(`{"show":{"id":1,"name":"static","live":false,"tags":[]}}`)

func static(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Send(staticBody)
}

func (staticModule) PublicRoutes(r fiber.Router) { r.Get("/static.json", static) }
func (staticModule) APIRoutes(r fiber.Router)    { r.Get("/static.json", static) }

func init() { app.Register(staticModule{}) }

func main() {
	dbURL := flag.String("db", "mysql://root@127.0.0.1:3306/onair_bench", "MySQL database to seed and serve (created if missing)")
	nShows := flag.Int("shows", 1_000_000, "shows to seed")
	nUsers := flag.Int("users", 10_000, "users to seed")
	reseed := flag.Bool("reseed", false, "drop the database and seed again")
	duration := flag.Duration("duration", 8*time.Second, "measuring time per scenario")
	warmup := flag.Duration("warmup", time.Second, "unmeasured load before each scenario's measuring time (the random scenarios at 10M need minutes to fill a buffer pool that holds what they read)")
	workers := flag.Int("workers", 16, "concurrent client workers")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	memProfile := flag.String("memprofile", "", "write the allocations of the whole run (pprof's allocs profile: the server's and the load generator's) to this file")
	flag.StringVar(&viewer, "viewer", "owner", "who asks: owner (user 1, a broadcaster with private shows of their own) or audience (a user without shows)")
	flag.StringVar(&only, "only", "", "run only the scenarios whose name contains this text (the ceiling always runs)")
	flag.BoolVar(&freshOnly, "fresh-only", false, "time only each scenario's first request after a fresh start, without the warm load (nor its load on the machine)")
	flag.IntVar(&bufferPoolMB, "buffer-pool-mb", 0, "set MariaDB's innodb_buffer_pool_size (GLOBAL, needs SUPER) to this many MiB for the run, and back to its size at the end; 0 leaves it as it is")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	if err := run(*dbURL, *nShows, *nUsers, *reseed, *warmup, *duration, *workers); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
	if *memProfile != "" {
		if err := writeAllocs(*memProfile); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
	}
}

// writeAllocs writes pprof's allocs profile (every allocation since the
// start, sampled) to path.
func writeAllocs(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// viewer is the -viewer flag.
var viewer string

// freshOnly is the -fresh-only flag.
var freshOnly bool

// bufferPoolMB is the -buffer-pool-mb flag.
var bufferPoolMB int

// bufferPool sets MariaDB's buffer pool to -buffer-pool-mb when given and
// describes it beside the size of the benchmark's tables and indexes: a
// list that misses the pool reads its pages from the file system, and the
// first request of a scenario after others pays for them (docs/deploy.md,
// "Sizing the database"). restore sets the pool back to the size it had
// (the setting is the server's, and outlives the run).
func bufferPool(ctx context.Context, db *sql.DB) (desc string, restore func(), err error) {
	var was, pool, data int64
	if err := db.QueryRowContext(ctx, "SELECT @@innodb_buffer_pool_size").Scan(&was); err != nil {
		return "", nil, err
	}
	restore = func() {}
	if bufferPoolMB > 0 && int64(bufferPoolMB)<<20 != was {
		if _, err := db.ExecContext(ctx, "SET GLOBAL innodb_buffer_pool_size = ?", int64(bufferPoolMB)<<20); err != nil {
			return "", nil, fmt.Errorf("-buffer-pool-mb: %w", err)
		}
		restore = func() {
			if _, err := db.ExecContext(context.Background(), "SET GLOBAL innodb_buffer_pool_size = ?", was); err != nil {
				fmt.Fprintf(os.Stderr, "shows: set the buffer pool back to %d MiB: %v\n", was>>20, err)
			}
		}
	}
	if err := db.QueryRowContext(ctx, "SELECT @@innodb_buffer_pool_size").Scan(&pool); err != nil {
		return "", restore, err
	}
	if err := db.QueryRowContext(ctx, "SELECT COALESCE(SUM(data_length + index_length), 0) FROM information_schema.tables WHERE table_schema = DATABASE()").Scan(&data); err != nil {
		return "", restore, err
	}
	return fmt.Sprintf("MariaDB innodb_buffer_pool_size %d MiB, the database's tables and indexes %d MiB", pool>>20, data>>20), restore, nil
}

// benchViewer is the user whose token the client sends: user 1, who owns
// about a hundred shows (three of them private, so their lists are not the
// public ones), or a user without shows, created on first use (the
// audience, whose lists are).
func benchViewer(ctx context.Context, svc *users.Service) (int64, error) {
	switch viewer {
	case "owner":
		return 1, nil
	case "audience":
	default:
		return 0, fmt.Errorf("-viewer: %q is neither owner nor audience", viewer)
	}
	const email = "bench-audience@example.test"
	var id int64
	err := svc.DB().NewSelect().Model((*users.User)(nil)).Column("id").Where("email = ?", email).Scan(ctx, &id)
	if err == nil {
		return id, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return 0, err
	}
	u, err := svc.Create(ctx, users.NewUser{Name: "Bench Audience", Email: email, Password: "bench-audience-password"})
	if err != nil {
		return 0, err
	}
	return u.ID, nil
}

func run(dbURL string, nShows, nUsers int, reseed bool, warmup, duration time.Duration, workers int) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := benchkit.MySQLDatabase(ctx, dbURL, reseed); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	base := "http://" + ln.Addr().String()
	dataDir, _ := os.MkdirTemp("", "onair-bench-")
	defer os.RemoveAll(dataDir)
	env := map[string]string{
		"ONAIR_DATABASE_URL": dbURL, "ONAIR_PUBLIC_URL": base, "ONAIR_DATA_DIR": dataDir,
		"ONAIR_HTTP_ADDR": ln.Addr().String(), "ONAIR_RTMP_ADDR": "127.0.0.1:0",
		"ONAIR_RATE_LIMIT": "1000000000", "ONAIR_LOG_LEVEL": "error",
		// The seed writes its shows without archiving them: the
		// downloads backfill would walk all of them once (a store lookup
		// per archived show; about 18 minutes at 10M) beside the
		// measured requests of the first boot.
		"ONAIR_DOWNLOADS": "false",
	}
	cfg, err := app.LoadConfig(flag.NewFlagSet("bench", flag.ContinueOnError), nil, func(k string) string { return env[k] })
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	bootStart, bootLoad := time.Now(), benchkit.LoadAvg()
	core, err := app.Boot(ctx, cfg, app.BootOptions{Log: log})
	if err != nil {
		return err
	}
	// A migration that rebuilds a big table runs here, before the seed
	// check: the time says what an upgrade costs at this size.
	fmt.Printf("booted in %s, migrations included (load average %s at the start, %s at the end)\n",
		time.Since(bootStart).Round(time.Millisecond), bootLoad, benchkit.LoadAvg())
	defer core.Close()

	var have int
	if err := core.DB.NewRaw("SELECT COUNT(*) FROM shows").Scan(ctx, &have); err != nil {
		return err
	}
	if have < nShows {
		start, load0, self0, db0 := time.Now(), benchkit.LoadAvg(), selfCPU(), procCPU(dbPID)
		counts, err := seed(ctx, core.DB.DB, nUsers, nShows)
		if err != nil {
			return fmt.Errorf("seed: %w", err)
		}
		// The seed writes around the service: the maintained list
		// counts are what it counted of the rows it wrote.
		if err := shows.ReplaceCounts(ctx, core.DB, counts); err != nil {
			return err
		}
		fmt.Printf("seeded %d users and %d shows in %s (CPU: this process %s, MariaDB %s; load average %s at the start, %s at the end)\n",
			nUsers, nShows, time.Since(start).Round(time.Second), (selfCPU() - self0).Round(time.Second),
			(procCPU(dbPID) - db0).Round(time.Second), load0, benchkit.LoadAvg())
		if _, err := core.DB.ExecContext(ctx, "ANALYZE TABLE shows, show_tags, users, tags"); err != nil {
			return err
		}
	} else {
		fmt.Printf("reusing %d shows already seeded\n", have)
	}
	pool, restorePool, err := bufferPool(ctx, core.DB.DB)
	if restorePool != nil {
		defer restorePool()
	}
	if err != nil {
		return err
	}

	svc := users.NewService(core.DB, cfg.PublicURL)
	viewerID, err := benchViewer(ctx, svc)
	if err != nil {
		return err
	}
	token, _, err := svc.IssueToken(ctx, viewerID, "bench")
	if err != nil {
		return err
	}
	srv, err := app.NewServer(core)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	defer func() { cancel(); <-done }()

	// Random ids among the shows any user may see (others answer 404).
	var ids []int64
	if err := core.DB.NewRaw("SELECT id FROM shows WHERE private = 0 AND off = 0 ORDER BY RAND() LIMIT 10000").Scan(ctx, &ids); err != nil {
		return err
	}
	scenarios := []scenario{
		{name: "static JSON, no auth (ceiling)", path: func(*rand.Rand) string { return "/static.json" }},
		{name: "static JSON behind /v1 auth", path: func(*rand.Rand) string { return "/v1/static.json" }},
		{name: "GET /v1/shows/:id (random id)", path: func(r *rand.Rand) string { return fmt.Sprintf("/v1/shows/%d", ids[r.IntN(len(ids))]) }},
		fixed("GET /v1/shows", "/v1/shows"),
		fixed("GET /v1/shows?page=200", "/v1/shows?page=200"),
		fixed("GET /v1/shows?live=true", "/v1/shows?live=true"),
		fixed("GET /v1/shows?scheduled=true", "/v1/shows?scheduled=true"),
		fixed("GET /v1/shows?scheduled=false&archive=true", "/v1/shows?scheduled=false&archive=true"),
		fixed("GET /v1/shows?featured=true", "/v1/shows?featured=true"),
		fixed("GET /v1/shows?radio=true&live=false", "/v1/shows?radio=true&live=false"),
		fixed("GET /v1/shows?tag=house", "/v1/shows?tag=house"),
		fixed("GET /v1/shows?tag=ambient&featured=false", "/v1/shows?tag=ambient&featured=false"),
		fixed("GET /v1/shows?from=2024-03-01&to=2024-03-08", "/v1/shows?from=2024-03-01&to=2024-03-08"),
		fixed("GET /v1/shows?slug=show-4242", "/v1/shows?slug=show-4242"),
		fixed("GET /v1/shows?filter=sunrise (LIKE)", "/v1/shows?filter=sunrise"),
		{name: "GET /v1/users/:id/shows (random user)", path: func(r *rand.Rand) string {
			return fmt.Sprintf("/v1/users/%d/shows", 2+r.IntN(nUsers-1))
		}},
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers * 2, MaxConnsPerHost: workers * 2}, Timeout: 30 * time.Second}
	var results []result
	load0 := benchkit.LoadAvg()
	for i, sc := range scenarios {
		if i > 0 && only != "" && !strings.Contains(sc.name, only) {
			continue
		}
		// First request of a freshly booted server: new connection
		// pool, empty token cache and no warmed state of OnAir's own
		// (the database's buffer pool stays as the run left it).
		fresh, err := freshStart(ctx, cfg, token, sc.path(rand.New(rand.NewPCG(1, 2))))
		if err != nil {
			return fmt.Errorf("%s: fresh start: %w", sc.name, err)
		}
		if freshOnly {
			fmt.Printf("%-48s fresh %8.2f ms  load %s\n", sc.name, benchkit.Ms(fresh), benchkit.LoadAvg())
			continue
		}
		var sent atomic.Int64
		self0, db0 := selfCPU(), procCPU(dbPID)
		lr, err := benchkit.Load(ctx, client, token, func(r *rand.Rand) string { sent.Add(1); return base + sc.path(r) }, warmup, duration, workers)
		if err != nil {
			return fmt.Errorf("%s: %w", sc.name, err)
		}
		res := result{name: sc.name, LoadResult: lr, fresh: fresh,
			selfCPU: (selfCPU() - self0) / time.Duration(sent.Load()), dbCPU: -1}
		if dbPID != "" {
			res.dbCPU = (procCPU(dbPID) - db0) / time.Duration(sent.Load())
		}
		results = append(results, res)
		fmt.Fprintf(os.Stderr, "%-48s fresh %7.2f ms  cold %7.2f ms  p50 %7.2f ms  p99 %7.2f ms  %8.0f req/s  cpu %.3f + db %.3f ms/req  load %s\n",
			res.name, benchkit.Ms(res.fresh), benchkit.Ms(res.Cold), benchkit.Ms(res.P50), benchkit.Ms(res.P99), res.RPS,
			benchkit.Ms(res.selfCPU), benchkit.Ms(res.dbCPU), benchkit.LoadAvg())
	}
	if freshOnly {
		fmt.Printf("\n%d shows, first requests after a fresh start only; load average %s at the start, %s at the end; %s.\n", nShows, load0, benchkit.LoadAvg(), pool)
		return nil
	}
	printTable(results, nShows, workers, warmup, duration, load0, pool)
	return nil
}

// dbPID is the process id of the local MariaDB/MySQL server ("" when none
// is found): its CPU time per request is the database's own share.
var dbPID = func() string {
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		comm, err := os.ReadFile("/proc/" + d.Name() + "/comm")
		if err != nil {
			continue
		}
		if c := strings.TrimSpace(string(comm)); c == "mariadbd" || c == "mysqld" {
			return d.Name()
		}
	}
	return ""
}()

// selfCPU is the CPU time (user + system) of this process so far: the
// server and the load generator.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procCPU is the CPU time of another process from /proc/PID/stat (utime
// and stime, in the kernel's USER_HZ of 100 ticks a second).
func procCPU(pid string) time.Duration {
	if pid == "" {
		return 0
	}
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0
	}
	// Fields after the command, which is in parentheses and may hold spaces.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * 10 * time.Millisecond
}

var only string

type scenario struct {
	name string
	path func(r *rand.Rand) string
}

func fixed(name, path string) scenario {
	return scenario{name: name, path: func(*rand.Rand) string { return path }}
}

type result struct {
	name  string
	fresh time.Duration // first request after a fresh boot
	// CPU time per request over the scenario's warm-up and measured
	// phases: this process (server and client) and MariaDB (-1: not
	// found).
	selfCPU, dbCPU time.Duration
	benchkit.LoadResult
}

// freshStart boots a second OnAir on the same database with its own
// listener (a fresh core: migrations checked, modules provisioned, empty
// caches), times its first answer to path, and shuts it down.
func freshStart(ctx context.Context, base *app.Config, token, path string) (time.Duration, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	cfg := *base
	cfg.HTTPAddr = ln.Addr().String()
	cfg.PublicURL = "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	core, err := app.Boot(ctx, &cfg, app.BootOptions{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		ln.Close()
		return 0, err
	}
	defer core.Close()
	srv, err := app.NewServer(core)
	if err != nil {
		ln.Close()
		return 0, err
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	defer func() { cancel(); <-done }()
	client := &http.Client{Transport: &http.Transport{}, Timeout: 60 * time.Second}
	defer client.CloseIdleConnections()
	// Serve starts the modules before it accepts: wait for /healthz
	// (outside the API, no database) so the timed request is the first
	// one the API answers, not the boot.
	if _, err := benchkit.Get(client, cfg.PublicURL+"/healthz", ""); err != nil {
		return 0, err
	}
	return benchkit.Get(client, cfg.PublicURL+path, token)
}

func printTable(results []result, nShows, workers int, warmup, d time.Duration, load0, pool string) {
	ceiling := results[0]
	fmt.Printf("\n%d shows, %d client workers on 127.0.0.1, %s per scenario after %s of warm-up; load average %s at the start, %s at the end; %s.\n\n",
		nShows, workers, d, warmup, load0, benchkit.LoadAvg(), pool)
	fmt.Println("| Request | fresh start, first request (ms) | cold (ms) | p50 (ms) | p99 (ms) | req/s | p50 ÷ ceiling p50 | req/s ÷ ceiling req/s | OnAir + client CPU (ms/req) | MariaDB CPU (ms/req) |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range results {
		db := "–"
		if r.dbCPU >= 0 {
			db = fmt.Sprintf("%.3f", benchkit.Ms(r.dbCPU))
		}
		fmt.Printf("| %s | %.2f | %.2f | %.2f | %.2f | %.0f | %.1f× | %.3f | %.3f | %s |\n",
			r.name, benchkit.Ms(r.fresh), benchkit.Ms(r.Cold), benchkit.Ms(r.P50), benchkit.Ms(r.P99), r.RPS, float64(r.P50)/float64(ceiling.P50), r.RPS/ceiling.RPS,
			benchkit.Ms(r.selfCPU), db)
	}
}
