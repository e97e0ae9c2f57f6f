// Command fiber measures what Fiber's Immutable setting costs OnAir's
// request path: the same app (request id, a metrics-style middleware that
// keys on method and route, a handler that reads a path parameter, query
// values, a header and a cookie and answers static JSON) served twice on
// 127.0.0.1, once with Fiber lending its buffers (Immutable off) and once
// with every value copied (Immutable on, OnAir's setting), driven in
// alternating rounds by the same client in the same run.
//
//	go run ./bench/fiber
//
// It is a program, not a timed test: the figures go to bench/results/ and
// docs/benchmarks.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/requestid"

	"github.com/onair/onair/bench/internal/benchkit"
)

var body = []byte(`{"show":{"id":1,"name":"static","live":false,"tags":[]}}`)

// serve starts one app and returns its base URL.
func serve(immutable bool) (string, func(), error) {
	a := fiber.New(fiber.Config{Immutable: immutable, DisableStartupMessage: true})
	var mu sync.Mutex
	counts := map[string]int{}
	a.Use(requestid.New())
	a.Use(func(c *fiber.Ctx) error {
		err := c.Next()
		key := c.Method() + " " + c.Route().Path
		mu.Lock()
		counts[key]++
		mu.Unlock()
		return err
	})
	a.Get("/v1/shows/:id", func(c *fiber.Ctx) error {
		if c.Params("id") == "" || c.Get(fiber.HeaderAuthorization) == "" {
			return fiber.ErrBadRequest
		}
		_ = c.Query("page") + c.Query("per_page") + c.Cookies("onair_viewer")
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
		return c.Send(body)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	go a.Listener(ln)
	return "http://" + ln.Addr().String(), func() { _ = a.ShutdownWithTimeout(5 * time.Second) }, nil
}

func main() {
	workers := flag.Int("workers", 16, "client workers")
	rounds := flag.Int("rounds", 3, "measured rounds per setting (alternating)")
	d := flag.Duration("d", 3*time.Second, "length of one round")
	flag.Parse()
	if err := run(*workers, *rounds, *d); err != nil {
		fmt.Fprintln(os.Stderr, "bench/fiber:", err)
		os.Exit(1)
	}
}

func run(workers, rounds int, d time.Duration) error {
	ctx := context.Background()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers * 2, MaxConnsPerHost: workers * 2}, Timeout: 30 * time.Second}
	results := make([][]benchkit.LoadResult, 2)
	for i, immutable := range []bool{false, true} {
		base, stop, err := serve(immutable)
		if err != nil {
			return err
		}
		defer stop()
		urls[i] = base + "/v1/shows/42?page=2&per_page=20"
	}
	for r := 0; r < rounds; r++ {
		for i := range urls {
			u := urls[i]
			res, err := benchkit.Load(ctx, client, "t0ken", func(*rand.Rand) string { return u }, time.Second, d, workers)
			if err != nil {
				return err
			}
			results[i] = append(results[i], res)
			fmt.Fprintf(os.Stderr, "round %d %-34s p50 %6.2f ms p99 %6.2f ms %8.0f req/s\n", r+1, labels[i], benchkit.Ms(res.P50), benchkit.Ms(res.P99), res.RPS)
		}
	}
	client.CloseIdleConnections()
	fmt.Printf("\n%d client workers, %d alternating rounds of %s each; median round of each setting. Load average %s.\n\n", workers, rounds, d, benchkit.LoadAvg())
	fmt.Println("| Fiber setting | p50 (ms) | p99 (ms) | req/s | req/s ÷ Immutable off |")
	fmt.Println("|---|---:|---:|---:|---:|")
	off := median(results[0])
	for i := range results {
		m := median(results[i])
		fmt.Printf("| %s | %.3f | %.3f | %.0f | %.3f |\n", labels[i], benchkit.Ms(m.P50), benchkit.Ms(m.P99), m.RPS, m.RPS/off.RPS)
	}
	return nil
}

var (
	labels = []string{"Immutable off (borrowed buffers)", "Immutable on (OnAir)"}
	urls   = make([]string, 2)
)

// median is the round with the median throughput.
func median(rs []benchkit.LoadResult) benchkit.LoadResult {
	s := append([]benchkit.LoadResult(nil), rs...)
	sort.Slice(s, func(i, j int) bool { return s[i].RPS < s[j].RPS })
	return s[len(s)/2]
}
