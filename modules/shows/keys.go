package shows

import (
	"context"

	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
)

// RegenerateKey gives the show a new stream key and returns the show with
// it; the old key is refused from then on. Only the owner may (the same
// Casbin right as update): a leaked key is the owner's to rotate, and staff
// take a show off instead. A publisher already connected keeps streaming;
// a reconnect must use the new key. A show the caller may not see is
// ErrNotFound, as everywhere.
func (s *Service) RegenerateKey(ctx context.Context, id int64, by *app.Principal) (*Show, error) {
	secret, err := newSecret()
	if err != nil {
		return nil, err
	}
	err = s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		sh, err := lockShow(ctx, tx, id)
		if err != nil {
			return err
		}
		if by == nil || !s.CanView(sh, by) {
			return ErrNotFound
		}
		if err := s.can(by, sh, "update"); err != nil {
			return app.Forbidden("only the owner of the show may regenerate its stream key")
		}
		sh.StreamKey = streamKey(sh.ID, secret)
		sh.UpdatedAt = app.Now()
		_, err = tx.NewUpdate().Model(sh).Column("stream_key", "updated_at").WherePK().Exec(ctx)
		return err
	})
	if err != nil {
		return nil, wrap("regenerate key", id, err)
	}
	return s.Get(ctx, id)
}
