package chat

import (
	"context"
	"errors"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/onair/onair/modules/shows"
)

// ForgetUser removes everything of a user the chat keeps: their messages
// (hard deleted, each show's comments_count moved down; the rooms are told
// chat.deleted) and their bans. The console calls it before deleting the
// user, whose row the messages refer to.
func (s *Service) ForgetUser(ctx context.Context, userID int64) error {
	var msgs []Message
	if err := s.db.NewSelect().Model(&msgs).Column("id", "show_id", "deleted_at").Where("user_id = ?", userID).Scan(ctx); err != nil {
		return fmt.Errorf("chat: forget %d: %w", userID, err)
	}
	visible := map[int64]int{}
	for _, m := range msgs {
		if m.DeletedAt == nil {
			visible[m.ShowID]++
		}
	}
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewDelete().Model((*Message)(nil)).Where("user_id = ?", userID).Exec(ctx); err != nil {
			return err
		}
		if _, err := tx.NewDelete().Model((*Ban)(nil)).Where("user_id = ?", userID).Exec(ctx); err != nil {
			return err
		}
		for show, n := range visible {
			if err := s.shows.AddComments(ctx, tx, show, -n); err != nil && !errors.Is(err, shows.ErrNotFound) {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("chat: forget %d: %w", userID, err)
	}
	for _, m := range msgs {
		if m.DeletedAt == nil {
			s.hub.Publish(ctx, m.ShowID, Event{Type: EventChatDeleted, ID: m.ID})
		}
	}
	return nil
}
