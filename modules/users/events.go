package users

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/onair/onair/app"
	"github.com/onair/onair/app/events"
	"github.com/onair/onair/app/outbox"
	"github.com/onair/onair/app/txretry"
)

// The users module's events (package app/events). Modules that keep rows
// of users handle them inside the publisher's transaction, so a user and
// what they own go together or not at all.

// Followed is published inside the transaction of every new follow (not of
// a repeated one), after the change; a subscriber's error rolls the follow
// back (the notify and webhooks modules).
var Followed = events.NewTopic[Follow]("users.followed")

// Deleted is published inside the transaction that deletes a user, before
// the user's row goes: each module that keeps rows of users deletes them
// through the event's transaction (the shows module the user's shows and
// favorites, the chat their messages, the notify module their mail
// switches), and an error from any leaves everything in place. A table
// whose user column is part of its primary key has no foreign key
// (bun's WithForeignKeys makes none there), so nothing cascades to it.
// It is a durable event (deletedOut): once the deletion commits, the
// subscribers of every node get it, once (outbox.Remote tells the other
// nodes' apart); this module's drop the user's cached tokens there.
var Deleted = events.NewTopic[*Deletion]("users.deleted")

// deletedOut is Deleted's outbox topic: a row's subject is the user
// deleted, its actor the staff member, its payload the Deletion as the
// transaction's handlers left it (with the shows they deleted).
var deletedOut = outbox.NewTopic("users.deleted", Deleted, outbox.Codec[*Deletion]{
	Encode: func(d *Deletion) (outbox.Row, error) {
		b, err := json.Marshal(d)
		row := outbox.Row{Subject: d.UserID, Payload: string(b)}
		if d.By != nil && d.By.UserID != 0 {
			by := d.By.UserID
			row.ActorID = &by
		}
		return row, err
	},
	Decode: func(row *outbox.Row) (*Deletion, error) {
		d := new(Deletion)
		if err := json.Unmarshal([]byte(row.Payload), d); err != nil {
			return nil, fmt.Errorf("users: deletion of outbox row %d: %w", row.ID, err)
		}
		return d, nil
	},
})

// TagsMerged is published inside the migration step that merged tags
// (users:0006), once the links were moved: modules that keep data derived
// from tag links bring it up to date in the same step (the shows module's
// counts and tag ids). Subscribe to it in Subscribe, before migrations.
var TagsMerged = events.NewTopic[TagMerge]("users.tags_merged")

// Deletion is a user being deleted by a staff member. On other nodes
// (outbox.Remote) By carries the user id, token id and roles only.
type Deletion struct {
	UserID int64
	By     *app.Principal
	// Shows lists the ids of the user's shows the handlers deleted, for
	// the staff's audit entry (DeletedShows adds to it).
	Shows []int64
}

// DeletedShows records show ids a handler deleted.
func (d *Deletion) DeletedShows(ids ...int64) { d.Shows = append(d.Shows, ids...) }

// TagMerge says which tags went into which: Into[from] = the tag kept.
type TagMerge struct {
	Into map[int64]int64
}

// Subscribe keeps the boot's bus: the users module publishes its events
// on it, from its migrations on (a tag merge).
func (m *Module) Subscribe(bus *events.Bus) { m.bus = bus }

// events is the service's event bus: the boot's; a service made outside
// a boot (tests, onairtest.CreateUser) has one of its own that nobody
// subscribes to.
func (s *Service) events() *events.Bus { return s.bus }

// DeleteUser deletes a user as staff member by, in one transaction: their
// follows go first (deleteFollows), then the Deleted event's handlers
// delete what other modules keep of the user (shows and favorites, chat
// messages, mail switches), then the user's row goes (deleteRow) and, by
// the foreign keys, their tokens, sessions, tags and reset links. The
// order is the one of the locks a follow, a favorite or a mail switch
// takes (follows, shows, favorites, switches, users last), so the
// deletion and one of those wait for each other rather than deadlock. It
// returns the ids of the shows deleted. Two deletions at once of users who
// follow each other still deadlock (each locks its follows, gaps included,
// then the rows of those it followed), a crowd of them over and over: a
// MySQL deadlock runs the deletion again, after a growing random pause, up
// to txretry.Attempts times in all.
func (s *Service) DeleteUser(ctx context.Context, id int64, by *app.Principal) ([]int64, error) {
	var ev *Deletion
	err := s.events().RunInTx(ctx, s.db, txretry.Attempts, retryable, func(ctx context.Context, tx *events.Tx) error {
		ev = &Deletion{UserID: id, By: by, Shows: []int64{}}
		followed, err := deleteFollows(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := outbox.Publish(ctx, s.outbox, tx, deletedOut, ev); err != nil {
			return err
		}
		return deleteRow(ctx, tx, id, followed)
	})
	if err != nil {
		return nil, err
	}
	// Their cached tokens go at once here; the other nodes drop theirs
	// when the durable event reaches them (tokensOfDeleted).
	s.tokens.drop(0, id)
	return ev.Shows, nil
}

// tokensOfDeleted drops, on every other node, the cached tokens of a user
// deleted there: the durable Deleted event reaches each node once, even
// one that could not hear Redis when the deletion committed (the outbox's
// sweep relays it when Redis is back).
func (s *Service) tokensOfDeleted(ctx context.Context, d *Deletion) {
	if outbox.Remote(ctx) {
		s.tokens.drop(0, d.UserID)
	}
}

func retryable(err error) bool { return app.IsDeadlock(err) }
