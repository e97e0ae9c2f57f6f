package users

import (
	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/admin"
	"github.com/onair/onair/app"
)

// radioState is what the audit log records of a radio decision.
type radioState struct {
	Radio          bool `json:"radio"`
	RadioRequested bool `json:"radio_requested"`
}

// radioPage is GET /admin/radio: requests waiting, then approved users.
func (m *console) radioPage(c *fiber.Ctx) error {
	ctx := c.UserContext()
	yes, no := true, false
	waiting, _, err := m.users.List(ctx, ListQuery{RadioRequested: &yes, Radio: &no, Page: app.Page{Number: 1, Size: 200}})
	if err != nil {
		return err
	}
	n := admin.PageNumber(c)
	approved, count, err := m.users.List(ctx, ListQuery{Radio: &yes, Page: app.Page{Number: n, Size: pageSize}})
	if err != nil {
		return err
	}
	return admin.Render(c, radioView(waiting, approved, admin.NewPagination(c, n, count, pageSize)))
}

// approveRadio is POST /admin/radio/:id/approve.
func (m *console) approveRadio(c *fiber.Ctx) error { return m.decideRadio(c, true) }

// revokeRadio is POST /admin/radio/:id/revoke (also turns a request down).
func (m *console) revokeRadio(c *fiber.Ctx) error { return m.decideRadio(c, false) }

func (m *console) decideRadio(c *fiber.Ctx, approve bool) error {
	if err := m.authz.Can(admin.Principal(c), "users", "approve_radio"); err != nil {
		return err
	}
	u, err := m.user(c)
	if err != nil {
		return err
	}
	if err := m.mayChange(c, u, "approve or revoke the radio of"); err != nil {
		return err
	}
	before := radioState{u.Radio, u.RadioRequested}
	u, err = m.users.SetRadio(c.UserContext(), u.ID, approve)
	if err != nil {
		return err
	}
	action, msg := "users.radio_approve", u.Name+" may now run radio shows."
	if !approve {
		action, msg = "users.radio_revoke", u.Name+" may no longer run radio shows."
		if !before.Radio {
			msg = "The radio request of " + u.Name + " was turned down."
		}
	}
	if err := admin.Log(c, action, admin.Target("user", u.ID), before, radioState{u.Radio, u.RadioRequested}); err != nil {
		return err
	}
	return admin.Back(c, admin.Path("/radio"), msg)
}
