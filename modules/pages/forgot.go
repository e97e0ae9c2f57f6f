package pages

import (
	"errors"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/app"
	"github.com/onair/onair/modules/users"
	"github.com/onair/onair/site"
)

// forgotData is the "forgot password" page (/forgot, linked from
// /signin). With ONAIR_SMTP_URL set it takes an address and mails a reset
// link; without, it says to ask staff for one.
type forgotData struct {
	Mail, Sent         bool
	CSRF, Email, Error string
}

// forgotForm is GET /forgot. Signed in, the visitor changes their
// password on the profile page instead.
func (m *Module) forgotForm(c *fiber.Ctx, v *visitor) error {
	if v.signedIn() {
		return site.Redirect(c, "/account/profile")
	}
	return m.renderForgot(c, v, forgotData{}, fiber.StatusOK)
}

func (m *Module) renderForgot(c *fiber.Ctx, v *visitor, d forgotData, status int) error {
	d.Mail = m.users.MailsResets()
	if d.Mail {
		token, err := m.formToken(c)
		if err != nil {
			return err
		}
		d.CSRF = token
	}
	site.NoStore(c)
	return m.render(c, status, forgotPage(m.layout(c, v, "Forgot your password?", ""), d))
}

// forgot is POST /forgot: the same answer whether or not an account uses
// the address (users.Service.RequestReset); a malformed address is shown
// beside the field, and past the limits the page is a 429.
func (m *Module) forgot(c *fiber.Ctx, v *visitor) error {
	if v.signedIn() {
		return site.Redirect(c, "/account/profile")
	}
	if err := m.checkFormToken(c); err != nil {
		return err
	}
	d := forgotData{Email: strings.TrimSpace(c.FormValue("email"))}
	err := m.users.RequestReset(c.UserContext(), d.Email, c.IP())
	var apiErr *app.Error
	switch {
	case errors.As(err, &apiErr) && apiErr.Status == fiber.StatusUnprocessableEntity:
		d.Error = apiErr.Fields["email"]
		return m.renderForgot(c, v, d, fiber.StatusUnprocessableEntity)
	case errors.Is(err, users.ErrNoMail):
		return m.renderForgot(c, v, d, fiber.StatusNotFound)
	case err != nil: // 429 past the limits, with Retry-After
		return err
	}
	d.Sent = true
	return m.renderForgot(c, v, d, fiber.StatusOK)
}
