package shows

import (
	"context"

	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
	"github.com/onair/onair/app/events"
	"github.com/onair/onair/app/outbox"
)

// Event types. "stopped" and "off" tell the live module to disconnect the
// publisher, "deleted" to drop the media; chat pushes show.updated on any.
const (
	EventCreated  = "created"
	EventLive     = "live"    // first go-live
	EventResumed  = "resumed" // publisher back inside the reconnect window
	EventStopped  = "stopped"
	EventArchived = "archived"
	EventUpdated  = "updated"
	EventOff      = "off" // taken off or restored: see Show.Off
	EventDeleted  = "deleted"
)

// Event is a committed change of a show. Show is shared by every
// subscriber and must be treated as read-only. By is the caller; nil is the
// system (live module, janitor).
type Event struct {
	// ID is the event's row in the outbox table (package app/outbox),
	// unique across nodes; 0 for an event that has none.
	ID   int64
	Type string
	Show *Show
	By   *app.Principal
	// Remote is true when the change was committed on another node and
	// reached this one through Redis (the outbox's relay). A remote event's Show
	// is the snapshot stored in the outbox: it has no stream key and its
	// user no password hash or e-mail; By carries only the user id.
	Remote bool

	// commit is the transaction wrapper the event was published in, when
	// the service wrapped it: deliver runs the work its transaction
	// subscribers queued with AfterCommit. Nil when the caller's own
	// events.Tx (a user's deletion) commits it.
	commit *events.Tx
}

// Changed is the kernel topic (package app/events) of show changes, on
// the boot's bus: Subscribe and SubscribeTx below are its subscriptions,
// and events.Subscribe(core.Events, shows.Changed, fn) is the same as
// Subscribe(fn).
var Changed = events.NewTopic[Event]("shows.changed")

// Subscribe registers fn to be called synchronously after each committed
// change, in registration order. Modules subscribe in Provision. A
// subscriber that panics is logged and skipped; it should hand slow work to
// its own goroutine. With Redis, fn is also called for the changes other
// nodes commit (Event.Remote), once each.
func (s *Service) Subscribe(fn func(ctx context.Context, ev Event)) {
	events.Subscribe(s.bus, Changed, fn)
}

// SubscribeTx registers fn to run inside the transaction of each change,
// after the change and its outbox row are written, with the event the
// commit will emit (Show is the state after the change, read in tx; ID
// the outbox row). An error from fn rolls the whole change back: the
// caller gets the error and no event is emitted. Hooks run in
// registration order on the node that makes the change, only there, and
// must be quick: they hold the show's row lock.
func (s *Service) SubscribeTx(fn func(ctx context.Context, tx bun.IDB, ev Event) error) {
	events.SubscribeTx(s.bus, Changed, func(ctx context.Context, tx *events.Tx, ev Event) error { return fn(ctx, tx, ev) })
}

// record writes, inside the change's transaction tx, the outbox row of
// each event type for the show id (read in tx, after the change) and runs
// the transaction hooks. It returns the events deliver sends after the
// commit. before, when the change can move a counted flag or a tag, is
// what the show contributed to show_counts before it (countSnapshot; a zero
// countState for a new show): the counts move to the state read here in
// the same transaction (counts.go).
func (s *Service) record(ctx context.Context, tx bun.IDB, id int64, by *app.Principal, before *countState, types ...string) ([]Event, error) {
	sh, err := getShow(ctx, tx, id)
	if err != nil {
		return nil, err
	}
	if before != nil {
		// The tags from show_tags, not from sh.Tags: sh's join with the
		// tags table reads MySQL's snapshot, which misses a tag another
		// transaction created after this one's first read.
		after, err := countSnapshot(ctx, tx, sh)
		if err != nil {
			return nil, err
		}
		if err := moveCounts(ctx, tx, *before, after); err != nil {
			return nil, err
		}
		if before.exists && (!before.start.Equal(sh.Start) || before.public() != sh.public()) {
			if err := syncGramKeys(ctx, tx, sh); err != nil {
				return nil, err
			}
		}
	}
	return s.recordShow(ctx, tx, sh, by, types...)
}

// recordShow is record for a snapshot the caller holds (a deleted show).
func (s *Service) recordShow(ctx context.Context, tx bun.IDB, sh *Show, by *app.Principal, types ...string) ([]Event, error) {
	// The change's own commit delivers (deliver), and runs the work the
	// transaction subscribers queue; inside a caller's events.Tx (a
	// user's deletion), that transaction's commit runs it.
	etx, outer := tx.(*events.Tx)
	if !outer {
		etx = s.bus.Wrap(tx)
	}
	evs := make([]Event, 0, len(types))
	for _, t := range types {
		ev := Event{Type: t, Show: sh, By: by}
		if !outer {
			ev.commit = etx
		}
		id, err := s.writeOutbox(ctx, tx, ev)
		if err != nil {
			return nil, err
		}
		ev.ID = id
		if err := events.PublishTx(ctx, etx, Changed, ev); err != nil {
			return nil, err
		}
		evs = append(evs, ev)
	}
	// Last write of the change: the lists' data generation (keyset.go).
	if err := bumpGeneration(ctx, tx); err != nil {
		return nil, err
	}
	return evs, nil
}

// deliver sends committed events: to the outbox's relay, which publishes
// them to the other nodes, and to this node's subscribers.
func (s *Service) deliver(ctx context.Context, evs []Event) {
	if s.outbox.Relayed() {
		rows := make([]outbox.Row, 0, len(evs))
		for _, ev := range evs {
			row, err := durable.Encode(ev)
			if err != nil {
				s.log.Error("shows: relay event", "id", ev.ID, "err", err)
				continue
			}
			row.ID, row.CreatedAt = ev.ID, s.clock.Stamp()
			rows = append(rows, row)
		}
		s.outbox.Committed(rows...)
	}
	for _, ev := range evs {
		outbox.Emit(ctx, s.outbox, durable, ev.ID, ev)
	}
	var ran *events.Tx
	for _, ev := range evs {
		if ev.commit != nil && ev.commit != ran {
			ran = ev.commit
			ran.Committed(ctx)
		}
	}
}
