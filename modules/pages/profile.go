package pages

import (
	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/modules/users"
	"github.com/onair/onair/site"
)

// profileData is /account/profile: the profile form and the password
// change.
type profileData struct {
	CSRF, UserPath, Image, Cover               string
	Name, Description, Location, Website, Tags string
	HasCover, Saved, PasswordChanged           bool
	Errors, PasswordErrors                     map[string]string
	MaxImageKB                                 int
}

// profileForm is GET /account/profile.
func (m *Module) profileForm(c *fiber.Ctx, v *visitor) error {
	if !v.signedIn() {
		return site.Redirect(c, "/signin?next=/account/profile")
	}
	u, err := m.users.Get(c.UserContext(), v.user.ID)
	if err != nil {
		return err
	}
	d := m.profileOf(v, u)
	d.Saved = c.Query("saved") == "1"
	d.PasswordChanged = c.Query("password") == "changed"
	return m.renderProfile(c, v, d, fiber.StatusOK)
}

func (m *Module) profileOf(v *visitor, u *users.User) profileData {
	view := users.NewView(m.public, u, users.ForUserRead)
	d := profileData{
		CSRF: v.csrf(), UserPath: "/" + u.Slug, Image: view.ImageURL, Cover: view.CoverURL, HasCover: u.CoverKey != nil,
		Name: u.Name, Description: deref(u.Description), Location: deref(u.Location), Website: deref(u.Website),
		Errors: map[string]string{}, PasswordErrors: map[string]string{}, MaxImageKB: m.users.MaxImageBytes() >> 10,
	}
	for i, t := range u.Tags {
		if i > 0 {
			d.Tags += ", "
		}
		d.Tags += t.Name
	}
	return d
}

func (m *Module) renderProfile(c *fiber.Ctx, v *visitor, d profileData, status int) error {
	site.NoStore(c)
	return m.render(c, status, profilePage(m.layout(c, v, "Your profile", ""), d))
}

// saveProfile is POST /account/profile (multipart: the images ride along).
func (m *Module) saveProfile(c *fiber.Ctx, v *visitor) error {
	if err := m.signedInPost(c, v); err != nil {
		return err
	}
	u, err := m.users.Get(c.UserContext(), v.user.ID)
	if err != nil {
		return err
	}
	d := m.profileOf(v, u)
	d.Name, d.Description, d.Location, d.Website, d.Tags = c.FormValue("name"), c.FormValue("description"), c.FormValue("location"), c.FormValue("website"), c.FormValue("tags")
	tags := splitTags(d.Tags)
	in := users.ProfileInput{Name: &d.Name, Description: &d.Description, Location: &d.Location, Website: &d.Website, Tags: &tags}
	_, err = m.users.SaveProfile(c, v.user.ID, in)
	if err == nil {
		return site.Redirect(c, "/account/profile?saved=1")
	}
	status, ok := fieldErrors(err, d.Errors)
	if !ok {
		return err
	}
	return m.renderProfile(c, v, d, status)
}

// changePassword is POST /account/password: the current password, then
// the new one twice. Every other session of the user ends; this one stays.
func (m *Module) changePassword(c *fiber.Ctx, v *visitor) error {
	if err := m.signedInPost(c, v); err != nil {
		return err
	}
	u, err := m.users.Get(c.UserContext(), v.user.ID)
	if err != nil {
		return err
	}
	d := m.profileOf(v, u)
	next := c.FormValue("password")
	if next != c.FormValue("password_confirm") {
		d.PasswordErrors["password_confirm"] = "does not match the new password"
		return m.renderProfile(c, v, d, fiber.StatusUnprocessableEntity)
	}
	err = m.users.ChangePassword(c.UserContext(), v.user.ID, c.FormValue("current_password"), next, v.sess.Hash)
	if err == nil {
		return site.Redirect(c, "/account/profile?password=changed#password")
	}
	status, ok := fieldErrors(err, d.PasswordErrors)
	if !ok {
		return err
	}
	return m.renderProfile(c, v, d, status)
}

// requestRadio is POST /account/radio: ask staff for the radio approval.
func (m *Module) requestRadio(c *fiber.Ctx, v *visitor) error {
	if err := m.signedInPost(c, v); err != nil {
		return err
	}
	if _, err := m.users.RequestRadio(c.UserContext(), v.user.ID); err != nil {
		return err
	}
	return site.Redirect(c, "/account#radio")
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
