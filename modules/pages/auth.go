package pages

import (
	"errors"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/app"
	"github.com/onair/onair/modules/users"
	"github.com/onair/onair/site"
)

// authData is the sign-up or sign-in form.
type authData struct {
	SignUp                                         bool
	Action, Submit, CSRF, Next, Name, Email, Error string
	Fields                                         map[string]string
}

func (m *Module) authPage(c *fiber.Ctx, v *visitor, status int, f authData) error {
	title := "Sign in"
	f.Action, f.Submit = "/signin", "Sign in"
	if f.SignUp {
		title, f.Action, f.Submit = "Sign up", "/signup", "Create account"
	}
	token, err := m.formToken(c)
	if err != nil {
		return err
	}
	f.CSRF = token
	site.NoStore(c)
	return m.render(c, status, authForm(m.layout(c, v, title, ""), f))
}

// signUpForm is GET /signup.
func (m *Module) signUpForm(c *fiber.Ctx, v *visitor) error {
	if v.signedIn() {
		return site.Redirect(c, "/account")
	}
	return m.authPage(c, v, fiber.StatusOK, authData{SignUp: true, Next: site.SafeNext(c.Query("next"))})
}

// signUp is POST /signup: create the user, sign them in, and go on to
// where they came from (or the account page).
func (m *Module) signUp(c *fiber.Ctx, v *visitor) error {
	if err := m.checkFormToken(c); err != nil {
		return err
	}
	f := authData{SignUp: true, Name: c.FormValue("name"), Email: c.FormValue("email"), Next: site.SafeNext(c.FormValue("next"))}
	password := c.FormValue("password")
	if len(password) < 8 {
		// The service accepts users without a password (CLI, console); a
		// web account needs one.
		f.Fields = map[string]string{"password": "must be at least 8 characters"}
		return m.authPage(c, v, fiber.StatusUnprocessableEntity, f)
	}
	u, err := m.users.SignUp(c.UserContext(), users.NewUser{Name: f.Name, Email: f.Email, Password: password}, c.IP())
	var apiErr *app.Error
	if errors.As(err, &apiErr) && apiErr.Status == fiber.StatusUnprocessableEntity {
		f.Fields, f.Error = apiErr.Fields, "Please correct the fields below."
		return m.authPage(c, v, fiber.StatusUnprocessableEntity, f)
	}
	if err != nil {
		return err
	}
	if _, err := m.users.StartSession(c, u.ID); err != nil {
		return err
	}
	return site.Redirect(c, orDefault(f.Next, "/account"))
}

// signInForm is GET /signin.
func (m *Module) signInForm(c *fiber.Ctx, v *visitor) error {
	if v.signedIn() {
		return site.Redirect(c, orDefault(site.SafeNext(c.Query("next")), "/"))
	}
	return m.authPage(c, v, fiber.StatusOK, authData{Next: site.SafeNext(c.Query("next"))})
}

// signIn is POST /signin. A wrong email and a wrong password read the same.
func (m *Module) signIn(c *fiber.Ctx, v *visitor) error {
	if err := m.checkFormToken(c); err != nil {
		return err
	}
	f := authData{Email: c.FormValue("email"), Next: site.SafeNext(c.FormValue("next"))}
	u, err := m.users.SignIn(c.UserContext(), f.Email, c.FormValue("password"), c.IP())
	if errors.Is(err, users.ErrNotFound) {
		f.Error = "That email and password do not match an account."
		return m.authPage(c, v, fiber.StatusUnauthorized, f)
	}
	if errors.Is(err, users.ErrSuspended) {
		f.Error = "This account is suspended: its shows, tokens and sign-in are stopped until the staff lift the suspension. Ask them why."
		return m.authPage(c, v, fiber.StatusForbidden, f)
	}
	if err != nil {
		return err
	}
	if _, err := m.users.StartSession(c, u.ID); err != nil {
		return err
	}
	return site.Redirect(c, orDefault(f.Next, "/"))
}

// signOut is POST /signout.
func (m *Module) signOut(c *fiber.Ctx, v *visitor) error {
	if !v.signedIn() {
		return site.Redirect(c, "/")
	}
	if err := m.checkCSRF(c, v); err != nil {
		return err
	}
	if err := m.users.EndSession(c); err != nil {
		return err
	}
	return site.Redirect(c, "/")
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
