package outbox

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
	"github.com/onair/onair/app/events"
	"github.com/onair/onair/migrations"
)

// Row is one event in the outbox table. The table is shared: Topic says
// whose row it is. Its columns are those the shows module created it with
// (shows:0016), so nodes of either release write the same rows during a
// rolling upgrade; Subject is kept in the column show_id.
type Row struct {
	bun.BaseModel `bun:"table:outbox,alias:ob"`

	ID    int64  `bun:"id,pk,autoincrement"`
	Topic string `bun:"topic,notnull,type:varchar(32)"`
	// Type is a kind within the topic (the shows': "created", "live"...);
	// may be empty.
	Type string `bun:"type,notnull,type:varchar(32)"`
	// Subject is the id of what the event is about (a show, a user); 0
	// when none.
	Subject int64 `bun:"show_id,notnull"`
	// Payload is the event, JSON-encoded by its topic's codec.
	Payload string `bun:"payload,notnull,type:text"`
	// ActorID is the user who caused the event; nil is the system.
	ActorID   *int64     `bun:"actor_id"`
	CreatedAt time.Time  `bun:"created_at,notnull"`
	RelayedAt *time.Time `bun:"relayed_at"`
}

// CreateTable creates the outbox table unless it exists. On MySQL the
// payload is a MEDIUMTEXT: a show's description alone may be 20 KB. A
// table that has it already is left alone (no copy of a large table).
func CreateTable(ctx context.Context, db bun.IDB) error {
	if err := migrations.CreateTables((*Row)(nil))(ctx, db); err != nil {
		return err
	}
	if !app.IsMySQL(db) {
		return nil
	}
	var typ string
	err := db.NewSelect().TableExpr("information_schema.columns").ColumnExpr("LOWER(data_type)").
		Where("table_schema = DATABASE()").Where("table_name = ?", "outbox").Where("column_name = ?", "payload").
		Scan(ctx, &typ)
	if err != nil {
		return fmt.Errorf("outbox payload: %w", err)
	}
	if typ == "mediumtext" {
		return nil
	}
	if _, err := db.ExecContext(ctx, "ALTER TABLE outbox MODIFY payload MEDIUMTEXT NOT NULL"); err != nil {
		return fmt.Errorf("outbox payload: %w", err)
	}
	return nil
}

// IndexRelay creates the index of the relay's sweep: unrelayed rows in id
// order.
var IndexRelay = migrations.CreateIndex((*Row)(nil), "outbox_relay_idx", "relayed_at", "id")

// IndexCreated creates the index of the cleanup: rows by age.
var IndexCreated = migrations.CreateIndex((*Row)(nil), "outbox_created_idx", "created_at")

// Codec turns a topic's events into rows and back.
type Codec[T any] struct {
	// Encode fills Type, Subject, Payload and ActorID of ev's row.
	Encode func(ev T) (Row, error)
	// Decode rebuilds the event of a row committed on another node (ID
	// set; CreatedAt and RelayedAt are not).
	Decode func(row *Row) (T, error)
}

// Topic is a durable topic: the events topic its subscribers use, the
// name its rows carry (at most 32 bytes) and its codec.
type Topic[T any] struct {
	name   string
	events events.Topic[T]
	codec  Codec[T]
}

// NewTopic returns the durable topic name of the events of et, stored
// with codec.
func NewTopic[T any](name string, et events.Topic[T], codec Codec[T]) Topic[T] {
	if name == "" || len(name) > 32 || codec.Encode == nil || codec.Decode == nil {
		panic(fmt.Sprintf("outbox: topic %q needs a name of 1 to 32 bytes and a codec", name))
	}
	return Topic[T]{name: name, events: et, codec: codec}
}

// JSON returns the durable topic name of the events of et, stored as their
// JSON encoding (Type, Subject and ActorID empty).
func JSON[T any](name string, et events.Topic[T]) Topic[T] {
	return NewTopic(name, et, Codec[T]{
		Encode: func(ev T) (Row, error) {
			b, err := json.Marshal(ev)
			return Row{Payload: string(b)}, err
		},
		Decode: func(row *Row) (T, error) {
			var ev T
			err := json.Unmarshal([]byte(row.Payload), &ev)
			return ev, err
		},
	})
}

// Name is the name the topic's rows carry.
func (t Topic[T]) Name() string { return t.name }

// Events is the events topic the durable events are delivered on.
func (t Topic[T]) Events() events.Topic[T] { return t.events }

// Encode returns ev's row, as Write would insert it (without ID or times).
func (t Topic[T]) Encode(ev T) (Row, error) {
	row, err := t.codec.Encode(ev)
	if err != nil {
		return Row{}, fmt.Errorf("outbox: encode %s: %w", t.name, err)
	}
	row.ID, row.Topic, row.CreatedAt, row.RelayedAt = 0, t.name, time.Time{}, nil
	return row, nil
}

// Outbox is the boot's outbox: the rows, the topics declared on this node
// and, with Redis, the relay.
type Outbox struct {
	db    *bun.DB
	bus   *events.Bus
	clock *app.Clock
	log   *slog.Logger

	// relay publishes committed rows to the other nodes (relay.go); nil
	// without Redis.
	relay *relay

	mu     sync.RWMutex
	topics map[string]func(ctx context.Context, row *Row) error // Declare: decode and emit a remote row
	keeps  []func(context.Context) (int64, error)               // Keep
}

// New returns an outbox on db that delivers on bus, without a relay (the
// module adds one with Redis). Tests make their own.
func New(db *bun.DB, bus *events.Bus, clock *app.Clock, log *slog.Logger) *Outbox {
	if log == nil {
		log = slog.Default()
	}
	if clock == nil {
		clock = app.NewClock(nil)
	}
	return &Outbox{db: db, bus: bus, clock: clock, log: log, topics: map[string]func(context.Context, *Row) error{}}
}

// Relayed tells whether the outbox has a relay (Redis): whether its events
// reach other nodes.
func (o *Outbox) Relayed() bool { return o.relay != nil }

// Declare makes this node deliver t's events committed on other nodes to
// t's subscribers. Call it in Provision; a second topic of the same name
// panics (a programming error).
func Declare[T any](o *Outbox, t Topic[T]) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, dup := o.topics[t.name]; dup {
		panic(fmt.Sprintf("outbox: topic %q declared twice", t.name))
	}
	o.topics[t.name] = func(ctx context.Context, row *Row) error {
		ev, err := t.codec.Decode(row)
		if err != nil {
			return err
		}
		events.Emit(withOrigin(ctx, row.ID, true), o.bus, t.events, ev)
		return nil
	}
}

// Write inserts ev's row in tx and returns it with its id. Without a relay
// (no Redis) the row is born relayed: there is no other node to tell, and
// a relay turned on later must not replay the past. Once tx commits, the
// caller hands the row to Committed. Publish does all of it; Write is for
// a publisher that runs its own hooks and delivery (the shows module).
func Write[T any](ctx context.Context, o *Outbox, tx bun.IDB, t Topic[T], ev T) (Row, error) {
	row, err := t.Encode(ev)
	if err != nil {
		return Row{}, err
	}
	row.CreatedAt = o.clock.Stamp()
	if o.relay == nil {
		row.RelayedAt = &row.CreatedAt
	}
	if _, err := tx.NewInsert().Model(&row).Exec(ctx); err != nil {
		return Row{}, fmt.Errorf("outbox: write %s: %w", t.name, err)
	}
	return row, nil
}

// Publish publishes ev on t inside tx: t's transaction subscribers run
// first (an error stops them and is returned, for the publisher to roll
// back), then ev's row is written, so it holds the event as they left it.
// Once tx commits, this node's subscribers get ev and the relay takes
// the row to the other nodes. A nil outbox (a service made outside a
// boot) publishes ev as events.Publish does.
func Publish[T any](ctx context.Context, o *Outbox, tx *events.Tx, t Topic[T], ev T) error {
	if o == nil {
		return events.Publish(ctx, tx, t.events, ev)
	}
	if err := events.PublishTx(ctx, tx, t.events, ev); err != nil {
		return err
	}
	row, err := Write(ctx, o, tx, t, ev)
	if err != nil {
		return err
	}
	tx.AfterCommit(func(ctx context.Context) {
		o.Committed(row)
		Emit(ctx, o, t, row.ID, ev)
	})
	return nil
}

// Emit calls t's subscribers on this node with ev, the event of row id
// that this node committed (Remote(ctx) is false for them).
func Emit[T any](ctx context.Context, o *Outbox, t Topic[T], id int64, ev T) {
	events.Emit(withOrigin(ctx, id, false), o.bus, t.events, ev)
}

// Committed hands the rows of a commit to the relay, which adds them to
// the stream; they are this node's own, so its reader will not deliver
// them again. It never blocks: a full queue leaves them to the sweep.
// Without a relay it does nothing.
func (o *Outbox) Committed(rows ...Row) {
	if o.relay != nil && len(rows) > 0 {
		o.relay.committed(rows)
	}
}

type originKey struct{}

type origin struct {
	id     int64
	remote bool
}

func withOrigin(ctx context.Context, id int64, remote bool) context.Context {
	return context.WithValue(ctx, originKey{}, origin{id, remote})
}

// Remote tells a subscriber of a durable topic that the event it is
// handed was committed on another node and came through Redis.
func Remote(ctx context.Context) bool {
	o, _ := ctx.Value(originKey{}).(origin)
	return o.remote
}

// EventID is the outbox row id of the durable event a subscriber is
// handed (unique across nodes); 0 outside a durable event's delivery.
func EventID(ctx context.Context) int64 {
	o, _ := ctx.Value(originKey{}).(origin)
	return o.id
}

// Keep registers fn, which returns the smallest outbox id its module
// still has to read (0 when it needs none): Trim deletes no row from that
// id on. A module that reads the table itself calls it in Provision.
func (o *Outbox) Keep(fn func(ctx context.Context) (int64, error)) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.keeps = append(o.keeps, fn)
}

const trimBatch = 1000

// Trim deletes the rows created before cutoff, except those a Keep hook
// holds; with onlyRelayed, rows not yet relayed stay as well. It reports
// how many went. The cleanup calls it every minute with
// ONAIR_OUTBOX_RETENTION and onlyRelayed: a row is never trimmed before
// some node relayed it.
func (o *Outbox) Trim(ctx context.Context, cutoff time.Time, onlyRelayed bool) (int, error) {
	o.mu.RLock()
	keeps := o.keeps[:len(o.keeps):len(o.keeps)]
	o.mu.RUnlock()
	var below int64
	for _, fn := range keeps {
		id, err := fn(ctx)
		if err != nil {
			return 0, fmt.Errorf("outbox: hold: %w", err)
		}
		if id > 0 && (below == 0 || id < below) {
			below = id
		}
	}
	n := 0
	for {
		var ids []int64
		q := o.db.NewSelect().Model((*Row)(nil)).Column("id").
			Where("created_at < ?", cutoff).OrderExpr("id ASC").Limit(trimBatch)
		if onlyRelayed {
			q = q.Where("relayed_at IS NOT NULL")
		}
		if below > 0 {
			q = q.Where("id < ?", below)
		}
		if err := q.Scan(ctx, &ids); err != nil {
			return n, fmt.Errorf("outbox: trim: %w", err)
		}
		if len(ids) == 0 {
			return n, nil
		}
		if _, err := o.db.NewDelete().Model((*Row)(nil)).Where("id IN (?)", bun.List(ids)).Exec(ctx); err != nil {
			return n, fmt.Errorf("outbox: trim: %w", err)
		}
		n += len(ids)
		if len(ids) < trimBatch {
			return n, nil
		}
	}
}

// deliverRemote hands a row from the stream to its topic's subscribers;
// a topic this node does not declare (a module not in its build) is
// skipped.
func (o *Outbox) deliverRemote(ctx context.Context, row *Row) (bool, error) {
	o.mu.RLock()
	fn := o.topics[row.Topic]
	o.mu.RUnlock()
	if fn == nil {
		return false, nil
	}
	return true, fn(ctx, row)
}
