package shows

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
	"github.com/onair/onair/migrations"
)

// The outbox: every show change writes one row per event in the change's
// own transaction, so an event exists exactly when its change committed.
// With Redis the relay (relay.go) publishes each row to every node and
// marks it relayed; the cleanup trims old rows. Other modules may read the
// table (KeepOutbox holds rows for them); topic tells whose rows they are.
// A module that needs its own durable rows per event (webhooks) writes
// them from a SubscribeTx hook instead.

// TopicShow is the outbox topic of show events.
const TopicShow = "show"

// OutboxRow is one event in the outbox table.
type OutboxRow struct {
	bun.BaseModel `bun:"table:outbox,alias:ob"`

	ID     int64  `bun:"id,pk,autoincrement"`
	Topic  string `bun:"topic,notnull,type:varchar(32)"`
	Type   string `bun:"type,notnull,type:varchar(32)"`
	ShowID int64  `bun:"show_id,notnull"`
	// Payload is the JSON snapshot of the show after the change
	// (snapshot): a Show without its stream key and its user's password
	// hash and e-mail.
	Payload string `bun:"payload,notnull,type:text"`
	// ActorID is the user who made the change; nil is the system.
	ActorID   *int64     `bun:"actor_id"`
	CreatedAt time.Time  `bun:"created_at,notnull"`
	RelayedAt *time.Time `bun:"relayed_at"`
}

// outboxMigrations create the table with the indexes of the relay sweep
// (unrelayed rows in id order) and of the cleanup (by age). On MySQL the
// payload is a MEDIUMTEXT: a show's description alone may be 20 KB.
func outboxMigrations() []migrations.Migration {
	return []migrations.Migration{
		{ID: "0016_create_outbox", Up: func(ctx context.Context, db bun.IDB) error {
			if err := migrations.CreateTables((*OutboxRow)(nil))(ctx, db); err != nil {
				return err
			}
			if app.IsMySQL(db) {
				if _, err := db.ExecContext(ctx, "ALTER TABLE outbox MODIFY payload MEDIUMTEXT NOT NULL"); err != nil {
					return fmt.Errorf("outbox payload: %w", err)
				}
			}
			return nil
		}},
		{ID: "0017_index_outbox_relay", Up: migrations.CreateIndex((*OutboxRow)(nil), "outbox_relay_idx", "relayed_at", "id")},
		{ID: "0018_index_outbox_created", Up: migrations.CreateIndex((*OutboxRow)(nil), "outbox_created_idx", "created_at")},
	}
}

// snapshot is the show as an outbox row carries it: the secrets are left
// out, since the row travels through Redis and to other modules.
func snapshot(sh *Show) ([]byte, error) {
	c := *sh
	c.StreamKey = ""
	if sh.User != nil {
		u := *sh.User
		u.PasswordHash, u.Email = "", ""
		c.User = &u
	}
	return json.Marshal(&c)
}

// rowOf is the outbox row of ev (ID kept).
func rowOf(ev Event, now time.Time) (OutboxRow, error) {
	payload, err := snapshot(ev.Show)
	if err != nil {
		return OutboxRow{}, err
	}
	row := OutboxRow{
		ID: ev.ID, Topic: TopicShow, Type: ev.Type, ShowID: ev.Show.ID,
		Payload: string(payload), CreatedAt: now,
	}
	if ev.By != nil && ev.By.UserID != 0 {
		uid := ev.By.UserID
		row.ActorID = &uid
	}
	return row, nil
}

// writeOutbox inserts the row of ev in tx and returns its id. Without a
// relay (no Redis) the row is born relayed: there is no other node to tell,
// and a relay turned on later must not replay the past.
func writeOutbox(ctx context.Context, tx bun.IDB, ev Event, now time.Time, relayed bool) (int64, error) {
	row, err := rowOf(ev, now)
	if err != nil {
		return 0, err
	}
	row.ID = 0
	if relayed {
		row.RelayedAt = &row.CreatedAt
	}
	if _, err := tx.NewInsert().Model(&row).Exec(ctx); err != nil {
		return 0, err
	}
	return row.ID, nil
}

// KeepOutbox registers fn, which returns the smallest outbox id its
// module still has to read (0 when it needs none): the cleanup deletes no
// row from that id on. A module that consumes the outbox (webhooks) calls
// it in Provision so rows are not trimmed under it.
func (s *Service) KeepOutbox(fn func(ctx context.Context) (int64, error)) {
	s.subsMu.Lock()
	defer s.subsMu.Unlock()
	s.keeps = append(s.keeps, fn)
}

const trimBatch = 1000

// TrimOutbox deletes the outbox rows created before cutoff, except those
// a KeepOutbox hook holds; with onlyRelayed, rows not yet relayed stay as
// well. It reports how many went. The outbox cleaner calls it every
// minute with ONAIR_OUTBOX_RETENTION and onlyRelayed: a row is never
// trimmed before some node relayed it.
func (s *Service) TrimOutbox(ctx context.Context, cutoff time.Time, onlyRelayed bool) (int, error) {
	s.subsMu.RLock()
	keeps := s.keeps[:len(s.keeps):len(s.keeps)]
	s.subsMu.RUnlock()
	var below int64
	for _, fn := range keeps {
		id, err := fn(ctx)
		if err != nil {
			return 0, fmt.Errorf("shows: outbox hold: %w", err)
		}
		if id > 0 && (below == 0 || id < below) {
			below = id
		}
	}
	n := 0
	for {
		var ids []int64
		q := s.db.NewSelect().Model((*OutboxRow)(nil)).Column("id").
			Where("created_at < ?", cutoff).OrderExpr("id ASC").Limit(trimBatch)
		if onlyRelayed {
			q = q.Where("relayed_at IS NOT NULL")
		}
		if below > 0 {
			q = q.Where("id < ?", below)
		}
		if err := q.Scan(ctx, &ids); err != nil {
			return n, fmt.Errorf("shows: trim outbox: %w", err)
		}
		if len(ids) == 0 {
			return n, nil
		}
		if _, err := s.db.NewDelete().Model((*OutboxRow)(nil)).Where("id IN (?)", bun.List(ids)).Exec(ctx); err != nil {
			return n, fmt.Errorf("shows: trim outbox: %w", err)
		}
		n += len(ids)
		if len(ids) < trimBatch {
			return n, nil
		}
	}
}

// eventOf rebuilds the event an outbox row records, as a remote node sees
// it.
func eventOf(row *OutboxRow) (Event, error) {
	sh := new(Show)
	if err := json.Unmarshal([]byte(row.Payload), sh); err != nil {
		return Event{}, fmt.Errorf("outbox row %d: %w", row.ID, err)
	}
	ev := Event{ID: row.ID, Type: row.Type, Show: sh, Remote: true}
	if row.ActorID != nil {
		ev.By = &app.Principal{UserID: *row.ActorID}
	}
	return ev, nil
}

// trimEvery is how often each node trims the outbox.
const trimEvery = time.Minute

// startOutbox runs, as Core.Go loops from Start until the module stops,
// the relay (with Redis) and the cleanup of old outbox rows (retention 0
// keeps every row).
func startOutbox(ctx context.Context, core *app.Core, svc *Service, retention time.Duration) {
	if r := svc.relay; r != nil {
		// The reader starts where the stream stands now: the events
		// committed from here on reach this node.
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		r.position(pctx)
		cancel()
		core.Go("shows: event relay", r.run)
	}
	if retention > 0 {
		core.Go("shows: outbox cleanup", func(ctx context.Context) {
			app.Every(ctx, trimEvery, func(ctx context.Context) {
				if _, err := svc.TrimOutbox(ctx, svc.clock.Stamp().Add(-retention), true); err != nil && ctx.Err() == nil {
					svc.log.Error("shows: outbox cleanup", "err", err)
				}
			})
		})
	}
}
