package shows

import (
	"context"

	"github.com/onair/onair/app"
	"github.com/onair/onair/modules/users"
)

// The shows module keeps rows of users: the users module's console calls
// it when staff suspend or delete a user.
var _ users.UserKeeper = (*Module)(nil)

// UserSuspended stops the user's live shows as staff member by.
func (m *Module) UserSuspended(ctx context.Context, userID int64, by *app.Principal) ([]int64, error) {
	yes := true
	list, _, err := m.Service.Lists.List(ctx, ListQuery{UserID: userID, Live: &yes, Page: app.Page{Number: 1, Size: 50}})
	if err != nil {
		return nil, err
	}
	var stopped []int64
	for _, sh := range list {
		if _, err := m.Service.Stop(ctx, sh.ID, by); err != nil && err != ErrNotLive {
			return stopped, err
		}
		stopped = append(stopped, sh.ID)
	}
	return stopped, nil
}

// DeletingUser deletes the user's shows as a staff delete would (a live
// one stops, its media goes), a page at a time until none is left.
func (m *Module) DeletingUser(ctx context.Context, userID int64, by *app.Principal) ([]int64, error) {
	var deleted []int64
	for {
		list, _, err := m.Service.Lists.List(ctx, ListQuery{UserID: userID, Page: app.Page{Number: 1, Size: 100}})
		if err != nil {
			return deleted, err
		}
		if len(list) == 0 {
			return deleted, nil
		}
		for _, sh := range list {
			if _, err := m.Service.Delete(ctx, sh.ID, by); err != nil {
				return deleted, err
			}
			deleted = append(deleted, sh.ID)
		}
	}
}
