package users

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"
)

// deleteOrphanFollows is migration 0011: it deletes the follows earlier
// releases left of deleted users, both ways. The follows table has no
// foreign key (both its columns are its key, of which bun's
// WithForeignKeys makes none), and deleteRow did not delete them; it
// brought the counts of the users followed down, so no count moves here.
// Running it again deletes nothing more.
func deleteOrphanFollows(ctx context.Context, db bun.IDB) error {
	for _, q := range []string{
		"DELETE FROM follows WHERE NOT EXISTS (SELECT 1 FROM users WHERE users.id = follows.follower_id)",
		"DELETE FROM follows WHERE NOT EXISTS (SELECT 1 FROM users WHERE users.id = follows.followed_id)",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("users: delete orphan follows: %w", err)
		}
	}
	return nil
}
