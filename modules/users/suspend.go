package users

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"time"

	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
)

// Suspension and password resets, the staff's tools for accounts.
//
// A suspended user's API tokens answer 401, their web sessions read as
// signed out, and they cannot sign in; nothing is deleted, so lifting the
// suspension restores everything (tokens included). Stopping their live
// show is the console's part (it knows the shows module).

// SetSuspended suspends or restores a user.
func (s *Service) SetSuspended(ctx context.Context, id int64, suspended bool) (*User, error) {
	u, err := s.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if (u.SuspendedAt != nil) == suspended {
		return u, nil
	}
	u.SuspendedAt = nil
	if suspended {
		now := s.now()
		u.SuspendedAt = &now
	}
	if err := s.Update(ctx, u, "suspended_at"); err != nil {
		return nil, err
	}
	return u, nil
}

// PasswordReset is a one-time link to set a new password, issued by staff
// (the service sends no mail). Only the hash of its token is kept.
type PasswordReset struct {
	bun.BaseModel `bun:"table:password_resets,alias:pr"`

	ID        int64      `bun:"id,pk,autoincrement"`
	UserID    int64      `bun:"user_id,notnull"`
	User      *User      `bun:"rel:belongs-to,join:user_id=id,on_delete:CASCADE"`
	Hash      string     `bun:"hash,notnull,unique,type:char(64)"`
	CreatedAt time.Time  `bun:"created_at,notnull"`
	ExpiresAt time.Time  `bun:"expires_at,notnull"`
	UsedAt    *time.Time `bun:"used_at"`
}

// ResetLifetime is how long a reset link works.
const ResetLifetime = 24 * time.Hour

// ErrResetInvalid: a reset link that is unknown, used or expired.
var ErrResetInvalid = app.NotFound("reset link")

// IssueReset makes a reset link's token for the user; earlier unused
// links of the user stop working.
func (s *Service) IssueReset(ctx context.Context, userID int64) (string, error) {
	if _, err := s.Get(ctx, userID); err != nil {
		return "", err
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("users: reset token: %w", err)
	}
	plain := hex.EncodeToString(b)
	now := s.now()
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewDelete().Model((*PasswordReset)(nil)).Where("user_id = ? AND used_at IS NULL", userID).Exec(ctx); err != nil {
			return err
		}
		_, err := tx.NewInsert().Model(&PasswordReset{UserID: userID, Hash: hashToken(plain), CreatedAt: now, ExpiresAt: now.Add(ResetLifetime)}).Exec(ctx)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("users: issue reset: %w", err)
	}
	return plain, nil
}

// ResetUser is the user of a working reset token (ErrResetInvalid else).
func (s *Service) ResetUser(ctx context.Context, plain string) (*User, error) {
	r, err := s.reset(ctx, s.db, plain)
	if err != nil {
		return nil, err
	}
	return s.Get(ctx, r.UserID)
}

func (s *Service) reset(ctx context.Context, db bun.IDB, plain string) (*PasswordReset, error) {
	if len(plain) != 64 {
		return nil, ErrResetInvalid
	}
	r := new(PasswordReset)
	err := db.NewSelect().Model(r).Where("hash = ?", hashToken(plain)).Where("used_at IS NULL").Where("expires_at > ?", s.now()).Scan(ctx)
	if err != nil {
		return nil, ErrResetInvalid
	}
	return r, nil
}

// UseReset sets a new password with a reset token, once: the token is
// spent and every web session of the user ends.
func (s *Service) UseReset(ctx context.Context, plain, password string) (*User, error) {
	r, err := s.reset(ctx, s.db, plain)
	if err != nil {
		return nil, err
	}
	if err := checkPassword(password); err != nil {
		return nil, err // the link stays usable
	}
	// Spend the token first: of two uses at once, one wins.
	res, err := s.db.NewUpdate().Model((*PasswordReset)(nil)).Set("used_at = ?", s.now()).Where("id = ? AND used_at IS NULL", r.ID).Exec(ctx)
	if err != nil {
		return nil, fmt.Errorf("users: spend reset: %w", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return nil, ErrResetInvalid
	}
	if err := s.SetPassword(ctx, r.UserID, password, ""); err != nil {
		return nil, err
	}
	return s.Get(ctx, r.UserID)
}

// Delete removes a user's row with their follows, both ways (the counts
// of the users they followed go down), and, by the foreign keys, their
// tokens, sessions, tags and reset links. It publishes no event: what
// other modules keep of the user (shows, favorites, chat messages, mail
// switches) must be gone first. Staff delete a user with DeleteUser,
// which deletes everything in one transaction.
func (s *Service) Delete(ctx context.Context, id int64) error {
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		followed, err := deleteFollows(ctx, tx, id)
		if err != nil {
			return err
		}
		return deleteRow(ctx, tx, id, followed)
	})
	if err == nil {
		s.tokens.invalidate(ctx, 0, id) // their cached tokens go at once
	}
	return err
}

// deleteFollows deletes the user's follows, both ways, in tx and returns
// the ids of the users they followed, whose counts deleteRow brings down.
// It comes first in a deletion's transaction: the follows table has no
// foreign keys (both its columns are its key, of which bun's
// WithForeignKeys makes none), and on MySQL its statements lock the
// user's ranges of follows, gaps included, so a follow of or by the user
// that comes later waits for the deletion to commit and then finds the
// user gone (Follow), and one that came first holds its row until it
// commits, and is deleted then. Were they later, a deletion could hold
// what such a follow waits for (a row of the users it counts, a mute of
// the notify module) while it waits for the follow: a deadlock.
func deleteFollows(ctx context.Context, tx bun.IDB, id int64) ([]int64, error) {
	var followed []int64
	q := tx.NewSelect().Model((*Follow)(nil)).Column("followed_id").Where("follower_id = ?", id).OrderExpr("followed_id")
	if app.IsMySQL(tx) {
		q = q.For("UPDATE")
	}
	if err := q.Scan(ctx, &followed); err != nil {
		return nil, fmt.Errorf("users: delete %d: followed: %w", id, err)
	}
	for _, col := range []string{"follower_id", "followed_id"} {
		if _, err := tx.NewDelete().Model((*Follow)(nil)).Where("? = ?", bun.Ident(col), id).Exec(ctx); err != nil {
			return nil, fmt.Errorf("users: delete %d: follows: %w", id, err)
		}
	}
	return followed, nil
}

// deleteRow brings the followers_count of the users in followed (the
// user's, from deleteFollows) down and deletes the user's row in tx, last
// in a deletion's transaction. The counts go by id, in order, as Follow
// takes the rows of a follow's users: a statement with the follows as a
// subquery would scan, and on MySQL lock, every user with a follower.
func deleteRow(ctx context.Context, tx bun.IDB, id int64, followed []int64) error {
	for batch := range slices.Chunk(followed, 500) {
		if _, err := tx.NewUpdate().Model((*User)(nil)).Set("followers_count = followers_count - 1").
			Where("followers_count > 0").Where("id IN (?)", bun.List(batch)).Exec(ctx); err != nil {
			return fmt.Errorf("users: delete %d: followers: %w", id, err)
		}
	}
	res, err := tx.NewDelete().Model((*User)(nil)).Where("id = ?", id).Exec(ctx)
	if err != nil {
		return fmt.Errorf("users: delete %d: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}
