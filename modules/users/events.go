package users

import (
	"context"

	"github.com/onair/onair/app"
	"github.com/onair/onair/app/events"
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
// through the event's transaction (the shows module the user's shows, the
// chat their messages), and an error from any leaves everything in place.
var Deleted = events.NewTopic[*Deletion]("users.deleted")

// TagsMerged is published inside the migration step that merged tags
// (users:0006), once the links were moved: modules that keep data derived
// from tag links bring it up to date in the same step (the shows module's
// counts and tag ids). Subscribe to it in Subscribe, before migrations.
var TagsMerged = events.NewTopic[TagMerge]("users.tags_merged")

// Deletion is a user being deleted by a staff member.
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

// DeleteUser deletes a user as staff member by, in one transaction: the
// Deleted event's handlers delete what other modules keep of the user
// (shows, chat messages), then the user's row goes with its tokens,
// sessions, follows, tags, favorites and reset links (foreign keys). It
// returns the ids of the shows deleted. A MySQL deadlock runs it again.
func (s *Service) DeleteUser(ctx context.Context, id int64, by *app.Principal) ([]int64, error) {
	var ev *Deletion
	err := s.events().RunInTx(ctx, s.db, 3, retryable, func(ctx context.Context, tx *events.Tx) error {
		ev = &Deletion{UserID: id, By: by, Shows: []int64{}}
		if err := events.Publish(ctx, tx, Deleted, ev); err != nil {
			return err
		}
		return deleteRow(ctx, tx, id)
	})
	if err != nil {
		return nil, err
	}
	s.tokens.invalidate(ctx, 0, id) // their cached tokens go at once
	return ev.Shows, nil
}

func retryable(err error) bool { return app.IsDeadlock(err) }
