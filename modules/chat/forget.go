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
	var gone []Message
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var err error
		gone, err = s.forgetInTx(ctx, tx, userID)
		return err
	})
	if err != nil {
		return err
	}
	s.announceForgotten(ctx, gone)
	return nil
}

// forgetInTx is ForgetUser's change inside tx; it returns the messages
// that were visible, for announceForgotten once tx commits.
func (s *Service) forgetInTx(ctx context.Context, tx bun.IDB, userID int64) ([]Message, error) {
	var msgs []Message
	if err := tx.NewSelect().Model(&msgs).Column("id", "show_id", "deleted_at").Where("user_id = ?", userID).Scan(ctx); err != nil {
		return nil, fmt.Errorf("chat: forget %d: %w", userID, err)
	}
	visible := map[int64]int{}
	var gone []Message
	for _, m := range msgs {
		if m.DeletedAt == nil {
			visible[m.ShowID]++
			gone = append(gone, m)
		}
	}
	if _, err := tx.NewDelete().Model((*Message)(nil)).Where("user_id = ?", userID).Exec(ctx); err != nil {
		return nil, fmt.Errorf("chat: forget %d: %w", userID, err)
	}
	if _, err := tx.NewDelete().Model((*Ban)(nil)).Where("user_id = ?", userID).Exec(ctx); err != nil {
		return nil, fmt.Errorf("chat: forget %d: %w", userID, err)
	}
	for show, n := range visible {
		if err := s.shows.AddComments(ctx, tx, show, -n); err != nil && !errors.Is(err, shows.ErrNotFound) {
			return nil, fmt.Errorf("chat: forget %d: %w", userID, err)
		}
	}
	return gone, nil
}

// announceForgotten tells the rooms that the messages went.
func (s *Service) announceForgotten(ctx context.Context, gone []Message) {
	for _, m := range gone {
		s.hub.Publish(ctx, m.ShowID, Event{Type: EventChatDeleted, ID: m.ID})
	}
}
