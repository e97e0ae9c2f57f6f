// Package usersadmin is the users module's part of the staff console: the
// users page (search, marks, roles, new users, API tokens) and the radio
// approvals. It is a module of its own only because the console imports
// the users package for its sessions, so users cannot import the console.
package usersadmin

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/admin"
	"github.com/onair/onair/app"
	"github.com/onair/onair/modules/chat"
	"github.com/onair/onair/modules/shows"
	"github.com/onair/onair/modules/users"
)

func init() { app.Register(&Module{}) }

// Module contributes the users and radio pages.
type Module struct {
	users  *users.Service
	shows  *shows.Service // stops a suspended user's live shows, deletes a deleted user's
	chat   *chat.Service  // forgets a deleted user's messages
	authz  *app.Authz
	public string
}

var (
	_ app.Provisioner   = (*Module)(nil)
	_ app.AdminPager    = (*Module)(nil)
	_ app.AdminWidgeter = (*Module)(nil)
)

func (*Module) Name() string { return "users-admin" }

func (m *Module) Provision(core *app.Core) error {
	um, ok := app.Lookup[*users.Module](core)
	if !ok || um.Service == nil {
		return fmt.Errorf("usersadmin: the users module is not provisioned")
	}
	m.users, m.authz, m.public = um.Service, core.Authz, core.Config.PublicURL
	if sm, ok := app.Lookup[*shows.Module](core); ok {
		m.shows = sm.Service
	}
	if cm, ok := app.Lookup[*chat.Module](core); ok {
		m.chat = cm.Service
	}
	return nil
}

// AdminPages lists the pages and their routes in one place.
func (m *Module) AdminPages() []app.AdminPage {
	return []app.AdminPage{
		{Path: "/radio", Title: "Radio", Order: 30, Mount: func(r fiber.Router) {
			r.Get("/", m.radioPage)
			r.Post("/:id/approve", m.approveRadio)
			r.Post("/:id/revoke", m.revokeRadio)
		}},
		{Path: "/users", Title: "Users", Order: 40, Mount: func(r fiber.Router) {
			r.Get("/", m.listPage)
			r.Post("/", m.create)
			r.Get("/:id", m.userPage)
			r.Post("/:id/flags", m.setFlags)
			r.Post("/:id/role", m.setRole)
			r.Post("/:id/profile", m.editProfile)
			r.Post("/:id/suspend", m.suspend)
			r.Post("/:id/reset", m.resetLink)
			r.Post("/:id/delete", m.deleteUser)
			r.Post("/:id/tokens", m.issueToken)
			r.Post("/:id/tokens/:token_id/revoke", m.revokeToken)
		}},
	}
}

// AdminWidgets: how many users, and radio requests waiting.
func (m *Module) AdminWidgets(ctx context.Context) ([]app.AdminWidget, error) {
	all, err := m.users.Count(ctx, users.ListQuery{})
	if err != nil {
		return nil, err
	}
	yes := true
	waiting, err := m.users.Count(ctx, users.ListQuery{RadioRequested: &yes})
	if err != nil {
		return nil, err
	}
	return []app.AdminWidget{
		{Label: "Users", Value: strconv.Itoa(all), Link: "/users", Order: 30},
		{Label: "Radio requests", Value: strconv.Itoa(waiting), Link: "/radio", Order: 35},
	}, nil
}

// mayChange is the staff rank rule of every console action on a user: a
// moderator changes plain users and themselves, never another staff
// member (an admin above all); an admin changes anyone. what completes
// "only an admin may … another staff member".
func (m *Module) mayChange(c *fiber.Ctx, u *users.User, what string) error {
	p := admin.Principal(c)
	if u.Role == "" || u.ID == p.UserID {
		return nil
	}
	if err := m.authz.Can(p, "users", "set_role"); err != nil {
		return app.Forbidden("only an admin may " + what + " another staff member")
	}
	return nil
}

// user loads the :id user; a missing one is 404.
func (m *Module) user(c *fiber.Ctx) (*users.User, error) {
	id, err := admin.IDParam(c, "id")
	if err != nil {
		return nil, err
	}
	u, err := m.users.Get(c.UserContext(), id)
	if errors.Is(err, users.ErrNotFound) {
		return nil, app.NotFound("user")
	}
	return u, err
}
