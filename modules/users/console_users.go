package users

import (
	"errors"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/admin"
	"github.com/onair/onair/app"
)

const pageSize = 50

// flagState, roleState and tokenState are what the audit log records.
type flagState struct {
	DJ       bool `json:"dj"`
	Producer bool `json:"producer"`
	Featured bool `json:"featured"`
}

type roleState struct {
	Role string `json:"role"`
}

type tokenState struct {
	TokenID   int64      `json:"token_id"`
	Label     string     `json:"label"`
	Prefix    string     `json:"prefix"`
	RevokedAt *time.Time `json:"revoked_at"`
}

type newUserState struct {
	Name     string `json:"name"`
	Email    string `json:"email"`
	Role     string `json:"role"`
	DJ       bool   `json:"dj"`
	Producer bool   `json:"producer"`
	Password bool   `json:"password_set"`
}

func flagsOf(u *User) flagState { return flagState{u.DJ, u.Producer, u.Featured} }

// listPage is GET /admin/users: search by name, slug or email.
func (m *console) listPage(c *fiber.Ctx) error {
	n := admin.PageNumber(c)
	q := strings.TrimSpace(c.Query("q"))
	list, count, err := m.users.List(c.UserContext(), ListQuery{Search: q, Page: app.Page{Number: n, Size: pageSize}})
	if err != nil {
		return err
	}
	return admin.Render(c, usersView(q, list, admin.NewPagination(c, n, count, pageSize)))
}

// create is POST /admin/users. Moderators create plain users; a staff role
// needs the right to set roles.
func (m *console) create(c *fiber.Ctx) error {
	p := admin.Principal(c)
	if err := m.authz.Can(p, "users", "create"); err != nil {
		return err
	}
	n := NewUser{
		Name: c.FormValue("name"), Email: c.FormValue("email"), Password: c.FormValue("password"),
		Role: c.FormValue("role"), DJ: admin.Checked(c, "dj"), Producer: admin.Checked(c, "producer"),
	}
	if n.Role != "" {
		if err := m.authz.Can(p, "users", "set_role"); err != nil {
			return app.Forbidden("only an admin may create staff accounts")
		}
	}
	u, err := m.users.Create(c.UserContext(), n)
	if err != nil {
		return err
	}
	after := newUserState{u.Name, u.Email, u.Role, u.DJ, u.Producer, u.PasswordHash != ""}
	if err := admin.Log(c, "users.create", admin.Target("user", u.ID), nil, after); err != nil {
		return err
	}
	return admin.Redirect(c, admin.Path("/users/%d", u.ID), "Created "+u.Name+".")
}

// userPage is GET /admin/users/:id.
func (m *console) userPage(c *fiber.Ctx) error {
	return m.renderUser(c, "")
}

// renderUser shows a user with their tokens; newToken, when set, is shown
// once above them.
func (m *console) renderUser(c *fiber.Ctx, newToken string) error {
	return m.renderUserWith(c, newToken, "")
}

// renderUserWith also shows a new password reset link, once.
func (m *console) renderUserWith(c *fiber.Ctx, newToken, resetURL string) error {
	u, err := m.user(c)
	if err != nil {
		return err
	}
	tokens, err := m.users.Tokens(c.UserContext(), u.ID)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return admin.Render(c, userView(userData{User: u, Tokens: tokens, NewToken: newToken, ResetURL: resetURL,
		CanTokens: m.mayManageTokens(c, u) == nil}))
}

// setFlags is POST /admin/users/:id/flags (the dj, producer and featured
// checkboxes; an unchecked box is false).
func (m *console) setFlags(c *fiber.Ctx) error {
	if err := m.authz.Can(admin.Principal(c), "users", "update"); err != nil {
		return err
	}
	u, err := m.user(c)
	if err != nil {
		return err
	}
	if err := m.mayChange(c, u, "set the marks of"); err != nil {
		return err
	}
	before := flagsOf(u)
	dj, producer, featured := admin.Checked(c, "dj"), admin.Checked(c, "producer"), admin.Checked(c, "featured")
	u, err = m.users.SetFlags(c.UserContext(), u.ID, Flags{DJ: &dj, Producer: &producer, Featured: &featured})
	if err != nil {
		return err
	}
	if after := flagsOf(u); after != before {
		if err := admin.Log(c, "users.flags", admin.Target("user", u.ID), before, after); err != nil {
			return err
		}
	}
	return admin.Redirect(c, admin.Path("/users/%d", u.ID), "Saved the marks of "+u.Name+".")
}

// setRole is POST /admin/users/:id/role (admins only). Nobody changes their
// own role, so the last admin cannot lock everyone out by mistake.
func (m *console) setRole(c *fiber.Ctx) error {
	p := admin.Principal(c)
	if err := m.authz.Can(p, "users", "set_role"); err != nil {
		return err
	}
	u, err := m.user(c)
	if err != nil {
		return err
	}
	if u.ID == p.UserID {
		return app.Conflict("you cannot change your own role; ask another admin")
	}
	before := roleState{u.Role}
	u, err = m.users.SetRole(c.UserContext(), u.ID, c.FormValue("role"))
	if err != nil {
		return err
	}
	if before.Role != u.Role {
		if err := admin.Log(c, "users.role", admin.Target("user", u.ID), before, roleState{u.Role}); err != nil {
			return err
		}
	}
	return admin.Redirect(c, admin.Path("/users/%d", u.ID), u.Name+" is now "+roleLabel(u.Role)+".")
}

// mayManageTokens: staff manage tokens; the tokens of another staff
// member (whose token would carry their role) need an admin.
func (m *console) mayManageTokens(c *fiber.Ctx, u *User) error {
	p := admin.Principal(c)
	if err := m.authz.Can(p, "tokens", "manage"); err != nil {
		return err
	}
	if u.Role != "" && u.ID != p.UserID {
		if err := m.authz.Can(p, "tokens", "manage_staff"); err != nil {
			return app.Forbidden("only an admin may manage the tokens of another staff member")
		}
	}
	return nil
}

// issueToken is POST /admin/users/:id/tokens: the new token is shown on
// the answer, once; only its hash is kept.
func (m *console) issueToken(c *fiber.Ctx) error {
	u, err := m.user(c)
	if err != nil {
		return err
	}
	if err := m.mayManageTokens(c, u); err != nil {
		return err
	}
	label := strings.TrimSpace(c.FormValue("label"))
	if label == "" {
		label = "console"
	}
	plain, t, err := m.users.IssueToken(c.UserContext(), u.ID, label)
	if err != nil {
		return err
	}
	if err := admin.Log(c, "tokens.issue", admin.Target("user", u.ID), nil,
		tokenState{TokenID: t.ID, Label: t.Label, Prefix: t.Prefix}); err != nil {
		return err
	}
	return m.renderUser(c, plain)
}

// revokeToken is POST /admin/users/:id/tokens/:token/revoke.
func (m *console) revokeToken(c *fiber.Ctx) error {
	u, err := m.user(c)
	if err != nil {
		return err
	}
	if err := m.mayManageTokens(c, u); err != nil {
		return err
	}
	tid, err := admin.IDParam(c, "token_id")
	if err != nil {
		return err
	}
	tokens, err := m.users.Tokens(c.UserContext(), u.ID)
	if err != nil {
		return err
	}
	var before *tokenState
	for _, t := range tokens {
		if t.ID == tid {
			before = &tokenState{TokenID: t.ID, Label: t.Label, Prefix: t.Prefix, RevokedAt: t.RevokedAt}
		}
	}
	if before == nil {
		return app.NotFound("token")
	}
	if err := m.users.RevokeToken(c.UserContext(), u.ID, tid); errors.Is(err, ErrNotFound) {
		return app.Conflict("the token is already revoked")
	} else if err != nil {
		return err
	}
	after := *before
	now := m.users.now()
	after.RevokedAt = &now
	if err := admin.Log(c, "tokens.revoke", admin.Target("user", u.ID), before, after); err != nil {
		return err
	}
	return admin.Redirect(c, admin.Path("/users/%d", u.ID), "Revoked the token "+before.Prefix+"…")
}

func roleLabel(role string) string {
	if role == "" {
		return "not staff"
	}
	return "a " + role
}
