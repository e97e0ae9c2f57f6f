package live

import (
	"errors"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/onair/onair/app"
	"github.com/onair/onair/modules/live/hls"
)

// Blocking requests of LL-HLS (RFC 8216bis 6.2.5.2): a playlist request
// with _HLS_msn (and _HLS_part) waits until that segment or part is in the
// playlist, and a request for the part a playlist hints waits until it is
// written. Each waits on the show's hls.Live, woken by every playlist the
// packager writes, at most three target durations; only the node that
// ingests the show holds requests (others answer with what they have).

// HeaderPublished answers a blocking playlist reload that waited: the
// moment (Unix microseconds) the playlist it waited for was published.
const HeaderPublished = "X-Onair-Published"

// keyPublished is HeaderPublished in its canonical form, for SetCanonical.
var keyPublished = []byte(HeaderPublished)

// blockingQuery is a playlist request's _HLS_msn and _HLS_part.
type blockingQuery struct {
	set  bool   // _HLS_msn was given
	msn  uint64 // media sequence number awaited
	part int    // part index awaited; -1 for the whole segment
}

// maxPartIndex bounds _HLS_part: a segment of the longest target at the
// shortest part length has far fewer parts.
const maxPartIndex = 10000

var errBadBlocking = errors.New("_HLS_msn must be a media sequence number and _HLS_part a part index, given with _HLS_msn")

// parseBlocking reads _HLS_msn and _HLS_part as RFC 8216bis defines them:
// decimal integers, _HLS_part only with _HLS_msn.
func parseBlocking(msn, part string) (blockingQuery, error) {
	q := blockingQuery{part: -1}
	if msn == "" {
		if part != "" {
			return q, errBadBlocking
		}
		return q, nil
	}
	if !decimal(msn, 20) {
		return q, errBadBlocking
	}
	n, err := strconv.ParseUint(msn, 10, 64)
	if err != nil {
		return q, errBadBlocking
	}
	q.set, q.msn = true, n
	if part != "" {
		if !decimal(part, 5) {
			return q, errBadBlocking
		}
		p, _ := strconv.Atoi(part)
		if p > maxPartIndex {
			return q, errBadBlocking
		}
		q.part = p
	}
	return q, nil
}

func decimal(s string, maxLen int) bool {
	if s == "" || len(s) > maxLen {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// waiters caps the requests held at once on this node: each holds a
// connection and a goroutine for up to three target durations.
type waiters struct {
	max      int64
	now      atomic.Int64
	refused  atomic.Uint64
	timedOut atomic.Uint64
	// woken is how long a held playlist reload took to be released
	// once what it waited for was published (the server's share of the
	// wake; nil until the module's Init).
	woken prometheus.Histogram
}

// newWokenHistogram spans a quiet node's release (tens of microseconds)
// to a crowd's on a starved one (hundreds of milliseconds).
func newWokenHistogram() prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "onair_hls_blocking_wake_seconds",
		Help:    "Time from the publication of what a held LL-HLS playlist reload waited for to the release of that request on this node (its answer is written next).",
		Buckets: []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1},
	})
}

func (w *waiters) acquire() bool {
	if w.now.Add(1) > w.max {
		w.now.Add(-1)
		w.refused.Add(1)
		return false
	}
	return true
}

func (w *waiters) release() { w.now.Add(-1) }

// liveFor returns the show's hls.Live, creating it for a publication
// starting on this node; a publisher that reconnects keeps the waiters.
func (m *Module) liveFor(showID int64) *hls.Live {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.lives[showID]
	if l == nil {
		l = hls.NewLive()
		m.lives[showID] = l
	}
	return l
}

// forgetLive drops a show's hls.Live once it has stopped or been deleted.
func (m *Module) forgetLive(showID int64) {
	m.mu.Lock()
	delete(m.lives, showID)
	m.mu.Unlock()
}

// awaitMedia holds a blocking playlist reload or a request for a hinted
// part until it can be answered (nil: send the file now), or returns the
// answer: 400 for a malformed or too far _HLS_msn/_HLS_part, 503 when it
// did not appear in time or too many requests wait already, 404 for a part
// that is neither there nor next, and 404 for the live playlist of a rung
// the ladder dropped (any request of it, held ones released at once) and
// the part it hinted. It only reads the query and the show's live state,
// so any serving path can call it before reading the file.
func (m *Module) awaitMedia(c *fiber.Ctx, id int64, file string) error {
	rung := hls.IsRungPlaylist(file)
	playlist := rung || file == hls.PlaylistAV || file == hls.PlaylistAudio
	var q blockingQuery
	if playlist {
		var err error
		if q, err = parseBlocking(c.Query("_HLS_msn"), c.Query("_HLS_part")); err != nil {
			return fiber.NewError(fiber.StatusBadRequest, err.Error())
		}
		if !q.set && !rung {
			return nil
		}
	} else if _, _, _, ok := hls.ParsePartFile(file); !ok || m.media.has(id, file) {
		return nil
	}
	m.mu.Lock()
	live := m.lives[id]
	m.mu.Unlock()
	if live == nil {
		return nil // not ingested here (any more): answer with what there is
	}
	if rung && live.Gone(file) {
		return fiber.ErrNotFound
	}
	if playlist && !q.set {
		return nil
	}
	if !playlist && live.PartPublished(file) {
		// The packager writes a part's file before it publishes it: the
		// file is complete once published, not once it exists.
		return nil
	}
	// A held request holds its connection: through a trusted proxy it
	// counts for its client under ONAIR_MAX_CONNS_PER_IP.
	release, err := app.HoldClient(c)
	if err != nil {
		return err
	}
	defer release()
	if !m.waiting.acquire() {
		c.Set(fiber.HeaderRetryAfter, "1")
		return fiber.NewError(fiber.StatusServiceUnavailable, "too many requests are waiting for live media; retry")
	}
	defer m.waiting.release()
	// The request's own context, not a child of it: a child of the
	// request's deadline context would cost a goroutine per waiter,
	// woken again when the waiter returns (bench/results/2026-11-28-wake.md).
	ctx := c.UserContext()
	if playlist {
		var p hls.Position
		var waited bool
		if p, waited, err = live.AwaitPosition(ctx, file, q.msn, q.part); err == nil && waited {
			// When what it waited for appeared (bench/live
			// -blocking-clients measures the wake from it).
			var us [20]byte
			c.Response().Header.SetCanonical(keyPublished, strconv.AppendInt(us[:0], p.Published.UnixMicro(), 10))
			if m.waiting.woken != nil {
				m.waiting.woken.Observe(time.Since(p.Published).Seconds())
			}
		}
	} else {
		err = live.AwaitPart(ctx, file)
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, hls.ErrTooFar) && playlist:
		return fiber.NewError(fiber.StatusBadRequest, "_HLS_msn or _HLS_part is too far ahead of the live playlist")
	case errors.Is(err, hls.ErrTooFar), errors.Is(err, hls.ErrGone):
		return fiber.ErrNotFound
	case errors.Is(err, hls.ErrNotReady):
		m.waiting.timedOut.Add(1)
		c.Set(fiber.HeaderRetryAfter, "1")
		return fiber.NewError(fiber.StatusServiceUnavailable, "the requested segment or part is not available yet")
	default:
		return err
	}
}

// blockingCollector exposes the waiting requests.
type blockingCollector struct{ w *waiters }

var (
	descWaiting = prometheus.NewDesc("onair_hls_blocking_requests",
		"LL-HLS requests (blocking playlist reloads, hinted parts) waiting on this node now.", nil, nil)
	descWaitRefused = prometheus.NewDesc("onair_hls_blocking_refused_total",
		"LL-HLS blocking requests answered 503 at once because ONAIR_HLS_MAX_BLOCKING were waiting.", nil, nil)
	descWaitTimedOut = prometheus.NewDesc("onair_hls_blocking_timeouts_total",
		"LL-HLS blocking requests answered 503 because the segment or part did not appear within three target durations.", nil, nil)
)

func (b blockingCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descWaiting
	ch <- descWaitRefused
	ch <- descWaitTimedOut
}

func (b blockingCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(descWaiting, prometheus.GaugeValue, float64(b.w.now.Load()))
	ch <- prometheus.MustNewConstMetric(descWaitRefused, prometheus.CounterValue, float64(b.w.refused.Load()))
	ch <- prometheus.MustNewConstMetric(descWaitTimedOut, prometheus.CounterValue, float64(b.w.timedOut.Load()))
}

// parsePartDuration accepts the LL-HLS part length: 0 turns parts off,
// otherwise between 100 ms and the 2 s segment.
func parsePartDuration(v string) (any, error) {
	d, err := time.ParseDuration(v)
	if v == "0" {
		d, err = 0, nil
	}
	if err != nil || d != 0 && (d < 100*time.Millisecond || d > hls.DefaultSegmentDuration) {
		return time.Duration(0), errors.New("must be 0 (off) or a duration from 100ms to 2s such as 200ms")
	}
	return d, nil
}
