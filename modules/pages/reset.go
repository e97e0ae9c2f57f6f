package pages

import (
	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/site"
)

// resetData is the page of a password reset link.
type resetData struct {
	Action, CSRF, Name string
	Errors             map[string]string
}

// resetForm is GET /reset/:token, the one-time link staff give a user who
// forgot their password (issued in the console; the service sends no mail).
func (m *Module) resetForm(c *fiber.Ctx, v *visitor) error {
	u, err := m.users.ResetUser(c.UserContext(), c.Params("token"))
	if err != nil {
		return err
	}
	return m.renderReset(c, v, resetData{Name: u.Name, Errors: map[string]string{}}, fiber.StatusOK)
}

func (m *Module) renderReset(c *fiber.Ctx, v *visitor, d resetData, status int) error {
	token, err := m.formToken(c)
	if err != nil {
		return err
	}
	d.CSRF, d.Action = token, "/reset/"+c.Params("token")
	site.NoStore(c)
	c.Set(fiber.HeaderReferrerPolicy, "no-referrer") // the link is a secret
	return m.render(c, status, resetPage(m.layout(c, v, "Set a new password", ""), d))
}

// resetPassword is POST /reset/:token: the new password, twice. It spends
// the link, ends every session of the user, and signs this browser in.
func (m *Module) resetPassword(c *fiber.Ctx, v *visitor) error {
	if err := m.checkFormToken(c); err != nil {
		return err
	}
	u, err := m.users.ResetUser(c.UserContext(), c.Params("token"))
	if err != nil {
		return err
	}
	d := resetData{Name: u.Name, Errors: map[string]string{}}
	password := c.FormValue("password")
	if password != c.FormValue("password_confirm") {
		d.Errors["password_confirm"] = "does not match the new password"
		return m.renderReset(c, v, d, fiber.StatusUnprocessableEntity)
	}
	if _, err := m.users.UseReset(c.UserContext(), c.Params("token"), password); err != nil {
		if status, ok := fieldErrors(err, d.Errors); ok {
			return m.renderReset(c, v, d, status)
		}
		return err
	}
	if _, err := m.users.StartSession(c, u.ID); err != nil {
		return err
	}
	return site.Redirect(c, "/account/profile?password=changed")
}
