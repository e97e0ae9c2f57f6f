package notify

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/onair/onair/app/events"
	"github.com/onair/onair/migrations"
	"github.com/onair/onair/modules/users"
)

// The module's tables keyed by a user or a show have no foreign key to
// cascade: their user and show columns are their primary keys, and bun's
// WithForeignKeys makes no foreign key of a relation whose columns are
// all key columns. So what refers to a deleted user or show is deleted in
// the delete's own transaction (notify_mails has its foreign keys and
// goes with the rows), and migration 0006 deleted what earlier releases
// left behind.

// forgetUser handles users.Deleted inside the deletion's transaction:
// the user's mutes, theirs and of them, and their account switch go. On
// MySQL the deletes lock the user's ranges of both tables, gaps included,
// before the user's row goes: a switch turned off later waits for the
// deletion to commit and then finds the user gone, and one turned off
// first is waited for and deleted (Module.mute).
func (m *Module) forgetUser(ctx context.Context, tx *events.Tx, d *users.Deletion) error {
	for _, q := range []*bun.DeleteQuery{
		tx.NewDelete().Model((*Mute)(nil)).Where("follower_id = ?", d.UserID),
		tx.NewDelete().Model((*Mute)(nil)).Where("followed_id = ?", d.UserID),
		tx.NewDelete().Model((*AccountMute)(nil)).Where("user_id = ?", d.UserID),
	} {
		if _, err := q.Exec(ctx); err != nil {
			return fmt.Errorf("notify: forget user %d: %w", d.UserID, err)
		}
	}
	return nil
}

// forgetShow deletes a deleted show's job in tx.
func forgetShow(ctx context.Context, tx bun.IDB, showID int64) error {
	if _, err := tx.NewDelete().Model((*Job)(nil)).Where("show_id = ?", showID).Exec(ctx); err != nil {
		return fmt.Errorf("notify: forget show %d: %w", showID, err)
	}
	return nil
}

// deleteOrphans is migration 0006: it deletes the rows earlier releases
// left of deleted users and shows (a mute of or by a user gone, the
// account switch of one, the job of a show gone). Running it again
// deletes nothing more.
func deleteOrphans(ctx context.Context, db bun.IDB) error {
	if err := migrations.DeleteOrphans(ctx, db,
		migrations.Ref{Table: "notify_mutes", Column: "follower_id", Parent: "users"},
		migrations.Ref{Table: "notify_mutes", Column: "followed_id", Parent: "users"},
		migrations.Ref{Table: "notify_account_mutes", Column: "user_id", Parent: "users"},
		migrations.Ref{Table: "notify_jobs", Column: "show_id", Parent: "shows"},
	); err != nil {
		return fmt.Errorf("notify: %w", err)
	}
	return nil
}
