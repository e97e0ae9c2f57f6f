// Package events is the kernel's typed hook: a module declares a Topic of
// its event type, other modules subscribe to it, and the publisher calls
// them, inside its transaction or after the commit.
//
// One Bus lives per boot (app.Core.Events). Two kinds of subscriber:
//
//   - SubscribeTx: the handler runs inside the publisher's transaction,
//     in subscription order, with the transaction to write through. An
//     error from a handler rolls the whole transaction back; the publisher
//     gets the error. This is how a module keeps its own rows in step with
//     another module's change (a user deleted: the shows module deletes
//     the user's shows in the same transaction).
//   - Subscribe: the handler runs after the commit, on this node, once per
//     event; a handler that panics is logged and skipped. Events a relay
//     brings from other nodes (Emit with remote events) reach the same
//     handlers, so a node sees every node's changes.
//
// The topic is a value of the publishing package, a name and a type: it
// holds no subscribers, so two boots in one process (two test servers)
// never see each other's.
package events

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/uptrace/bun"

	"github.com/onair/onair/app/txretry"
)

// Topic names a kind of event and its payload's type. Declare it once in
// the publishing package: var UserDeleted = events.NewTopic[Deleted]("users.deleted").
type Topic[T any] struct{ name string }

// NewTopic returns the topic of events of type T called name.
func NewTopic[T any](name string) Topic[T] { return Topic[T]{name: name} }

// Name is the topic's name.
func (t Topic[T]) Name() string { return t.name }

// Bus holds the subscriptions of one boot.
type Bus struct {
	log *slog.Logger

	mu    sync.RWMutex
	local map[string][]any // func(context.Context, T), by topic name
	tx    map[string][]any // func(context.Context, *Tx, T) error
}

// NewBus returns an empty bus that logs panicking subscribers to log.
func NewBus(log *slog.Logger) *Bus {
	if log == nil {
		log = slog.Default()
	}
	return &Bus{log: log, local: map[string][]any{}, tx: map[string][]any{}}
}

// Subscribe registers fn to be called after each committed event of t on
// this node (and each remote one a relay emits), in subscription order.
// It should hand slow work to its own goroutine.
func Subscribe[T any](b *Bus, t Topic[T], fn func(ctx context.Context, ev T)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.local[t.name] = append(b.local[t.name], fn)
}

// SubscribeTx registers fn to run inside the transaction that publishes
// each event of t, in subscription order. An error from fn rolls the
// publisher's transaction back. fn runs only on the node that publishes,
// and should be quick: the publisher's locks are held.
func SubscribeTx[T any](b *Bus, t Topic[T], fn func(ctx context.Context, tx *Tx, ev T) error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tx[t.name] = append(b.tx[t.name], fn)
}

// Tx is a transaction events are published in. It is a bun.IDB for the
// handlers' statements, and collects the work to do once it commits.
type Tx struct {
	bun.IDB
	bus    *Bus
	mu     sync.Mutex
	before []func(context.Context) error
	after  []func(context.Context)
}

// BeforeCommit queues fn to run inside the transaction once the publisher
// made its last change, just before the commit (Flush); its error rolls
// the transaction back. A subscriber whose writes must see the whole
// change (a count the publisher moves last, to hold its row lock for as
// short as it can) writes from there. Publishers call Flush; RunInTx does.
func (tx *Tx) BeforeCommit(fn func(ctx context.Context) error) {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	tx.before = append(tx.before, fn)
}

// Flush runs the work queued by BeforeCommit, in order, and stops at the
// first error. The publisher calls it as the last step of its transaction.
func (tx *Tx) Flush(ctx context.Context) error {
	for {
		tx.mu.Lock()
		before := tx.before
		tx.before = nil
		tx.mu.Unlock()
		if len(before) == 0 {
			return nil
		}
		for _, fn := range before {
			if err := fn(ctx); err != nil {
				return err
			}
		}
	}
}

// AfterCommit queues fn to run once the transaction committed (never when
// it rolls back), in the order queued, after the local subscribers of the
// events published in it.
func (tx *Tx) AfterCommit(fn func(ctx context.Context)) {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	tx.after = append(tx.after, fn)
}

// Wrap makes a Tx of a transaction the caller runs itself (a migration
// step, a service with its own retries). The caller calls Committed once
// the transaction committed; if it rolls back, it drops the Tx.
func (b *Bus) Wrap(idb bun.IDB) *Tx { return &Tx{IDB: idb, bus: b} }

// Committed runs the work queued by AfterCommit (and the local
// subscribers of the events published in tx).
func (tx *Tx) Committed(ctx context.Context) {
	tx.mu.Lock()
	after, lost := tx.after, len(tx.before)
	tx.after, tx.before = nil, nil
	tx.mu.Unlock()
	if lost > 0 && tx.bus != nil && tx.bus.log != nil {
		tx.bus.log.Error("events: a transaction committed without running its BeforeCommit work (the publisher did not Flush)", "lost", lost)
	}
	for _, fn := range after {
		fn(ctx)
	}
}

// RunInTx runs fn in a transaction of db and, once it committed, the work
// its events queued. An error retry accepts (a MySQL deadlock, say) runs
// fn again in a new transaction, up to attempts times in all (at least
// once), after a short pause that doubles from try to try and never past
// ctx's end (txretry.Do); the work queued by a rolled-back attempt is
// dropped.
func (b *Bus) RunInTx(ctx context.Context, db *bun.DB, attempts int, retry func(error) bool, fn func(ctx context.Context, tx *Tx) error) error {
	var etx *Tx
	err := txretry.RunInTx(ctx, db, attempts, retry, func(ctx context.Context, tx bun.Tx, _ int) error {
		etx = b.Wrap(tx)
		if err := fn(ctx, etx); err != nil {
			return err
		}
		return etx.Flush(ctx)
	})
	if err != nil {
		return err
	}
	etx.Committed(ctx)
	return nil
}

// Publish runs t's transaction subscribers on ev inside tx, in order; the
// first error stops them and is returned, for the publisher to roll back.
// Once tx commits, t's local subscribers get ev.
func Publish[T any](ctx context.Context, tx *Tx, t Topic[T], ev T) error {
	if err := PublishTx(ctx, tx, t, ev); err != nil {
		return err
	}
	b := tx.bus
	tx.AfterCommit(func(ctx context.Context) { Emit(ctx, b, t, ev) })
	return nil
}

// PublishTx runs only t's transaction subscribers on ev inside tx: for a
// publisher that delivers to the local subscribers itself, after its own
// commit (Emit), as the shows module does with its relay.
func PublishTx[T any](ctx context.Context, tx *Tx, t Topic[T], ev T) error {
	b := tx.bus
	b.mu.RLock()
	hooks := b.tx[t.name]
	hooks = hooks[:len(hooks):len(hooks)]
	b.mu.RUnlock()
	for _, h := range hooks {
		if err := h.(func(context.Context, *Tx, T) error)(ctx, tx, ev); err != nil {
			return err
		}
	}
	return nil
}

// Emit calls t's local subscribers on ev now, outside any transaction: the
// delivery of a committed event, local or brought by a relay from another
// node. A subscriber that panics is logged and skipped.
func Emit[T any](ctx context.Context, b *Bus, t Topic[T], ev T) {
	b.mu.RLock()
	subs := b.local[t.name]
	subs = subs[:len(subs):len(subs)]
	b.mu.RUnlock()
	for _, s := range subs {
		func() {
			defer func() {
				if r := recover(); r != nil {
					b.log.Error("events: subscriber panicked", "topic", t.name, "panic", fmt.Sprint(r))
				}
			}()
			s.(func(context.Context, T))(ctx, ev)
		}()
	}
}

// Subscribed tells whether t has any subscriber, local or in the
// transaction (a publisher may skip building an event nobody reads).
func Subscribed[T any](b *Bus, t Topic[T]) bool {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return len(b.local[t.name]) > 0 || len(b.tx[t.name]) > 0
}
