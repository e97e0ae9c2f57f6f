// Package txretry runs a database transaction again while the database
// reports a race the next try may win (a MySQL deadlock, a unique key
// another transaction took first), after a short pause that grows with
// each try. app.RunInTxRetry and events.(*Bus).RunInTx run their
// transactions through it.
//
// The pause matters under contention: transactions that deadlocked with
// each other and start again at once take their locks in the same order
// at the same moment and deadlock again, try after try. A pause of a few
// milliseconds, random within a range that doubles, lets one of them
// finish before the others come back.
package txretry

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/uptrace/bun"
)

// Attempts is the tries (the first and the retries) for a transaction
// that takes many locks other transactions take in another order, so
// that a crowd of them deadlocks over and over (a user's deletion): nine
// pauses, at most 555 ms of them in all.
const Attempts = 10

// The pause before a retry: FirstPause before the second try, doubling
// with each retry up to MaxPause, and drawn at random from its upper half
// (a pause of d is between d/2 and d).
const (
	FirstPause = 5 * time.Millisecond
	MaxPause   = 100 * time.Millisecond
)

// Pause is how long to wait before try number attempt (1 for the first
// retry): at random between half and all of FirstPause doubled
// attempt-1 times, at most MaxPause.
func Pause(attempt int) time.Duration {
	d := MaxPause
	if attempt < 1 {
		attempt = 1
	}
	if attempt <= 8 { // beyond, the doubling is past MaxPause anyway
		d = min(FirstPause<<(attempt-1), MaxPause)
	}
	return d/2 + rand.N(d/2+1)
}

// Do calls fn up to attempts times in all (at least once), while its
// error is one retry accepts, with a Pause before each retry. fn learns
// which try it is (0 first). An error retry refuses (or a nil retry) is
// returned at once, as is the last error once the tries are used up. Do
// gives up, returning the last error, as soon as ctx is done: after a
// try, or in the middle of a pause. A request whose deadline passed so
// answers 503 "timeout" (app.ErrorHandler), not the race.
func Do(ctx context.Context, attempts int, retry func(error) bool, fn func(attempt int) error) error {
	var err error
	for attempt := 0; attempt < max(attempts, 1); attempt++ {
		if attempt > 0 && !wait(ctx, Pause(attempt)) {
			return err
		}
		err = fn(attempt)
		if err == nil || retry == nil || !retry(err) || ctx.Err() != nil {
			return err
		}
	}
	return err
}

// RunInTx runs fn in a transaction of db, and again in a new one as Do
// says. fn must have no effect outside its transaction.
func RunInTx(ctx context.Context, db *bun.DB, attempts int, retry func(error) bool, fn func(ctx context.Context, tx bun.Tx, attempt int) error) error {
	return Do(ctx, attempts, retry, func(attempt int) error {
		return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error { return fn(ctx, tx, attempt) })
	})
}

// wait waits for d, and tells false if ctx was done first.
func wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
