package notify

import (
	"context"
	"errors"
	"fmt"
	"html/template"

	"github.com/gofiber/fiber/v2"
	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
	"github.com/onair/onair/modules/users"
)

type handlers struct{ m *Module }

// FollowView is a follow as GET and PUT /v1/users/:id/follow answer it.
type FollowView struct {
	UserID int64 `json:"user_id"`
	Notify bool  `json:"notify"`
}

// follow resolves :id to a user the caller follows; 404 when the user
// does not exist or is not followed.
func (h *handlers) follow(c *fiber.Ctx) (follower, followed int64, err error) {
	id, err := users.UserIDParam(c, "id")
	if err != nil {
		return 0, 0, err
	}
	ctx := c.UserContext()
	if _, err := h.m.users.Get(ctx, id); errors.Is(err, users.ErrNotFound) {
		return 0, 0, app.NotFound("user")
	} else if err != nil {
		return 0, 0, err
	}
	me := app.CurrentPrincipal(c).UserID
	ok, err := h.m.core.DB.NewSelect().Model((*users.Follow)(nil)).Where("follower_id = ? AND followed_id = ?", me, id).Exists(ctx)
	if err != nil {
		return 0, 0, err
	}
	if !ok {
		return 0, 0, app.NotFound("follow")
	}
	return me, id, nil
}

// getFollow is GET /v1/users/:id/follow: whether the caller's follow of
// the user mails them when the user goes live.
func (h *handlers) getFollow(c *fiber.Ctx) error {
	follower, followed, err := h.follow(c)
	if err != nil {
		return err
	}
	return h.answerFollow(c, follower, followed)
}

// putFollow is PUT /v1/users/:id/follow {"notify": false}: the follow's
// switch of go-live mails.
func (h *handlers) putFollow(c *fiber.Ctx) error {
	in, err := app.ReadInput(c)
	if err != nil {
		return err
	}
	notify, ok, err := in.Bool("notify")
	if err != nil {
		return err
	}
	if !ok {
		return app.Validation{"notify": "is required"}.Err()
	}
	follower, followed, err := h.follow(c)
	if err != nil {
		return err
	}
	if err := h.m.SetFollowNotify(c.UserContext(), follower, followed, notify); err != nil {
		return err
	}
	return h.answerFollow(c, follower, followed)
}

func (h *handlers) answerFollow(c *fiber.Ctx, follower, followed int64) error {
	muted, err := h.m.core.DB.NewSelect().Model((*Mute)(nil)).Where("follower_id = ? AND followed_id = ?", follower, followed).Exists(c.UserContext())
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"follow": FollowView{UserID: followed, Notify: !muted}})
}

// AccountView is the account's switch as /v1/notifications answers it.
type AccountView struct {
	GoLiveMail bool `json:"go_live_mail"`
}

// getAccount is GET /v1/notifications.
func (h *handlers) getAccount(c *fiber.Ctx) error {
	on, err := h.m.AccountNotify(c.UserContext(), app.CurrentPrincipal(c).UserID)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"notifications": AccountView{GoLiveMail: on}})
}

// putAccount is PUT /v1/notifications {"go_live_mail": false}.
func (h *handlers) putAccount(c *fiber.Ctx) error {
	in, err := app.ReadInput(c)
	if err != nil {
		return err
	}
	on, ok, err := in.Bool("go_live_mail")
	if err != nil {
		return err
	}
	if !ok {
		return app.Validation{"go_live_mail": "is required"}.Err()
	}
	me := app.CurrentPrincipal(c).UserID
	if err := h.m.SetAccountNotify(c.UserContext(), me, on); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"notifications": AccountView{GoLiveMail: on}})
}

// SetFollowNotify turns the go-live mails of one follow on or off.
// Turning them off for a follow of, or by, a user deleted meanwhile is a
// 404 and leaves no mute (see mute).
func (m *Module) SetFollowNotify(ctx context.Context, follower, followed int64, on bool) error {
	if on {
		_, err := m.core.DB.NewDelete().Model((*Mute)(nil)).Where("follower_id = ? AND followed_id = ?", follower, followed).Exec(ctx)
		return err
	}
	row := &Mute{FollowerID: follower, FollowedID: followed, CreatedAt: m.core.Clock.Stamp()}
	return m.mute(ctx, row, min(follower, followed), max(follower, followed))
}

// AccountNotify tells whether the user's account takes go-live mails.
func (m *Module) AccountNotify(ctx context.Context, userID int64) (bool, error) {
	off, err := m.core.DB.NewSelect().Model((*AccountMute)(nil)).Where("user_id = ?", userID).Exists(ctx)
	return !off, err
}

// SetAccountNotify turns every go-live mail of the user on or off.
// Turning them off for a user deleted meanwhile is a 404 and leaves no
// row (see mute).
func (m *Module) SetAccountNotify(ctx context.Context, userID int64, on bool) error {
	if on {
		_, err := m.core.DB.NewDelete().Model((*AccountMute)(nil)).Where("user_id = ?", userID).Exec(ctx)
		return err
	}
	return m.mute(ctx, &AccountMute{UserID: userID, CreatedAt: m.core.Clock.Stamp()}, userID)
}

// mute inserts row, a Mute or an AccountMute, unless it is there already,
// and then holds the rows of its users (users.ShareLock), given in id
// order as Follow takes them: a user gone is a 404 and a rollback.
//
// Neither table has foreign keys (their columns are their key, of which
// bun's WithForeignKeys makes none). A user's deletion deletes the user's
// switches (forgetUser, a Deleted handler) before the user's row goes,
// and on MySQL those statements lock the user's ranges of them, gaps
// included: an insert that comes later waits until the deletion commits,
// then finds the user gone here; one that came first holds its row until
// it commits, and the deletion waits for it, then deletes it. No step of
// a deletion before its last (deleteRow) writes a row of users, so the
// two wait for each other, never in a cycle. A MySQL deadlock (a gap
// locked at the edge of a deletion's range; a new follow of the same
// users, which holds their rows and then deletes the mute) runs it again.
func (m *Module) mute(ctx context.Context, row any, userIDs ...int64) error {
	return app.RunInTxRetry(ctx, m.core.DB, 3, func(ctx context.Context, tx bun.Tx, _ int) error {
		res, err := tx.NewInsert().Model(row).Ignore().Exec(ctx)
		if err != nil {
			return fmt.Errorf("notify: mute: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil
		}
		for _, id := range userIDs {
			err := users.ShareLock(ctx, tx, id)
			if errors.Is(err, users.ErrNotFound) {
				return app.NotFound("user")
			}
			if err != nil {
				return fmt.Errorf("notify: mute: %w", err)
			}
		}
		return nil
	})
}

var unsubscribePage = template.Must(template.New("unsubscribe").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex"><title>Go-live mails · OnAir</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem}button{font:inherit;padding:.5rem 1rem}</style>
</head><body>
{{if .Done}}<h1>Unsubscribed</h1>
<p>You will no longer get a mail when {{.DJ}} goes live. You still follow {{.DJ}}; turn the mails back on from their page or the API.</p>
{{else}}<h1>Stop go-live mails?</h1>
<p>You get a mail each time {{.DJ}} goes live on OnAir.</p>
<form method="post"><input type="hidden" name="List-Unsubscribe" value="One-Click"><button type="submit">Stop mails about {{.DJ}}</button></form>
{{end}}<p><a href="{{.Account}}">Your account</a></p>
</body></html>`))

// unsubscribePage is GET /unsubscribe/:token: a page with the button that
// POSTs the unsubscribe (a GET never changes anything: mail scanners open
// links).
func (m *Module) unsubscribePage(c *fiber.Ctx) error {
	return m.answerUnsubscribe(c, false)
}

// unsubscribe is POST /unsubscribe/:token, the RFC 8058 one-click
// endpoint (List-Unsubscribe=One-Click in the body, no session, no CSRF
// token: the signed link is the credential): it turns off the follow's
// go-live mails.
func (m *Module) unsubscribe(c *fiber.Ctx) error {
	return m.answerUnsubscribe(c, true)
}

func (m *Module) answerUnsubscribe(c *fiber.Ctx, do bool) error {
	follower, followed, ok := m.signer.parse(c.Params("token"))
	if !ok {
		return app.NotFound("unsubscribe link")
	}
	ctx := c.UserContext()
	// The link of a follow of or by a user deleted since is dead; a
	// deletion that commits meanwhile makes SetFollowNotify a 404.
	if _, err := m.users.Get(ctx, follower); errors.Is(err, users.ErrNotFound) {
		return app.NotFound("unsubscribe link")
	} else if err != nil {
		return err
	}
	dj, err := m.users.Get(ctx, followed)
	if errors.Is(err, users.ErrNotFound) {
		return app.NotFound("unsubscribe link")
	}
	if err != nil {
		return err
	}
	if do {
		if err := m.SetFollowNotify(ctx, follower, followed, false); err != nil {
			return err
		}
	}
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	c.Set(fiber.HeaderCacheControl, "no-store")
	return unsubscribePage.Execute(c.Response().BodyWriter(), map[string]any{
		"Done": do, "DJ": dj.Name, "Account": m.core.Config.PublicURL + "/account",
	})
}

// Mails tells whether go-live mails are sent (ONAIR_SMTP_URL is set).
func (m *Module) Mails() bool { return m.mail }
