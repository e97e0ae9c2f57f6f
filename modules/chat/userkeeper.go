package chat

import (
	"context"

	"github.com/onair/onair/app"
	"github.com/onair/onair/modules/users"
)

// The chat keeps rows of users (their messages): the users module's
// console calls it when staff delete a user.
var _ users.UserKeeper = (*Module)(nil)

// UserSuspended: a suspended user's messages stay (they cannot post).
func (*Module) UserSuspended(context.Context, int64, *app.Principal) ([]int64, error) {
	return nil, nil
}

// DeletingUser forgets the user's messages everywhere.
func (m *Module) DeletingUser(ctx context.Context, userID int64, _ *app.Principal) ([]int64, error) {
	return nil, m.Service.ForgetUser(ctx, userID)
}
