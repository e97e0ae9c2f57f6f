package live

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/onair/onair/modules/shows"
)

// goLiveBatch is the most shows one going-live transaction takes.
const goLiveBatch = 64

// goingLive coalesces the shows ingested here going live. Going live is a
// transaction (the show, its counts, the lists' generation, the outbox
// and the hooks of other modules); after a node restart hundreds of
// publishers get there within seconds. One transaction each queued them
// on the rows every change updates and on a commit each (on SQLite, on
// its one writer connection): with 300 shows on a loaded MariaDB, 62 were
// live after 88 s. Here one worker writes them in batches: the shows that
// arrive while a batch commits go live together in the next one.
type goingLive struct {
	mu      sync.Mutex
	waiting []liveRequest
	running bool // the worker runs
}

// liveRequest is one show waiting to go live, and who waits for it.
type liveRequest struct {
	shows.GoingLive
	done chan error
}

// goLive makes the show live in the next batch and returns its own
// outcome (shows.ErrRefused for a show that may not go live). While the
// database is away the batch waits for it (dbretry.go); nil when the
// module stops first.
func (m *Module) goLive(showID int64, media shows.Media) error {
	req := liveRequest{GoingLive: shows.GoingLive{ShowID: showID, Media: media}, done: make(chan error, 1)}
	g := &m.going
	g.mu.Lock()
	g.waiting = append(g.waiting, req)
	start := !g.running
	g.running = true
	g.mu.Unlock()
	if start {
		go m.goLiveWorker()
	}
	select {
	case err := <-req.done:
		return err
	case <-m.ctx.Done():
		return nil
	}
}

// goLiveWorker writes batches until no show waits.
func (m *Module) goLiveWorker() {
	g := &m.going
	for {
		g.mu.Lock()
		if len(g.waiting) == 0 {
			g.running = false
			g.mu.Unlock()
			return
		}
		n := min(len(g.waiting), goLiveBatch)
		batch := slices.Clone(g.waiting[:n])
		g.waiting = slices.Delete(g.waiting, 0, n)
		g.mu.Unlock()
		m.goLiveTogether(batch)
	}
}

// goLiveTogether writes one batch, in the order of the shows' ids (two
// transactions lock shared rows in one order), and answers each request.
// A failure the batch cannot pin on one show (not a refusal) is retried
// one show at a time, so that one show's fault stays its own.
func (m *Module) goLiveTogether(batch []liveRequest) {
	slices.SortFunc(batch, func(a, b liveRequest) int { return cmp.Compare(a.ShowID, b.ShowID) })
	items := make([]shows.GoingLive, len(batch))
	for i, r := range batch {
		items[i] = r.GoingLive
	}
	var errs []error
	began := time.Now()
	err := m.retryStore("go live", []any{"shows", len(batch), "first", batch[0].ShowID}, func(ctx context.Context) error {
		var err error
		errs, err = m.shows.GoLiveMany(ctx, items)
		return err
	})
	m.core.Log.Debug("live: shows went live together", "shows", len(batch), "took", time.Since(began).Round(time.Millisecond), "err", err)
	switch {
	case err == nil:
		for i, r := range batch {
			r.done <- errs[i]
		}
		return
	case len(batch) == 1 || m.ctx.Err() != nil:
		for _, r := range batch {
			r.done <- err
		}
		return
	}
	m.core.Log.Warn("live: shows going live together failed; one at a time", "shows", len(batch), "err", err)
	for _, r := range batch {
		r.done <- m.untilStored("go live", r.ShowID, func(ctx context.Context) error {
			_, err := m.shows.GoLive(ctx, r.ShowID, r.Media)
			return err
		})
	}
}
