package users

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/onair/onair/migrations"
)

// deleteOrphanFollows is migration 0011: it deletes the follows earlier
// releases left of deleted users, both ways. The follows table has no
// foreign key (both its columns are its key, of which bun's
// WithForeignKeys makes none), and a user's deletion did not delete them; it
// brought the counts of the users followed down, so no count moves here.
// Running it again deletes nothing more.
func deleteOrphanFollows(ctx context.Context, db bun.IDB) error {
	if err := migrations.DeleteOrphans(ctx, db,
		migrations.Ref{Table: "follows", Column: "follower_id", Parent: "users"},
		migrations.Ref{Table: "follows", Column: "followed_id", Parent: "users"},
	); err != nil {
		return fmt.Errorf("users: %w", err)
	}
	return nil
}
