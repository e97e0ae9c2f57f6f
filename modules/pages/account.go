package pages

import (
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/app"
	"github.com/onair/onair/modules/podcast"
	"github.com/onair/onair/modules/shows"
	"github.com/onair/onair/modules/users"
	"github.com/onair/onair/site"
)

// accountData is the account page. Key is set on the one show whose key
// the owner asked to see (or just regenerated); NewToken right after a
// token was created. Neither is ever stored in the page otherwise.
type accountData struct {
	Name, Email, UserPath, CSRF, StreamURL, APIURL, NewToken string
	Radio, RadioRequested                                    bool
	Shows                                                    []accountShow
	Tokens                                                   []accountToken
	// Sections are the modules' own sections (app.AccountSectioner),
	// below the page's: the webhooks', for one.
	Sections []app.Component
	// Feed is the user's podcast feed; Mails tells whether go-live mails
	// are sent at all (ONAIR_SMTP_URL), GoLiveMail the account's switch.
	Feed              string
	Mails, GoLiveMail bool
}

type accountShow struct {
	ID, Name, Path, Key string
	State               state
}

type accountToken struct{ ID, Label, Prefix, Created, LastUsed, Revoked string }

// accountShows is how many of their shows the account page lists.
const accountShows = 100

// account is GET /account.
func (m *Module) account(c *fiber.Ctx, v *visitor) error {
	return m.renderAccount(c, v, "", 0, "")
}

// renderAccount renders the account page, revealing the key of show
// keyOf (0: none) and a new token's plain text (once).
func (m *Module) renderAccount(c *fiber.Ctx, v *visitor, newToken string, keyOf int64, key string) error {
	if !v.signedIn() {
		return site.Redirect(c, "/signin?next=/account")
	}
	d := accountData{
		Name: v.user.Name, Email: v.user.Email, UserPath: "/" + v.user.Slug, CSRF: v.csrf(),
		StreamURL: m.rtmp, APIURL: m.public + "/v1", NewToken: newToken,
		Radio: v.user.Radio, RadioRequested: v.user.RadioRequested,
		Feed: podcast.FeedURL(m.public, v.user.ID),
	}
	if m.notify != nil && m.notify.Mails() {
		on, err := m.notify.AccountNotify(c.UserContext(), v.user.ID)
		if err != nil {
			return err
		}
		d.Mails, d.GoLiveMail = true, on
	}
	list, _, err := m.shows.Lists.List(c.UserContext(), shows.ListQuery{Viewer: v.p, UserID: v.user.ID, Page: app.Page{Number: 1, Size: accountShows}})
	if err != nil {
		return err
	}
	for i := range list {
		sh := &list[i]
		s := accountShow{ID: strconv.FormatInt(sh.ID, 10), Name: sh.Name, Path: "/" + v.user.Slug + "/" + sh.Slug, State: stateOf(sh, m.clock.Stamp())}
		if sh.ID == keyOf {
			s.Key = key
		}
		d.Shows = append(d.Shows, s)
	}
	tokens, err := m.users.Tokens(c.UserContext(), v.user.ID)
	if err != nil {
		return err
	}
	for _, t := range tokens {
		at := accountToken{ID: strconv.FormatInt(t.ID, 10), Label: t.Label, Prefix: t.Prefix, Created: utc(t.CreatedAt), LastUsed: "never"}
		if at.Label == "" {
			at.Label = "(no label)"
		}
		if t.LastUsedAt != nil {
			at.LastUsed = utc(*t.LastUsedAt)
		}
		if t.RevokedAt != nil {
			at.Revoked = utc(*t.RevokedAt)
		}
		d.Tokens = append(d.Tokens, at)
	}
	if d.Sections, err = m.accountSections(c); err != nil {
		return err
	}
	site.NoStore(c)
	return m.render(c, fiber.StatusOK, accountPage(m.layout(c, v, "Account", ""), d))
}

// signedInPost is the start of every account form: a session and its
// CSRF token.
func (m *Module) signedInPost(c *fiber.Ctx, v *visitor) error {
	if !v.signedIn() {
		return app.Unauthorized("sign in first")
	}
	return m.checkCSRF(c, v)
}

// createToken is POST /account/tokens: the page shows the new token once.
func (m *Module) createToken(c *fiber.Ctx, v *visitor) error {
	if err := m.signedInPost(c, v); err != nil {
		return err
	}
	plain, _, err := m.users.IssueToken(c.UserContext(), v.user.ID, c.FormValue("label"))
	if err != nil {
		return err
	}
	return m.renderAccount(c, v, plain, 0, "")
}

// setNotifications is POST /account/notifications (go_live_mail=1 or
// 0): the account's switch of go-live mails.
func (m *Module) setNotifications(c *fiber.Ctx, v *visitor) error {
	if err := m.signedInPost(c, v); err != nil {
		return err
	}
	if m.notify == nil {
		return app.NotFound("notifications")
	}
	on := c.FormValue("go_live_mail") == "1"
	if err := m.notify.SetAccountNotify(c.UserContext(), v.user.ID, on); err != nil {
		return err
	}
	return site.Redirect(c, "/account#listening")
}

// revokeToken is POST /account/tokens/:id/revoke.
func (m *Module) revokeToken(c *fiber.Ctx, v *visitor) error {
	if err := m.signedInPost(c, v); err != nil {
		return err
	}
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil {
		return app.NotFound("token")
	}
	if err := m.users.RevokeToken(c.UserContext(), v.user.ID, id); err != nil {
		if err == users.ErrNotFound {
			return app.NotFound("token")
		}
		return err
	}
	return site.Redirect(c, "/account")
}

// ownShow is a show of the signed-in visitor; anyone else's is a 404, staff
// included: keys are the owner's alone.
func (m *Module) ownShow(c *fiber.Ctx, v *visitor) (*shows.Show, error) {
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil || id < 1 {
		return nil, shows.ErrNotFound
	}
	sh, err := m.shows.Visible(c.UserContext(), id, v.p)
	if err != nil {
		return nil, err
	}
	if sh.UserID != v.user.ID {
		return nil, shows.ErrNotFound
	}
	return sh, nil
}

// revealKey is POST /account/shows/:id/key: the account page with that
// show's key shown.
func (m *Module) revealKey(c *fiber.Ctx, v *visitor) error {
	sh, err := m.keyShow(c, v, false)
	if err != nil {
		return err
	}
	return m.renderAccount(c, v, "", sh.ID, sh.StreamKey)
}

// keyShow is the show of a POST that shows its stream key (the account
// page and the studio): the signed-in owner's, with a new key when
// regenerate is set.
func (m *Module) keyShow(c *fiber.Ctx, v *visitor, regenerate bool) (*shows.Show, error) {
	if err := m.signedInPost(c, v); err != nil {
		return nil, err
	}
	sh, err := m.ownShow(c, v)
	if err != nil || !regenerate {
		return sh, err
	}
	return m.shows.Keys.Regenerate(c.UserContext(), sh.ID, v.p)
}

// regenerateKey is POST /account/shows/:id/key/regenerate: a new key,
// shown once on the page that answers.
func (m *Module) regenerateKey(c *fiber.Ctx, v *visitor) error {
	sh, err := m.keyShow(c, v, true)
	if err != nil {
		return err
	}
	return m.renderAccount(c, v, "", sh.ID, sh.StreamKey)
}
