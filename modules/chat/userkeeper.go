package chat

import (
	"context"

	"github.com/onair/onair/app"
	"github.com/onair/onair/app/events"
	"github.com/onair/onair/modules/users"
)

// The chat keeps rows of users (their messages): it forgets them inside
// the transaction that deletes the user (users.Deleted).
var _ users.UserKeeper = (*Module)(nil)

// UserSuspended: a suspended user's messages stay (they cannot post).
func (*Module) UserSuspended(context.Context, int64, *app.Principal) ([]int64, error) {
	return nil, nil
}

// forgetUser handles users.Deleted inside the deletion's transaction: the
// user's messages and bans go everywhere (ForgetUser's change); once the
// transaction commits, the rooms hear that the messages went.
func (m *Module) forgetUser(ctx context.Context, tx *events.Tx, d *users.Deletion) error {
	gone, err := m.Service.forgetInTx(ctx, tx, d.UserID)
	if err != nil {
		return err
	}
	tx.AfterCommit(func(ctx context.Context) { m.Service.announceForgotten(ctx, gone) })
	return nil
}
