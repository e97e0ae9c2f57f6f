package live

import (
	"context"
	"errors"
	"time"

	"github.com/onair/onair/app"
)

// The pauses between attempts of a state write while the database does
// not answer, and the time one attempt may take (SQLite's busy timeout,
// 10 s, fits in it).
const (
	dbRetryFirst   = 500 * time.Millisecond
	dbRetryMax     = 5 * time.Second
	dbWriteTimeout = 15 * time.Second
)

// untilStored runs write, a change of the show's state in the database,
// and while the database does not answer (app.IsUnavailable, or an attempt
// that outlived dbWriteTimeout) runs it again after a pause, until it is
// written or the module stops. A publisher is never cut off because the
// database is away: its segments go on being written, and the show's
// state catches up in order when the database returns (going live before
// the publisher left, as the announcer's worker runs them: followers.go). The wait is
// logged once when it starts and once when it ends.
func (m *Module) untilStored(what string, showID int64, write func(ctx context.Context) error) error {
	return m.retryStore(what, []any{"show", showID}, write)
}

// retryStore is untilStored for a write that attrs name in the log.
func (m *Module) retryStore(what string, attrs []any, write func(ctx context.Context) error) error {
	pause, waited := dbRetryFirst, time.Time{}
	for {
		ctx, cancel := context.WithTimeout(m.ctx, dbWriteTimeout)
		err := write(ctx)
		cancel()
		if err == nil || m.ctx.Err() != nil || !(app.IsUnavailable(err) || errors.Is(err, context.DeadlineExceeded)) {
			if err == nil && !waited.IsZero() {
				m.core.Log.Info("live: the database answers again; the show's state is written",
					append(attrs, "write", what, "waited", time.Since(waited).Round(time.Second).String())...)
			}
			return err
		}
		if waited.IsZero() {
			waited = time.Now()
			m.core.Log.Warn("live: the database does not answer; the show's state will be written when it does",
				append(attrs, "write", what, "err", err)...)
		}
		select {
		case <-m.ctx.Done():
			return err
		case <-time.After(pause):
		}
		pause = min(2*pause, dbRetryMax)
	}
}
