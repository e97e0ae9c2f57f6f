package chat

import (
	"context"
	"fmt"
	"time"
)

// ChatMessages counts the messages posted in a show's chat in [from, to)
// (deleted ones too: they were posted), from the (show_id, created_at)
// index. The stats module samples it for its charts and summary.
func (m *Module) ChatMessages(ctx context.Context, showID int64, from, to time.Time) (int, error) {
	n, err := m.Service.db.NewSelect().Model((*Message)(nil)).
		Where("show_id = ?", showID).Where("created_at >= ?", from.UTC()).Where("created_at < ?", to.UTC()).
		Count(ctx)
	if err != nil {
		return 0, fmt.Errorf("chat: count show %d: %w", showID, err)
	}
	return int(n), nil
}
