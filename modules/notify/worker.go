package notify

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/onair/onair/modules/shows"
	"github.com/onair/onair/modules/users"
)

const (
	// poll is how often a worker looks for work it was not woken for
	// (another node's go-live, a retry coming due).
	poll = 5 * time.Second
	// claimFor is how long a claimed mail is left to its worker before
	// another may send it.
	claimFor = 5 * time.Minute
	// maxAttempts bounds the tries at one mail, and at expanding one
	// go-live job (the first and 4 retries).
	maxAttempts = 5
	// expandBatch is how many followers one insert queues.
	expandBatch = 500
)

// retryAfter is the pause before the next try of a mail, or of a job's
// expansion, that failed n times. The tries end some 85 minutes after
// the first: a go-live mail later than that is hardly worth sending.
func retryAfter(n int) time.Duration {
	return min(time.Minute<<(2*(n-1)), 2*time.Hour) // 1 min, 4 min, 16 min, 64 min
}

// onShowTx writes the job of a show's first go-live in its transaction
// (with ONAIR_SMTP_URL), and deletes a deleted show's job in the delete's
// (forgetShow). A reconnect is EventResumed and queues nothing; a private
// show mails no one. The job is unique per show: a show goes live once.
func (m *Module) onShowTx(ctx context.Context, tx bun.IDB, ev shows.Event) error {
	if ev.Type == shows.EventDeleted {
		return forgetShow(ctx, tx, ev.Show.ID)
	}
	if !m.mail || ev.Type != shows.EventLive || ev.Show.Private || ev.Show.Off {
		return nil
	}
	_, err := tx.NewInsert().Model(&Job{ShowID: ev.Show.ID, CreatedAt: m.core.Clock.Stamp()}).Ignore().Exec(ctx)
	if err != nil {
		return fmt.Errorf("notify: queue show %d: %w", ev.Show.ID, err)
	}
	return nil
}

// run expands jobs and sends due mails, paced at m.rate a minute, until
// ctx ends.
func (m *Module) run(ctx context.Context) {
	interval := time.Minute / time.Duration(m.rate)
	var last time.Time
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.wake:
		case <-t.C:
		}
		if err := m.expand(ctx); err != nil && ctx.Err() == nil {
			m.core.Log.Error("notify: queue mails", "err", err)
		}
		for ctx.Err() == nil {
			if wait := time.Until(last.Add(interval)); wait > 0 {
				select {
				case <-ctx.Done():
					return
				case <-time.After(wait):
				}
			}
			sent, err := m.sendNext(ctx)
			if err != nil && ctx.Err() == nil {
				m.core.Log.Error("notify: send", "err", err)
			}
			if !sent {
				break
			}
			last = time.Now()
		}
		if !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
		t.Reset(poll)
	}
}

// expand queues one mail per follower of each due job's show owner. The
// unique index makes a second expansion (another node, a crash before
// expanded_at was set) add nothing. A job that fails is logged and
// retried later (expandFailed) while the others go on: one show's
// persistent error must not hold back every later show's mails. The
// errors are returned joined.
func (m *Module) expand(ctx context.Context) error {
	var jobs []Job
	err := m.core.DB.NewSelect().Model(&jobs).Relation("Show").
		Where("nj.expanded_at IS NULL").
		Where("(nj.next_at IS NULL OR nj.next_at <= ?)", m.core.Clock.Stamp()).
		OrderExpr("nj.show_id").Limit(20).Scan(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, j := range jobs {
		if j.Show != nil {
			if err := m.expandJob(ctx, j.Show); err != nil {
				if ctx.Err() != nil {
					return ctx.Err() // stopping: not the job's failure
				}
				errs = append(errs, fmt.Errorf("show %d: %w", j.ShowID, err))
				if err := m.expandFailed(ctx, j, err); err != nil {
					errs = append(errs, err)
				}
				continue
			}
		}
		now := m.core.Clock.Stamp()
		if _, err := m.core.DB.NewUpdate().Model((*Job)(nil)).Set("expanded_at = ?", now).Where("show_id = ?", j.ShowID).Exec(ctx); err != nil {
			errs = append(errs, fmt.Errorf("show %d: %w", j.ShowID, err))
		}
	}
	return errors.Join(errs...)
}

// expandFailed records a failed expansion of j: the job is tried again
// after retryAfter, as a mail is, and given up at the maxAttempts-th
// failure (expanded_at and failed_at set, so no worker picks it again;
// the mails queued before the failure are still sent). Two nodes failing
// the same try count it once.
func (m *Module) expandFailed(ctx context.Context, j Job, cause error) error {
	n, now := j.Attempts+1, m.core.Clock.Stamp()
	next := now.Add(retryAfter(n))
	q := m.core.DB.NewUpdate().Model((*Job)(nil)).Set("attempts = ?, last_error = ?", n, clip(cause.Error())).
		Where("show_id = ? AND attempts = ? AND expanded_at IS NULL", j.ShowID, j.Attempts)
	if n >= maxAttempts {
		q = q.Set("expanded_at = ?, failed_at = ?", now, now)
	} else {
		q = q.Set("next_at = ?", next)
	}
	res, err := q.Exec(ctx)
	if err != nil {
		return fmt.Errorf("show %d: record the failure: %w", j.ShowID, err)
	}
	if k, _ := res.RowsAffected(); k != 1 {
		return nil // another node recorded this try
	}
	if n >= maxAttempts {
		m.core.Log.Error("notify: go-live job given up", "show", j.ShowID, "attempts", n, "err", cause)
	} else {
		m.core.Log.Warn("notify: go-live job failed", "show", j.ShowID, "attempt", n, "retry_at", next, "err", cause)
	}
	return nil
}

func (m *Module) expandJob(ctx context.Context, sh *shows.Show) error {
	var after int64
	for {
		var followers []int64
		// Followers whose user is gone are left out: follows has no
		// foreign key (a user's deletion deletes their follows, and a
		// follow never outlives its users, but nothing in the schema
		// holds that), and one mail to a user gone would fail the batch
		// on notify_mails' foreign key, every follower's, at every try.
		err := m.core.DB.NewSelect().Model((*users.Follow)(nil)).Column("follower_id").
			Where("followed_id = ? AND follower_id > ?", sh.UserID, after).
			Where("EXISTS (SELECT 1 FROM users WHERE users.id = follower_id)").
			OrderExpr("follower_id").Limit(expandBatch).Scan(ctx, &followers)
		if err != nil {
			return err
		}
		if len(followers) == 0 {
			return nil
		}
		now := m.core.Clock.Stamp()
		mails := make([]Mail, len(followers))
		for i, f := range followers {
			mails[i] = Mail{ShowID: sh.ID, UserID: f, Status: StatusPending, NextAt: now, CreatedAt: now}
		}
		if _, err := m.core.DB.NewInsert().Model(&mails).Ignore().Exec(ctx); err != nil {
			return err
		}
		after = followers[len(followers)-1]
		if len(followers) < expandBatch {
			return nil
		}
	}
}

// sendNext claims the oldest due mail and sends it (or skips it). It
// reports whether there was one.
func (m *Module) sendNext(ctx context.Context) (bool, error) {
	now := m.core.Clock.Stamp()
	var ml Mail
	err := m.core.DB.NewSelect().Model(&ml).Where("nml.status = ? AND nml.next_at <= ?", StatusPending, now).
		OrderExpr("nml.next_at, nml.id").Limit(1).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	res, err := m.core.DB.NewUpdate().Model((*Mail)(nil)).Set("next_at = ?", now.Add(claimFor)).
		Where("id = ? AND status = ? AND next_at = ?", ml.ID, StatusPending, ml.NextAt).Exec(ctx)
	if err != nil {
		return false, err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return true, nil // another node took it
	}
	status, sendErr := m.deliver(ctx, &ml)
	q := m.core.DB.NewUpdate().Model((*Mail)(nil)).Where("id = ?", ml.ID)
	switch {
	case sendErr == nil:
		q = q.Set("status = ?", status)
		if status == StatusSent {
			q = q.Set("sent_at = ?", m.core.Clock.Stamp())
		}
	case ml.Attempts+1 >= maxAttempts:
		q = q.Set("status = ?, attempts = ?, last_error = ?", StatusFailed, ml.Attempts+1, clip(sendErr.Error()))
	default:
		q = q.Set("attempts = ?, next_at = ?, last_error = ?", ml.Attempts+1, m.core.Clock.Stamp().Add(retryAfter(ml.Attempts+1)), clip(sendErr.Error()))
	}
	if sendErr != nil {
		m.core.Log.Warn("notify: go-live mail failed", "show", ml.ShowID, "user", ml.UserID, "attempt", ml.Attempts+1, "err", sendErr)
	}
	if _, err := q.Exec(context.WithoutCancel(ctx)); err != nil {
		return true, err
	}
	return true, nil
}

func clip(s string) string {
	if len(s) > 500 {
		return s[:500]
	}
	return s
}

// deliver sends one mail unless it is no longer wanted: the follower
// unfollowed, turned it off (for this follow or the account) or is
// suspended, or the show is private, off or already over.
func (m *Module) deliver(ctx context.Context, ml *Mail) (string, error) {
	sh, err := m.shows.Get(ctx, ml.ShowID)
	if errors.Is(err, shows.ErrNotFound) {
		return StatusSkipped, nil
	}
	if err != nil {
		return "", err
	}
	if sh.Private || sh.Off || sh.Complete || sh.User == nil {
		return StatusSkipped, nil
	}
	u, err := m.users.Get(ctx, ml.UserID)
	if errors.Is(err, users.ErrNotFound) {
		return StatusSkipped, nil
	}
	if err != nil {
		return "", err
	}
	if u.SuspendedAt != nil {
		return StatusSkipped, nil
	}
	on, err := m.wants(ctx, u.ID, sh.UserID)
	if err != nil || !on {
		return StatusSkipped, err
	}
	subject, body, headers := m.message(u, sh)
	if err := m.users.SendMail(ctx, u.Email, subject, body, headers...); err != nil {
		return "", err
	}
	return StatusSent, nil
}

// wants tells whether follower follows followed with go-live mails on,
// for the follow and for the account.
func (m *Module) wants(ctx context.Context, follower, followed int64) (bool, error) {
	db := m.core.DB
	follows, err := db.NewSelect().Model((*users.Follow)(nil)).Where("follower_id = ? AND followed_id = ?", follower, followed).Exists(ctx)
	if err != nil || !follows {
		return false, err
	}
	muted, err := db.NewSelect().Model((*Mute)(nil)).Where("follower_id = ? AND followed_id = ?", follower, followed).Exists(ctx)
	if err != nil || muted {
		return false, err
	}
	off, err := db.NewSelect().Model((*AccountMute)(nil)).Where("user_id = ?", follower).Exists(ctx)
	return !off, err
}
