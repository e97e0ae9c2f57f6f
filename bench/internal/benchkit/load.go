package benchkit

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// LoadResult is what Load measured of one request target.
type LoadResult struct {
	Cold, P50, P99 time.Duration
	RPS            float64
	N              int
}

// Load sends one cold request to target, warms up for warmup (the same
// workers, unmeasured), then runs workers that GET target(r) back to back
// for d, and returns the latency percentiles and throughput of the
// measured phase. token, when set, is sent as a Bearer token. Any answer
// but 200 stops it with an error.
func Load(ctx context.Context, client *http.Client, token string, target func(r *rand.Rand) string, warmup, d time.Duration, workers int) (LoadResult, error) {
	cold, err := Get(client, target(rand.New(rand.NewPCG(1, 2))), token)
	if err != nil {
		return LoadResult{}, err
	}
	var (
		mu     sync.Mutex
		lat    []time.Duration
		failed atomic.Value
	)
	// Each phase's workers draw their own sequences: with one seed for
	// both, the measured phase would open by replaying the warm-up's
	// requests, which a cache that admits a key on its second ask (the
	// show lists') answers differently from a first ask.
	phase := func(d time.Duration, record bool, seed uint64) {
		deadline := time.Now().Add(d)
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				r := rand.New(rand.NewPCG(uint64(w), seed))
				var local []time.Duration
				for time.Now().Before(deadline) && ctx.Err() == nil {
					took, err := Get(client, target(r), token)
					if err != nil {
						failed.Store(err)
						return
					}
					local = append(local, took)
				}
				if record {
					mu.Lock()
					lat = append(lat, local...)
					mu.Unlock()
				}
			}(w)
		}
		wg.Wait()
	}
	phase(warmup, false, 7)
	phase(d, true, 8)
	if err, _ := failed.Load().(error); err != nil {
		return LoadResult{}, err
	}
	if len(lat) == 0 {
		return LoadResult{}, fmt.Errorf("no request completed in %s", d)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return LoadResult{Cold: cold, P50: Percentile(lat, 50), P99: Percentile(lat, 99), RPS: float64(len(lat)) / d.Seconds(), N: len(lat)}, nil
}

// Get sends one GET and reads the whole body; it returns how long that took.
func Get(client *http.Client, u, token string) (time.Duration, error) {
	req, err := http.NewRequest("GET", u, nil)
	if err != nil {
		return 0, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	took := time.Since(start)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: status %d", u, resp.StatusCode)
	}
	return took, nil
}

// Ms is a duration in milliseconds, for tables.
func Ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
