package users

import (
	"context"
	"fmt"
	"time"
)

// NewFollowers counts the users who began following userID in [from, to)
// (those who still follow: an unfollow removes the row). The stats module
// reports it in a show's summary.
func (m *Module) NewFollowers(ctx context.Context, userID int64, from, to time.Time) (int, error) {
	n, err := m.Service.db.NewSelect().Model((*Follow)(nil)).
		Where("followed_id = ?", userID).Where("created_at >= ?", from.UTC()).Where("created_at < ?", to.UTC()).
		Count(ctx)
	if err != nil {
		return 0, fmt.Errorf("users: count new followers of %d: %w", userID, err)
	}
	return int(n), nil
}
