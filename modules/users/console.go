package users

import (
	"context"
	"errors"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/admin"
	"github.com/onair/onair/app"
)

// The users module's pages of the staff console: the users page (search,
// marks, roles, new users, API tokens, profile, suspension, reset links,
// deletion) and the radio approvals.

var (
	_ app.AdminPager    = (*Module)(nil)
	_ app.AdminWidgeter = (*Module)(nil)
)

// UserKeeper is the ability of a module that keeps rows of users (shows,
// chat). The console calls every module that has it, in registration
// order, when staff suspend a user; the users module cannot import those
// modules, which import it. Deleting a user is the Deleted event, which
// they handle in the deletion's transaction.
type UserKeeper interface {
	// UserSuspended stops what the user, just suspended by staff member
	// by, has under way; it returns the ids of the shows it stopped.
	UserSuspended(ctx context.Context, userID int64, by *app.Principal) (stoppedShows []int64, err error)
}

// console serves the pages; the module builds it in Provision.
type console struct {
	users   *Service
	keepers []UserKeeper
	authz   *app.Authz
	public  string
}

func newConsole(core *app.Core, svc *Service) *console {
	m := &console{users: svc, authz: core.Authz, public: core.Config.PublicURL}
	for _, mod := range core.Modules {
		if k, ok := mod.(UserKeeper); ok {
			m.keepers = append(m.keepers, k)
		}
	}
	return m
}

// AdminPages are the console's pages of users and radio approvals.
func (m *Module) AdminPages() []app.AdminPage { return m.console.AdminPages() }

// AdminWidgets: how many users, and radio requests waiting.
func (m *Module) AdminWidgets(ctx context.Context) ([]app.AdminWidget, error) {
	return m.console.AdminWidgets(ctx)
}

// AdminPages lists the pages and their routes in one place.
func (m *console) AdminPages() []app.AdminPage {
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

// AdminWidgets counts the users and the radio requests waiting.
func (m *console) AdminWidgets(ctx context.Context) ([]app.AdminWidget, error) {
	all, err := m.users.Count(ctx, ListQuery{})
	if err != nil {
		return nil, err
	}
	yes := true
	waiting, err := m.users.Count(ctx, ListQuery{RadioRequested: &yes})
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
func (m *console) mayChange(c *fiber.Ctx, u *User, what string) error {
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
func (m *console) user(c *fiber.Ctx) (*User, error) {
	id, err := admin.IDParam(c, "id")
	if err != nil {
		return nil, err
	}
	u, err := m.users.Get(c.UserContext(), id)
	if errors.Is(err, ErrNotFound) {
		return nil, app.NotFound("user")
	}
	return u, err
}
