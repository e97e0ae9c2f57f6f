package app

import (
	"context"
	"errors"

	"github.com/gofiber/fiber/v2"
)

// Accounts signs people in with an email and a password and keeps their
// browser sessions. Exactly one module (users) provides it; the console
// (admin) signs staff in through it, so the console imports no module. Boot
// finds it (Core.Accounts) before any module is provisioned, so its methods
// may only be called once the providing module is provisioned (from a
// handler, not from Provision).
type Accounts interface {
	// SignIn checks an email and a password sent from client address ip,
	// with the login throttle shared by every sign-in form (a 429 *Error
	// past it). A wrong pair is ErrWrongPassword, the right password of a
	// suspended account ErrSuspended.
	SignIn(ctx context.Context, email, password, ip string) (*Account, error)
	// WebSession returns the request's session (its cookie), or nil when
	// the browser is signed out, the session expired or its account is
	// suspended.
	WebSession(c *fiber.Ctx) (*WebSession, error)
	// StartWebSession signs the account in on this browser with a new
	// session id.
	StartWebSession(c *fiber.Ctx, accountID int64) error
	// EndWebSession signs this browser out (a missing session is no error).
	EndWebSession(c *fiber.Ctx) error
	// FindAccount finds an account by id or email; nil, nil when there is
	// none.
	FindAccount(ctx context.Context, idOrEmail string) (*Account, error)
	// AccountNames returns the names of the accounts of ids that exist.
	AccountNames(ctx context.Context, ids []int64) (map[int64]string, error)
}

// Account is what the kernel and the console know of a person who signs
// in.
type Account struct {
	ID   int64
	Name string
	// Role is the staff role: "", "moderator" or "admin".
	Role string
	// Principal is the account as authorization sees it (its roles).
	Principal *Principal
}

// WebSession is a signed-in browser: its account and the session's CSRF
// secret, which every form of the session sends back.
type WebSession struct {
	Account *Account
	CSRF    string
}

// Sign-in failures of Accounts.SignIn.
var (
	ErrWrongPassword = errors.New("wrong email or password")
	ErrSuspended     = errors.New("account suspended")
)
