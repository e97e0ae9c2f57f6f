package users

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/csrf"
)

// SessionCookie is the name of the web session cookie (pages and console).
const SessionCookie = "onair_session"

// SessionLifetime is how long a web session lasts without activity.
const SessionLifetime = 30 * 24 * time.Hour

// Session is a signed-in browser. Only the hash of its cookie value is
// stored. CSRF is the session's form token (internal/csrf): every form and
// script of the signed-in browser sends it back, and no other session's
// token is accepted.
type Session struct {
	bun.BaseModel `bun:"table:sessions,alias:sess"`

	ID        int64     `bun:"id,pk,autoincrement"`
	Hash      string    `bun:"hash,notnull,unique,type:char(64)"`
	UserID    int64     `bun:"user_id,notnull"`
	User      *User     `bun:"rel:belongs-to,join:user_id=id,on_delete:CASCADE"`
	CSRF      string    `bun:"csrf,notnull,type:char(64)"`
	CreatedAt time.Time `bun:"created_at,notnull"`
	ExpiresAt time.Time `bun:"expires_at,notnull"`
}

// StartSession signs a user in: it stores a new session and sets the
// HttpOnly, SameSite=Lax cookie (Secure when the public URL is https).
func (s *Service) StartSession(c *fiber.Ctx, userID int64) (*Session, error) {
	raw, err := randomHex(32)
	if err != nil {
		return nil, err
	}
	secret, err := csrf.NewSecret()
	if err != nil {
		return nil, err
	}
	now := s.now()
	sess := &Session{Hash: hashToken(raw), UserID: userID, CSRF: secret, CreatedAt: now, ExpiresAt: now.Add(SessionLifetime)}
	if _, err := s.db.NewInsert().Model(sess).Exec(c.UserContext()); err != nil {
		return nil, fmt.Errorf("users: start session: %w", err)
	}
	c.Cookie(&fiber.Cookie{
		Name: SessionCookie, Value: raw, Path: "/", HTTPOnly: true, SameSite: fiber.CookieSameSiteLaxMode,
		Secure: len(s.publicURL) > 5 && s.publicURL[:5] == "https", Expires: sess.ExpiresAt,
	})
	return sess, nil
}

// Session returns the live session of the request's cookie, with its user.
func (s *Service) Session(c *fiber.Ctx) (*Session, error) {
	raw := c.Cookies(SessionCookie)
	if raw == "" || len(raw) > 128 {
		return nil, nil
	}
	sess := new(Session)
	err := s.db.NewSelect().Model(sess).Relation("User").
		Where("sess.hash = ?", hashToken(raw)).Where("sess.expires_at > ?", s.now()).Scan(c.UserContext())
	if errors.Is(err, sql.ErrNoRows) || (err == nil && sess.User != nil && sess.User.SuspendedAt != nil) {
		return nil, nil // a suspended user is signed out everywhere (suspend.go)
	}
	if err != nil {
		return nil, fmt.Errorf("users: session: %w", err)
	}
	return sess, nil
}

// EndSession signs the browser out.
func (s *Service) EndSession(c *fiber.Ctx) error {
	if raw := c.Cookies(SessionCookie); raw != "" {
		if _, err := s.db.NewDelete().Model((*Session)(nil)).Where("hash = ?", hashToken(raw)).Exec(c.UserContext()); err != nil {
			return fmt.Errorf("users: end session: %w", err)
		}
	}
	// Expire the cookie with the attributes it was set with: a bare
	// deletion would carry the request's path and miss it.
	c.Cookie(&fiber.Cookie{
		Name: SessionCookie, Path: "/", HTTPOnly: true, SameSite: fiber.CookieSameSiteLaxMode,
		Secure: len(s.publicURL) > 5 && s.publicURL[:5] == "https", Expires: time.Unix(1, 0),
	})
	return nil
}

// PurgeSessions deletes expired sessions.
func (s *Service) PurgeSessions(ctx context.Context) error {
	_, err := s.db.NewDelete().Model((*Session)(nil)).Where("expires_at <= ?", s.now()).Exec(ctx)
	return err
}

// SessionPrincipal is the kernel's SessionReader: the chat's web socket and
// the pages use it to know the signed-in user.
func (m *Module) SessionPrincipal(c *fiber.Ctx) (*app.Principal, error) {
	sess, err := m.Service.Session(c)
	if err != nil || sess == nil {
		return nil, err
	}
	return PrincipalOf(sess.User, 0), nil
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("users: randomness: %w", err)
	}
	return hex.EncodeToString(b), nil
}
