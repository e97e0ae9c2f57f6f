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
// table (the webhooks module fans its deliveries out from it); topic tells
// whose rows they are.

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

// writeOutbox inserts the row of ev in tx and returns its id.
func writeOutbox(ctx context.Context, tx bun.IDB, ev Event) (int64, error) {
	payload, err := snapshot(ev.Show)
	if err != nil {
		return 0, err
	}
	row := &OutboxRow{
		Topic: TopicShow, Type: ev.Type, ShowID: ev.Show.ID,
		Payload: string(payload), CreatedAt: app.Now(),
	}
	if ev.By != nil && ev.By.UserID != 0 {
		uid := ev.By.UserID
		row.ActorID = &uid
	}
	if _, err := tx.NewInsert().Model(row).Exec(ctx); err != nil {
		return 0, err
	}
	return row.ID, nil
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
