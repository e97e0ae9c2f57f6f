package shows

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
	"github.com/onair/onair/app/outbox"
	"github.com/onair/onair/migrations"
)

// Show events are durable events (package app/outbox): every show change
// writes one outbox row per event in the change's own transaction, so an
// event exists exactly when its change committed, and with Redis the
// outbox's relay delivers it to every node. A module that needs its own
// durable rows per event (webhooks) writes them from a SubscribeTx hook.

// TopicShow is the outbox topic of show events (the topic column of their
// rows).
const TopicShow = "show"

// EventsStream is the Redis stream show events travel on, after
// ONAIR_REDIS_PREFIX: the outbox's, which every durable topic shares.
const EventsStream = outbox.Stream

// durable is the outbox topic of Changed. A row's subject is the show, its
// payload the show after the change (snapshot).
var durable = outbox.NewTopic(TopicShow, Changed, outbox.Codec[Event]{Encode: rowOf, Decode: eventOf})

// outboxMigrations created the table when it was the shows module's. The
// outbox module (registered first) creates it now: on a fresh database
// these steps find it done; on the others they ran as shows:0016..0018.
func outboxMigrations() []migrations.Migration {
	return []migrations.Migration{
		{ID: "0016_create_outbox", Up: outbox.CreateTable},
		{ID: "0017_index_outbox_relay", Up: outbox.IndexRelay},
		{ID: "0018_index_outbox_created", Up: outbox.IndexCreated},
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

// rowOf is the outbox row of ev (the codec's Encode).
func rowOf(ev Event) (outbox.Row, error) {
	payload, err := snapshot(ev.Show)
	if err != nil {
		return outbox.Row{}, err
	}
	row := outbox.Row{Type: ev.Type, Subject: ev.Show.ID, Payload: string(payload)}
	if ev.By != nil && ev.By.UserID != 0 {
		uid := ev.By.UserID
		row.ActorID = &uid
	}
	return row, nil
}

// eventOf rebuilds the event an outbox row records, as a remote node sees
// it (the codec's Decode).
func eventOf(row *outbox.Row) (Event, error) {
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

// writeOutbox inserts the row of ev in tx and returns its id.
func (s *Service) writeOutbox(ctx context.Context, tx bun.IDB, ev Event) (int64, error) {
	row, err := outbox.Write(ctx, s.outbox, tx, durable, ev)
	if err != nil {
		return 0, err
	}
	return row.ID, nil
}
