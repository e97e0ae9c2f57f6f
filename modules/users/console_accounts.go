package users

import (
	"context"
	"fmt"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/admin"
	"github.com/onair/onair/app"
)

// The staff's account tools: edit a profile, suspend and restore, and a
// one-time password reset link.

// profileState is what the audit log records of a profile edit.
type profileState struct {
	Name        string  `json:"name"`
	Location    *string `json:"location"`
	Description *string `json:"description"`
}

func profileOf(u *User) profileState { return profileState{u.Name, u.Location, u.Description} }

func eqPtr(a, b *string) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// editProfile is POST /admin/users/:id/profile: name, location and bio
// (Service.UpdateProfile, the API's rules).
func (m *console) editProfile(c *fiber.Ctx) error {
	if err := m.authz.Can(admin.Principal(c), "users", "update"); err != nil {
		return err
	}
	u, err := m.user(c)
	if err != nil {
		return err
	}
	if err := m.mayChange(c, u, "edit the profile of"); err != nil {
		return err
	}
	before := profileOf(u)
	name, loc, bio := c.FormValue("name"), c.FormValue("location"), c.FormValue("description")
	u, err = m.users.UpdateProfile(c.UserContext(), u.ID, ProfileInput{Name: &name, Location: &loc, Description: &bio})
	if err != nil {
		return err
	}
	after := profileOf(u)
	if before.Name != after.Name || !eqPtr(before.Location, after.Location) || !eqPtr(before.Description, after.Description) {
		if err := admin.Log(c, "users.profile", admin.Target("user", u.ID), before, after); err != nil {
			return err
		}
	}
	return admin.Redirect(c, admin.Path("/users/%d", u.ID), "Saved the profile of "+u.Name+".")
}

type suspendState struct {
	Suspended bool    `json:"suspended"`
	Stopped   []int64 `json:"stopped_shows,omitempty"`
}

// suspend is POST /admin/users/:id/suspend with suspended=true|false. A
// suspended user's tokens and sessions stop working at once, and their
// live shows are stopped. Nobody suspends themselves; only an admin
// suspends staff.
func (m *console) suspend(c *fiber.Ctx) error {
	p := admin.Principal(c)
	if err := m.authz.Can(p, "users", "suspend"); err != nil {
		return err
	}
	on, err := app.ParseBool(c.FormValue("suspended"))
	if err != nil {
		return app.Validation{"suspended": "must be true or false"}.Err()
	}
	u, err := m.user(c)
	if err != nil {
		return err
	}
	if u.ID == p.UserID {
		return app.Conflict("you cannot suspend yourself")
	}
	if err := m.mayChange(c, u, "suspend"); err != nil {
		return err
	}
	before := suspendState{Suspended: u.SuspendedAt != nil}
	if u, err = m.users.SetSuspended(c.UserContext(), u.ID, on); err != nil {
		return err
	}
	after := suspendState{Suspended: u.SuspendedAt != nil}
	if on {
		if after.Stopped, err = m.stopLive(c.UserContext(), u.ID, p); err != nil {
			return err
		}
	}
	if before.Suspended != after.Suspended || len(after.Stopped) > 0 {
		action := "users.unsuspend"
		if on {
			action = "users.suspend"
		}
		if err := admin.Log(c, action, admin.Target("user", u.ID), before, after); err != nil {
			return err
		}
	}
	msg := "Restored " + u.Name + "."
	if on {
		msg = fmt.Sprintf("Suspended %s; %d live show(s) stopped.", u.Name, len(after.Stopped))
	}
	return admin.Redirect(c, admin.Path("/users/%d", u.ID), msg)
}

// stopLive stops the user's live shows as the staff member (every
// UserKeeper's UserSuspended).
func (m *console) stopLive(ctx context.Context, userID int64, p *app.Principal) ([]int64, error) {
	var stopped []int64
	for _, k := range m.keepers {
		ids, err := k.UserSuspended(ctx, userID, p)
		stopped = append(stopped, ids...)
		if err != nil {
			return stopped, err
		}
	}
	return stopped, nil
}

// resetLink is POST /admin/users/:id/reset: a one-time link to set a new
// password, shown once to the staff member to pass on (the service sends
// no mail). Only an admin makes one for another staff member.
func (m *console) resetLink(c *fiber.Ctx) error {
	p := admin.Principal(c)
	if err := m.authz.Can(p, "users", "reset_password"); err != nil {
		return err
	}
	u, err := m.user(c)
	if err != nil {
		return err
	}
	if err := m.mayChange(c, u, "make a reset link for"); err != nil {
		return err
	}
	plain, err := m.users.IssueReset(c.UserContext(), u.ID)
	if err != nil {
		return err
	}
	if err := admin.Log(c, "users.reset_link", admin.Target("user", u.ID), nil, map[string]string{"expires_in": ResetLifetime.String()}); err != nil {
		return err
	}
	return m.renderUserWith(c, "", m.public+"/reset/"+plain)
}

type deletedUser struct {
	Name  string  `json:"name"`
	Email string  `json:"email"`
	Role  string  `json:"role"`
	Shows []int64 `json:"deleted_shows"`
}

// deleteUser is POST /admin/users/:id/delete (admins only, never oneself):
// in one transaction (DeleteUser), the user's shows are deleted as a staff
// delete would (a live one stops, its media goes), then their chat
// messages everywhere, then the user with their tokens, sessions, follows
// and favorites; a failure leaves all of it in place. The audit entries
// they wrote stay.
func (m *console) deleteUser(c *fiber.Ctx) error {
	p := admin.Principal(c)
	if err := m.authz.Can(p, "users", "delete"); err != nil {
		return err
	}
	u, err := m.user(c)
	if err != nil {
		return err
	}
	if u.ID == p.UserID {
		return app.Conflict("you cannot delete yourself")
	}
	before := deletedUser{Name: u.Name, Email: u.Email, Role: u.Role}
	if before.Shows, err = m.users.DeleteUser(c.UserContext(), u.ID, p); err != nil {
		return err
	}
	if err := admin.Log(c, "users.delete", admin.Target("user", u.ID), before, nil); err != nil {
		return err
	}
	return admin.Redirect(c, admin.Path("/users"), "Deleted "+u.Name+".")
}
