package shows

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
	"github.com/onair/onair/migrations"
	"github.com/onair/onair/modules/users"
)

// Favorite marks (on) or unmarks a show as a favorite of by and keeps
// favorites_count in step. Both directions are idempotent. A show by may
// not see is 404, and so is a favorite of a show or by a user deleted
// meanwhile, which leaves no row.
//
// show_favorites has no foreign keys (its columns are its key, of which
// bun's WithForeignKeys makes none), so the change holds the show's row
// (a deletion of the show holds it first, or waits) and, once a new
// favorite is in, the user's (users.ShareLock): a deletion of the user
// that read their favorites first made the insert wait until it
// committed, and one that comes later waits for this row and deletes it.
// A MySQL deadlock (a gap locked at the edge of a deletion's range) runs
// it again.
func (s *Service) Favorite(ctx context.Context, id int64, by *app.Principal, on bool) (*Show, error) {
	if _, err := s.Visible(ctx, id, by); err != nil {
		return nil, err
	}
	if err := s.access.can(by, nil, "favorite"); err != nil {
		return nil, err
	}
	err := inTx(ctx, s.db, func(ctx context.Context, tx bun.Tx) error {
		if _, err := lockShow(ctx, tx, id); err != nil {
			return err
		}
		delta := 0
		if on {
			res, err := tx.NewInsert().Model(&Favorite{UserID: by.UserID, ShowID: id, CreatedAt: s.clock.Stamp()}).Ignore().Exec(ctx)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n > 0 {
				delta = 1
				err = users.ShareLock(ctx, tx, by.UserID)
				if errors.Is(err, users.ErrNotFound) {
					return app.NotFound("user")
				}
				if err != nil {
					return err
				}
			}
		} else {
			res, err := tx.NewDelete().Model((*Favorite)(nil)).Where("user_id = ?", by.UserID).Where("show_id = ?", id).Exec(ctx)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n > 0 {
				delta = -1
			}
		}
		if delta == 0 {
			return nil
		}
		_, err := tx.NewUpdate().Model((*Show)(nil)).
			Set("favorites_count = CASE WHEN favorites_count + ? < 0 THEN 0 ELSE favorites_count + ? END", delta, delta).
			Where("id = ?", id).Exec(ctx)
		return err
	})
	if err != nil {
		return nil, wrap("favorite", id, err)
	}
	return s.Get(ctx, id)
}

// deleteOrphanFavorites is migration 0044: it deletes the favorites
// earlier releases left of deleted users (show_favorites has no foreign
// key: its columns are its key, of which bun's WithForeignKeys makes
// none) and of deleted shows, and counts the favorites of the shows
// those users had favorited again. Running it again changes nothing.
func deleteOrphanFavorites(ctx context.Context, db bun.IDB) error {
	var ids []int64
	if err := db.NewRaw("SELECT DISTINCT show_id FROM show_favorites WHERE NOT EXISTS (SELECT 1 FROM users WHERE users.id = show_favorites.user_id) ORDER BY show_id").
		Scan(ctx, &ids); err != nil {
		return fmt.Errorf("shows: favorites of users gone: %w", err)
	}
	if err := migrations.DeleteOrphans(ctx, db,
		migrations.Ref{Table: "show_favorites", Column: "user_id", Parent: "users"},
		migrations.Ref{Table: "show_favorites", Column: "show_id", Parent: "shows"},
	); err != nil {
		return fmt.Errorf("shows: %w", err)
	}
	for batch := range slices.Chunk(ids, 500) {
		if _, err := db.NewUpdate().Model((*Show)(nil)).
			Set("favorites_count = (SELECT COUNT(*) FROM show_favorites WHERE show_favorites.show_id = s.id)").
			Where("s.id IN (?)", bun.List(batch)).Exec(ctx); err != nil {
			return fmt.Errorf("shows: favorites_count: %w", err)
		}
	}
	return nil
}
