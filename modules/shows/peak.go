package shows

import (
	"context"
	"fmt"
)

// Peak viewers: the most viewers a show had at once during its run. The
// live module counts viewers (across the nodes, with Redis), keeps the
// peak of each show it ingests, and records it here when it rises (at
// most every few seconds) and when the publication ends. The column only
// grows, so two nodes recording (a publisher that moved) keep the larger.

// RecordPeak raises the show's peak_viewers to n; a lower n changes
// nothing. It is bookkeeping, not an edit: updated_at and the lists'
// generation stay as they are (the peak sorts nothing).
func (s *Service) RecordPeak(ctx context.Context, id int64, n int) error {
	if n <= 0 {
		return nil
	}
	_, err := s.db.NewUpdate().Model((*Show)(nil)).Set("peak_viewers = ?", n).
		Where("id = ?", id).Where("peak_viewers < ?", n).Exec(ctx)
	if err != nil {
		return fmt.Errorf("shows: record peak of %d: %w", id, err)
	}
	return nil
}

// PeakOf is a show's peak as its owner sees it: the recorded one, or the
// live figures when they are higher (they are recorded a few seconds
// later).
func PeakOf(sh *Show, h Health) int {
	return max(sh.PeakViewers, h.PeakViewers, h.Viewers)
}
