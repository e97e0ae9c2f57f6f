package outbox

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
)

// With Redis, durable events reach every node through one Redis stream:
//
//   - the node that commits an event delivers it to its own subscribers
//     in-process (Remote false), and hands its row to its relay, which
//     adds it to the stream and marks the row relayed;
//   - every node sweeps the outbox for rows still unrelayed after
//     relayGrace (their node died between the commit and the stream, or
//     Redis was away) and relays them, claiming them with row locks so two
//     nodes do not both take a row (FOR UPDATE SKIP LOCKED on MySQL;
//     SQLite is one node): every ONAIR_OUTBOX_SWEEP (30 s) for what other
//     nodes left, each second (relayEvery) from the moment one of its own
//     relays failed until no row is left unrelayed;
//   - every node reads the stream from where it stood at start and calls
//     the subscribers of each event's topic with Remote true for the
//     events it did not emit, once per event id (a re-relayed event is
//     dropped).
//
// A committed event is therefore delivered to every running node at least
// once by the stream and at most once to each subscriber (as long as the
// copies arrive within seenCapacity events of each other). A node that is
// down when an event passes misses it, as it misses in-process events, and
// so does a reader that falls more than the stream's length behind: the
// subscribers keep state in the database and reconcile at start.

// Stream is the name of the Redis stream of durable events, after
// ONAIR_REDIS_PREFIX ("onair:events" by default).
const Stream = "events"

const (
	relayEvery   = time.Second     // how often a node sweeps while rows are left unrelayed
	relayGrace   = 3 * time.Second // how old an unrelayed row is before the sweep takes it (created_at has whole seconds)
	relayBatch   = 100             // rows per sweep transaction, messages per read
	relayQueue   = 1024            // commits waiting for the relay; beyond, the sweep takes them
	readBlock    = time.Second     // how long one stream read waits
	seenCapacity = 16384           // event ids remembered for the dedupe
)

// legacyTopic is the topic of a stream message without one: the shows
// module's, whose messages (before the outbox was shared) carried the
// payload as "show".
const legacyTopic = "show"

// relay moves this node's committed rows to the stream and the stream's
// events to this node's subscribers.
type relay struct {
	o      *Outbox
	rdb    *redis.Client
	stream string
	maxLen int64
	node   string // random id of this process, written on each message as "from"

	queue chan []Row
	seen  *seenSet
	// sweepEvery is the sweep's interval while no row is known unrelayed
	// (ONAIR_OUTBOX_SWEEP); kick starts the sweep's quick pace when one
	// of this node's relays failed.
	sweepEvery time.Duration
	kick       chan struct{}
	// background bounds the last relays at shutdown (Core.Background).
	background func(time.Duration) (context.Context, context.CancelFunc)
	// last is the stream position the reader resumes from.
	last string

	relayed   *prometheus.CounterVec
	received  prometheus.Counter
	lag       prometheus.Histogram
	unrelayed prometheus.Gauge
}

func newRelay(o *Outbox, rdb *redis.Client, stream string, maxLen int64) *relay {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return &relay{
		o: o, rdb: rdb, stream: stream, maxLen: maxLen, node: hex.EncodeToString(b[:]),
		queue: make(chan []Row, relayQueue), seen: newSeenSet(seenCapacity),
		sweepEvery: defaultSweepEvery, kick: make(chan struct{}, 1),
		background: func(d time.Duration) (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), d)
		},
		relayed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "onair_events_relayed_total",
			Help: "Durable events (show changes, user deletions) this node added to the Redis stream, by path: commit (right after the change) or sweep (left unrelayed by a node).",
		}, []string{"path"}),
		received: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "onair_events_received_total",
			Help: "Durable events committed on other nodes and delivered to this node's subscribers.",
		}),
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "onair_events_relay_lag_seconds",
			Help:    "Time from an event's commit to its addition to the Redis stream (whole-second commit times).",
			Buckets: []float64{0.5, 1, 2, 3, 5, 10, 30, 60},
		}),
		unrelayed: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "onair_events_unrelayed",
			Help: "Outbox rows not yet relayed to the Redis stream, as this node's last sweep counted them.",
		}),
	}
}

func (r *relay) collectors() []prometheus.Collector {
	return []prometheus.Collector{r.relayed, r.received, r.lag, r.unrelayed}
}

// committed takes the rows of a commit: they are this node's own (the
// reader will not deliver them again) and go to the stream. It never
// blocks the change; a full queue leaves them to the sweep.
func (r *relay) committed(rows []Row) {
	for _, row := range rows {
		r.seen.add(row.ID)
	}
	select {
	case r.queue <- rows:
	default:
		r.o.log.Warn("outbox: event relay queue full; the outbox sweep will relay", "events", len(rows))
		r.hurry()
	}
}

// hurry tells the sweep that this node left rows unrelayed: it sweeps
// each second until none is left.
func (r *relay) hurry() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// position reads the stream's last id, so the reader starts with what is
// added from now on.
func (r *relay) position(ctx context.Context) {
	r.last = "$"
	msgs, err := r.rdb.XRevRangeN(ctx, r.stream, "+", "-", 1).Result()
	switch {
	case err != nil:
		r.o.log.Log(ctx, app.RedisLevel(err, slog.LevelError), "outbox: read the events stream position", "err", err)
	case len(msgs) == 0:
		r.last = "0-0"
	default:
		r.last = msgs[0].ID
	}
}

// run runs the publisher, the reader and the sweep until ctx ends.
func (r *relay) run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); r.publishLoop(ctx) }()
	go func() { defer wg.Done(); r.readLoop(ctx) }()
	r.sweepLoop(ctx)
	wg.Wait()
}

// sweepLoop sweeps every sweepEvery, and each second (relayEvery) while
// the last sweep left rows unrelayed or failed, or once this node's relay
// failed (hurry): an idle node reads the outbox twice a minute, not each
// second.
func (r *relay) sweepLoop(ctx context.Context) {
	wait := r.sweepEvery
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-r.kick:
			t.Reset(relayEvery) // the rows are younger than relayGrace
			continue
		}
		wait = r.sweepEvery
		left, err := r.sweep(ctx)
		if err != nil && ctx.Err() == nil {
			level := slog.LevelError
			if errors.Is(err, errSweepPublish) {
				level = app.RedisLevel(err, level) // the kernel logs Redis away once
			}
			r.o.log.Log(ctx, level, "outbox: sweep", "err", err)
		}
		if err != nil || left > 0 {
			wait = relayEvery
		}
		t.Reset(wait)
	}
}

func (r *relay) publishLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			// At shutdown the events of the last requests are still
			// relayed, briefly; what is left is swept by another node.
			drain, cancel := r.background(2 * time.Second)
			defer cancel()
			for {
				select {
				case rows := <-r.queue:
					r.relayCommitted(drain, rows)
				default:
					return
				}
			}
		case rows := <-r.queue:
			r.relayCommitted(ctx, rows)
		}
	}
}

func (r *relay) relayCommitted(ctx context.Context, rows []Row) {
	if err := r.publish(ctx, rows, "commit"); err != nil {
		if ctx.Err() == nil {
			r.o.log.Log(ctx, app.RedisLevel(err, slog.LevelWarn), "outbox: relay events; the outbox sweep will retry", "err", err)
		}
		r.hurry()
		return
	}
	if err := markRelayed(ctx, r.o.db, rows, r.o.clock.Stamp()); err != nil {
		if ctx.Err() == nil {
			r.o.log.Warn("outbox: mark events relayed", "err", err)
		}
		r.hurry()
	}
}

// publish adds rows to the stream, in order, in one round trip. The
// stream is capped near maxLen entries (MAXLEN ~).
func (r *relay) publish(ctx context.Context, rows []Row, path string) error {
	if len(rows) == 0 {
		return nil
	}
	pipe := r.rdb.Pipeline()
	for _, row := range rows {
		actor := ""
		if row.ActorID != nil {
			actor = strconv.FormatInt(*row.ActorID, 10)
		}
		// A show event's payload goes under the older "show" key, so
		// that a node of the previous release, during a rolling upgrade,
		// still reads it; any other topic's under "payload".
		payloadKey := "payload"
		if row.Topic == legacyTopic {
			payloadKey = "show"
		}
		pipe.XAdd(ctx, &redis.XAddArgs{
			Stream: r.stream, MaxLen: r.maxLen, Approx: true,
			Values: []any{"id", row.ID, "topic", row.Topic, "type", row.Type, "subject", row.Subject,
				payloadKey, row.Payload, "actor", actor, "from", r.node},
		})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return err
	}
	now := time.Now()
	for _, row := range rows {
		r.lag.Observe(max(now.Sub(row.CreatedAt).Seconds(), 0))
	}
	r.relayed.WithLabelValues(path).Add(float64(len(rows)))
	return nil
}

func markRelayed(ctx context.Context, db bun.IDB, rows []Row, now time.Time) error {
	if len(rows) == 0 {
		return nil
	}
	ids := make([]int64, len(rows))
	for i, row := range rows {
		ids[i] = row.ID
	}
	_, err := db.NewUpdate().Model((*Row)(nil)).Set("relayed_at = ?", now).
		Where("id IN (?)", bun.List(ids)).Where("relayed_at IS NULL").Exec(ctx)
	return err
}

// errSweepPublish marks a sweep that could not add its rows to the events
// stream (Redis), rather than read or mark them (the database).
var errSweepPublish = errors.New("add to the events stream")

// sweep relays the rows left unrelayed for longer than relayGrace, oldest
// first, a batch per transaction; the rows are locked until they are
// marked, and rows another node holds are skipped. It first counts the
// unrelayed rows without a lock, which is all it does on most sweeps, and
// returns how many it left unrelayed (younger than relayGrace, or held
// by another node).
func (r *relay) sweep(ctx context.Context) (int64, error) {
	db := r.o.db
	left, err := db.NewSelect().Model((*Row)(nil)).Where("relayed_at IS NULL").Count(ctx)
	if err != nil {
		return 0, err
	}
	r.unrelayed.Set(float64(left))
	if left == 0 {
		return 0, nil
	}
	// READ COMMITTED on MySQL: the locking read locks the rows it
	// returns, not the gaps of the index, so it never holds up a change
	// inserting its outbox row.
	var opts *sql.TxOptions
	if app.IsMySQL(db) {
		opts = &sql.TxOptions{Isolation: sql.LevelReadCommitted}
	}
	n := 0
	for {
		var rows []Row
		err := db.RunInTx(ctx, opts, func(ctx context.Context, tx bun.Tx) error {
			q := tx.NewSelect().Model(&rows).Where("relayed_at IS NULL").
				Where("created_at <= ?", r.o.clock.Stamp().Add(-relayGrace)).OrderExpr("id ASC").Limit(relayBatch)
			if app.IsMySQL(tx) {
				q = q.For("UPDATE SKIP LOCKED")
			}
			if err := q.Scan(ctx); err != nil {
				return err
			}
			if err := r.publish(ctx, rows, "sweep"); err != nil {
				return fmt.Errorf("%w: %w", errSweepPublish, err)
			}
			return markRelayed(ctx, tx, rows, r.o.clock.Stamp())
		})
		if err != nil {
			return max(left-int64(n), 0), err
		}
		n += len(rows)
		if len(rows) < relayBatch {
			left = max(left-int64(n), 0)
			r.unrelayed.Set(float64(left))
			return left, nil
		}
	}
}

// readLoop delivers the stream's events to this node's subscribers.
func (r *relay) readLoop(ctx context.Context) {
	for ctx.Err() == nil {
		res, err := r.rdb.XRead(ctx, &redis.XReadArgs{
			Streams: []string{r.stream, r.last}, Count: relayBatch, Block: readBlock,
		}).Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			r.o.log.Log(ctx, app.RedisLevel(err, slog.LevelError), "outbox: read the events stream", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(relayEvery):
			}
			continue
		}
		for _, st := range res {
			for _, msg := range st.Messages {
				if ctx.Err() != nil {
					return // shutting down: a node that is stopping misses what follows
				}
				r.last = msg.ID
				r.receive(ctx, msg)
			}
		}
	}
}

// receive delivers one stream message unless this node has seen its event
// (its own, or a re-relayed one).
func (r *relay) receive(ctx context.Context, msg redis.XMessage) {
	str := func(k string) string { s, _ := msg.Values[k].(string); return s }
	id, err := strconv.ParseInt(str("id"), 10, 64)
	if err != nil || id <= 0 {
		r.o.log.Error("outbox: events stream message without an id", "msg", msg.ID)
		return
	}
	if !r.seen.add(id) {
		return
	}
	row := &Row{ID: id, Topic: str("topic"), Type: str("type"), Payload: str("payload")}
	if row.Topic == "" {
		row.Topic = legacyTopic // an entry of the previous release
	}
	if row.Topic == legacyTopic {
		row.Payload = str("show")
	}
	row.Subject, _ = strconv.ParseInt(str("subject"), 10, 64)
	if a, err := strconv.ParseInt(str("actor"), 10, 64); err == nil {
		row.ActorID = &a
	}
	known, err := r.o.deliverRemote(ctx, row)
	switch {
	case err != nil:
		r.o.log.Error("outbox: events stream message", "msg", msg.ID, "topic", row.Topic, "err", err)
	case known:
		r.received.Inc()
	}
}

// seenSet remembers the last n event ids.
type seenSet struct {
	mu   sync.Mutex
	ids  map[int64]struct{}
	ring []int64
	next int
}

func newSeenSet(n int) *seenSet {
	return &seenSet{ids: make(map[int64]struct{}, n), ring: make([]int64, n)}
}

// add records id and tells whether it is new.
func (s *seenSet) add(id int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.ids[id]; ok {
		return false
	}
	if old := s.ring[s.next]; old != 0 {
		delete(s.ids, old)
	}
	s.ring[s.next] = id
	s.next = (s.next + 1) % len(s.ring)
	s.ids[id] = struct{}{}
	return true
}
