package shows

import (
	"context"
	"fmt"
	"slices"

	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
	"github.com/onair/onair/app/events"
	"github.com/onair/onair/modules/users"
)

// The shows module keeps rows of users: the users module's console calls
// it when staff suspend a user, and it deletes the user's shows inside the
// transaction that deletes the user (users.Deleted).
var _ users.UserKeeper = (*Module)(nil)

// UserSuspended stops the user's live shows as staff member by.
func (m *Module) UserSuspended(ctx context.Context, userID int64, by *app.Principal) ([]int64, error) {
	yes := true
	list, _, err := m.Service.Lists.List(ctx, ListQuery{UserID: userID, Live: &yes, Page: app.Page{Number: 1, Size: 50}})
	if err != nil {
		return nil, err
	}
	var stopped []int64
	for _, sh := range list {
		if _, err := m.Service.Stop(ctx, sh.ID, by); err != nil && err != ErrNotLive {
			return stopped, err
		}
		stopped = append(stopped, sh.ID)
	}
	return stopped, nil
}

// deleteUserShows handles users.Deleted inside the deletion's
// transaction: it deletes every show of the user as a staff delete would
// (counts, tags, favorites, the events of each), then the user's
// favorites of other shows (forgetFavorites). Once the transaction
// commits, the events are delivered (a live show stops and the live
// module drops its media) and the shows' images go.
func (m *Module) deleteUserShows(ctx context.Context, tx *events.Tx, d *users.Deletion) error {
	var ids []int64
	if err := tx.NewSelect().Model((*Show)(nil)).Column("id").Where("user_id = ?", d.UserID).
		OrderExpr("id ASC").Scan(ctx, &ids); err != nil {
		return fmt.Errorf("shows: shows of user %d: %w", d.UserID, err)
	}
	if len(ids) > 0 {
		s := m.Service
		now := s.clock.Stamp()
		var all []Event
		var images []string
		for _, id := range ids {
			evs, err := deleteInTx(ctx, s, tx, id, d.By, now)
			if err != nil {
				return wrapLifecycle("delete", id, err)
			}
			if sh := lastShow(evs); sh != nil && sh.ImageKey != nil {
				images = append(images, *sh.ImageKey)
			}
			all = append(all, evs...)
		}
		d.DeletedShows(ids...)
		tx.AfterCommit(func(ctx context.Context) {
			if len(images) > 0 {
				s.images.dropImages(ctx, images, "")
			}
			s.deliver(ctx, all)
		})
	}
	return forgetFavorites(ctx, tx, d.UserID)
}

// forgetFavorites deletes a user's favorites in tx, and each show's
// favorites_count goes down by one, as an unfavorite's does. The rows
// would not go with the user's: user_id is part of show_favorites' key,
// so bun's WithForeignKeys made no foreign key of it to cascade. The
// list cache reads favorites_count on each use (listcache.go), so no
// generation moves.
//
// On MySQL the read of the favorites shares the locks of the user's range
// of them, gaps included: a favorite that comes later waits for the
// deletion to commit and then finds the user gone (Favorite), one that
// came first is waited for and counted. Shared, since a repeated favorite
// holds its show's row while it reads its own: it goes on, and the
// deletion counts that show down after it. The counts go by id: a
// statement with the favorites as a subquery would scan, and lock, every
// show.
func forgetFavorites(ctx context.Context, tx bun.IDB, userID int64) error {
	q := "SELECT show_id FROM show_favorites WHERE user_id = ? ORDER BY show_id"
	if app.IsMySQL(tx) {
		q += " LOCK IN SHARE MODE"
	}
	var ids []int64
	if err := tx.NewRaw(q, userID).Scan(ctx, &ids); err != nil {
		return fmt.Errorf("shows: favorites of user %d: %w", userID, err)
	}
	for batch := range slices.Chunk(ids, 500) {
		if _, err := tx.NewUpdate().Model((*Show)(nil)).
			Set("favorites_count = CASE WHEN favorites_count > 0 THEN favorites_count - 1 ELSE 0 END").
			Where("s.id IN (?)", bun.List(batch)).Exec(ctx); err != nil {
			return fmt.Errorf("shows: favorites_count of user %d's favorites: %w", userID, err)
		}
	}
	if _, err := tx.NewDelete().Model((*Favorite)(nil)).Where("user_id = ?", userID).Exec(ctx); err != nil {
		return fmt.Errorf("shows: favorites of user %d: %w", userID, err)
	}
	return nil
}
