package users

import (
	"context"
	"errors"
	"fmt"

	"github.com/gofiber/fiber/v2"
	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
)

// The users module is the kernel's app.Accounts: the console signs staff
// in and keeps their sessions through it, without importing this package.

var _ app.Accounts = (*Module)(nil)

// account is what the kernel knows of a user.
func account(u *User) *app.Account {
	return &app.Account{ID: u.ID, Name: u.Name, Role: u.Role, Principal: PrincipalOf(u, 0)}
}

// SignIn is Service.SignIn with the kernel's errors.
func (m *Module) SignIn(ctx context.Context, email, password, ip string) (*app.Account, error) {
	u, err := m.Service.SignIn(ctx, email, password, ip)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil, app.ErrWrongPassword
	case errors.Is(err, ErrSuspended):
		return nil, app.ErrSuspended
	case err != nil:
		return nil, err
	}
	return account(u), nil
}

// WebSession is the request's session (Service.Session).
func (m *Module) WebSession(c *fiber.Ctx) (*app.WebSession, error) {
	sess, err := m.Service.Session(c)
	if err != nil || sess == nil {
		return nil, err
	}
	return &app.WebSession{Account: account(sess.User), CSRF: sess.CSRF}, nil
}

// StartWebSession signs the user in on this browser.
func (m *Module) StartWebSession(c *fiber.Ctx, userID int64) error {
	_, err := m.Service.StartSession(c, userID)
	return err
}

// EndWebSession signs this browser out.
func (m *Module) EndWebSession(c *fiber.Ctx) error { return m.Service.EndSession(c) }

// FindAccount finds a user by id or email.
func (m *Module) FindAccount(ctx context.Context, idOrEmail string) (*app.Account, error) {
	u, err := m.Service.Find(ctx, idOrEmail)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return account(u), nil
}

// AccountNames loads the names of the users of ids in one query.
func (m *Module) AccountNames(ctx context.Context, ids []int64) (map[int64]string, error) {
	out := make(map[int64]string, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	var us []User
	if err := m.Service.db.NewSelect().Model(&us).Column("id", "name").Where("id IN (?)", bun.List(ids)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("users: names: %w", err)
	}
	for _, u := range us {
		out[u.ID] = u.Name
	}
	return out, nil
}
