package users

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/mail"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/uptrace/bun"
	"golang.org/x/crypto/bcrypt"

	"github.com/onair/onair/app"
	"github.com/onair/onair/app/events"
	"github.com/onair/onair/app/outbox"
	"github.com/onair/onair/internal/imaging"
	"github.com/onair/onair/internal/store"
)

// Service holds the users module's operations. Other modules (shows, chat,
// admin, pages) call it; handlers are thin over it.
type Service struct {
	db *bun.DB
	// reader reads the tokens (app.Core.ReadDB): on SQLite a request's
	// token check does not wait behind the writer's queue (300 shows
	// going live at once). db when the service has no read pool.
	reader *bun.DB
	// clock is the kernel's (Core.Clock) once the module provisioned;
	// a service of NewService alone reads the system's time.
	clock     *app.Clock
	publicURL string
	hintOut   io.Writer
	throttle  throttle // failed sign-ins (see SignIn)
	// resetMails and resetClients limit the reset mails per address and
	// per client address (mail.go); mail sends them, nil without SMTP.
	resetMails, resetClients throttle
	mail                     *mailer
	reserved                 func(slug string) bool
	store                    store.Store // uploaded profile images (images.go)
	maxImage                 int         // SettingImageMaxBytes
	// images decodes the uploads within SettingImageDecodeMB, one budget
	// for the process (the shows module's images go through it too).
	images *imaging.Decoder
	// signups counts sign-up attempts per client address (SignUp).
	signups     throttle
	signupLimit int

	// tokens caches Authenticate's answers (tokencache.go); nil: none.
	tokens *tokenCache

	// bus carries the module's events (events.go); nil outside a boot.
	bus *events.Bus
	// outbox keeps the durable events (Deleted) and relays them to the
	// other nodes: the boot's; nil outside a boot.
	outbox *outbox.Outbox
}

// NewService returns the users service over db; URLs are built on publicURL.
func NewService(db *bun.DB, publicURL string) *Service {
	return &Service{db: db, reader: db, publicURL: publicURL, hintOut: os.Stderr, throttle: newMemoryThrottle(LoginAttempts, LoginWindow),
		resetMails: newMemoryThrottle(ResetMailsPerAddress, ResetMailWindow), resetClients: newMemoryThrottle(ResetMailsPerClient, ResetMailWindow),
		reserved: new(app.Core).ReservedSlug, maxImage: DefaultImageMaxBytes, bus: events.NewBus(nil), clock: app.NewClock(nil),
		images: imaging.NewDecoder(DefaultImageDecodeMB<<20, imageDecodeWait)}
}

// now is the current time as rows keep it (Clock.Stamp).
func (s *Service) now() time.Time { return s.clock.Stamp() }

// DB is the database the service works on.
func (s *Service) DB() *bun.DB { return s.db }

// ErrNotFound is returned when a user or token does not exist.
var ErrNotFound = errors.New("users: not found")

// ErrSuspended is the sign-in of a suspended user with the right password.
var ErrSuspended = errors.New("users: suspended")

// NewUser is the input of Create.
type NewUser struct {
	Name, Email, Password string
	Location, Description *string
	DJ, Producer, Radio   bool
	Featured              bool
	Role                  string // "", "moderator" or "admin"
}

// Validate checks a NewUser against the limits of product-decisions.md.
func (n *NewUser) Validate() error {
	v := app.Validation{}
	n.Name = strings.TrimSpace(n.Name)
	n.Email = strings.TrimSpace(strings.ToLower(n.Email))
	// The first problem of a field is the one reported: the text rule
	// (app.TextProblem) before the lengths.
	for field, text := range map[string]*string{"name": &n.Name, "email": &n.Email, "location": n.Location, "description": n.Description} {
		if text != nil {
			p := app.TextProblem(*text)
			if field == "name" {
				p = app.NameProblem(*text)
			}
			if p != "" {
				v.Add(field, p)
			}
		}
	}
	switch l := utf8.RuneCountInString(n.Name); {
	case l == 0:
		v.Add("name", "is required")
	case l > 100:
		v.Add("name", "must be at most 100 characters")
	}
	if addr, err := mail.ParseAddress(n.Email); err != nil || addr.Address != n.Email || len(n.Email) > 191 {
		v.Add("email", "must be a valid email address")
	}
	if n.Password != "" && len(n.Password) < 8 {
		v.Add("password", "must be at least 8 characters")
	}
	if len(n.Password) > 72 {
		v.Add("password", "must be at most 72 bytes")
	}
	if n.Role != "" && n.Role != app.RoleAdmin && n.Role != app.RoleModerator {
		v.Add("role", "must be admin or moderator")
	}
	if n.Location != nil && utf8.RuneCountInString(*n.Location) > 100 {
		v.Add("location", "must be at most 100 characters")
	}
	if n.Description != nil && utf8.RuneCountInString(*n.Description) > 5000 {
		v.Add("description", "must be at most 5000 characters")
	}
	return v.Err()
}

// Create validates and stores a new user with a unique slug derived from
// the name. A taken email is a 422 on the email field.
func (s *Service) Create(ctx context.Context, n NewUser) (*User, error) {
	if err := n.Validate(); err != nil {
		return nil, err
	}
	taken, err := s.db.NewSelect().Model((*User)(nil)).Where("email = ?", n.Email).Exists(ctx)
	if err != nil {
		return nil, fmt.Errorf("users: create: %w", err)
	}
	if taken {
		return nil, app.Validation{"email": "is already registered"}.Err()
	}
	hash := ""
	if n.Password != "" {
		b, err := bcrypt.GenerateFromPassword([]byte(n.Password), bcrypt.DefaultCost)
		if err != nil {
			return nil, fmt.Errorf("users: hash password: %w", err)
		}
		hash = string(b)
	}
	now := s.now()
	u := &User{
		Name: n.Name, Email: n.Email, PasswordHash: hash,
		Location: n.Location, Description: n.Description,
		DJ: n.DJ, Producer: n.Producer, Radio: n.Radio, Featured: n.Featured, Role: n.Role,
		CreatedAt: now, UpdatedAt: now,
	}
	base := app.Slugify(n.Name, 100)
	if base == "" {
		base = "user"
	}
	// A concurrent sign-up can take the email or the slug between the
	// checks and the insert: the unique index refuses it, and the loser
	// gets the 422 or another slug (app.NextSlug), never a 500.
	for attempt := 0; ; attempt++ {
		slug, err := s.freeSlug(ctx, base, attempt)
		if err != nil {
			return nil, err
		}
		u.ID, u.Slug = 0, slug
		_, err = s.db.NewInsert().Model(u).Exec(ctx)
		if err == nil {
			return u, nil
		}
		if !(app.IsDuplicate(err) || app.IsDeadlock(err)) || attempt == app.SlugAttempts-1 {
			return nil, fmt.Errorf("users: create %s: %w", n.Email, err)
		}
		if taken, _ := s.db.NewSelect().Model((*User)(nil)).Where("email = ?", n.Email).Exists(ctx); taken {
			return nil, app.Validation{"email": "is already registered"}.Err()
		}
	}
}

// freeSlug picks a free, unreserved slug from base (see app.NextSlug) with
// one read of the slugs taken by base and its numbered forms.
func (s *Service) freeSlug(ctx context.Context, base string, attempt int) (string, error) {
	var taken []string
	err := s.db.NewSelect().Model((*User)(nil)).Column("slug").
		WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
			return q.Where("slug = ?", base).WhereOr("slug LIKE ? ESCAPE '!'", app.EscapeLike(base)+"-%")
		}).Scan(ctx, &taken)
	if err != nil {
		return "", fmt.Errorf("users: create: %w", err)
	}
	used := make(map[string]bool, len(taken))
	for _, t := range taken {
		used[t] = true
	}
	return app.NextSlug(base, func(slug string) bool { return used[slug] || s.ReservedSlug(slug) }, attempt), nil
}

// ReservedSlug tells whether slug is a path of the server rather than a
// free user slug. A user's page lives at /{slug}, so a user named "Admin"
// gets the slug "admin-2". The kernel derives the reserved names from the
// routes (app.Core.ReservedSlug); a service made with NewService alone
// knows only the kernel's own and the kept names, until ReserveFrom.
func (s *Service) ReservedSlug(slug string) bool { return s.reserved(slug) }

// ReserveFrom makes the service keep the slugs the booted core reserves.
func (s *Service) ReserveFrom(core *app.Core) { s.reserved = core.ReservedSlug }

// CheckPassword returns the user with that email when the password
// matches; ErrSuspended when it matches a suspended user's.
func (s *Service) CheckPassword(ctx context.Context, email, password string) (*User, error) {
	u := new(User)
	err := s.db.NewSelect().Model(u).Where("email = ?", strings.ToLower(strings.TrimSpace(email))).Scan(ctx)
	if err != nil || u.PasswordHash == "" {
		// Spend the same time as a real comparison so the answer does not
		// reveal which emails exist.
		_ = bcrypt.CompareHashAndPassword([]byte("$2a$10$7EqJtq98hPqEX7fNZaFWoOhi5BWX4Z2ZbFZZ8z5wZ0y3oQeQ6/6nK"), []byte(password))
		return nil, ErrNotFound
	}
	if bcrypt.CompareHashAndPassword([]byte(u.PasswordHash), []byte(password)) != nil {
		return nil, ErrNotFound
	}
	if u.SuspendedAt != nil {
		// Only the right password learns of the suspension.
		return nil, ErrSuspended
	}
	return u, nil
}

// Get returns a user by id.
func (s *Service) Get(ctx context.Context, id int64) (*User, error) {
	u := new(User)
	err := s.db.NewSelect().Model(u).Relation("Tags", orderTags).Where("u.id = ?", id).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("users: get %d: %w", id, err)
	}
	return u, nil
}

// Find returns a user by numeric id or by email.
func (s *Service) Find(ctx context.Context, idOrEmail string) (*User, error) {
	if id, err := strconv.ParseInt(idOrEmail, 10, 64); err == nil {
		return s.Get(ctx, id)
	}
	u := new(User)
	err := s.db.NewSelect().Model(u).Where("email = ?", strings.ToLower(strings.TrimSpace(idOrEmail))).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("users: find %s: %w", idOrEmail, err)
	}
	return u, nil
}

// ListQuery are the filters of GET /users (and of the console's lists).
type ListQuery struct {
	Filter string // name or slug contains
	Slug   string // exact slug
	Name   string // name contains
	// Search: name, slug or email contains (the console's search).
	Search string
	// Radio and RadioRequested filter on the radio approval and the
	// pending request (nil: either).
	Radio, RadioRequested *bool
	Page                  app.Page
}

// List returns a page of users, most followed first, and the total count.
func (s *Service) List(ctx context.Context, q ListQuery) ([]User, int, error) {
	var list []User
	if err := q.check(); err != nil {
		return nil, 0, err
	}
	sel := filterUsers(s.db.NewSelect().Model(&list).Relation("Tags", orderTags), q)
	count, err := sel.OrderExpr("u.followers_count DESC, u.id ASC").Limit(int64(q.Page.Size)).Offset(int64(q.Page.Offset())).ScanAndCount(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("users: list: %w", err)
	}
	return list, int(count), nil
}

// Count is the number of users List would return over all pages.
func (s *Service) Count(ctx context.Context, q ListQuery) (int, error) {
	if err := q.check(); err != nil {
		return 0, err
	}
	n, err := filterUsers(s.db.NewSelect().Model((*User)(nil)), q).Count(ctx)
	if err != nil {
		return 0, fmt.Errorf("users: count: %w", err)
	}
	return int(n), nil
}

// check applies the text rule (app.TextProblem) to the filters: a 400,
// whoever the caller.
func (q ListQuery) check() error {
	for _, f := range []struct{ name, v string }{{"filter", q.Filter}, {"slug", q.Slug}, {"name", q.Name}, {"search", q.Search}} {
		if p := app.TextProblem(f.v); p != "" {
			return app.BadRequest("%s %s", f.name, p)
		}
	}
	return nil
}

// orderTags sorts a relation of a user's tags in the order they were
// given, then (links older than the order) by their identity, byte for
// byte, so both databases answer them in one order.
func orderTags(q *bun.SelectQuery) *bun.SelectQuery {
	return q.OrderExpr("ut.position ASC, t.folded ASC")
}

// filterUsers adds the WHERE clauses of q.
func filterUsers(sel *bun.SelectQuery, q ListQuery) *bun.SelectQuery {
	if q.Search != "" {
		like := "%" + app.EscapeLike(strings.ToLower(strings.TrimSpace(q.Search))) + "%"
		sel.WhereGroup(" AND ", func(w *bun.SelectQuery) *bun.SelectQuery {
			return w.Where("LOWER(u.name) LIKE ? ESCAPE '!'", like).WhereOr("u.slug LIKE ? ESCAPE '!'", like).
				WhereOr("u.email LIKE ? ESCAPE '!'", like)
		})
	}
	if q.Radio != nil {
		sel.Where("u.radio = ?", *q.Radio)
	}
	if q.RadioRequested != nil {
		sel.Where("u.radio_requested = ?", *q.RadioRequested)
	}
	if q.Filter != "" {
		like := "%" + app.EscapeLike(strings.ToLower(q.Filter)) + "%"
		sel.WhereGroup(" AND ", func(w *bun.SelectQuery) *bun.SelectQuery {
			return w.Where("LOWER(u.name) LIKE ? ESCAPE '!'", like).WhereOr("u.slug LIKE ? ESCAPE '!'", like)
		})
	}
	if q.Slug != "" {
		if slug, ok := app.SlugQuery(q.Slug); ok {
			sel.Where("u.slug = ?", slug)
		} else {
			sel.Where("1 = 0")
		}
	}
	if q.Name != "" {
		sel.Where("LOWER(u.name) LIKE ? ESCAPE '!'", "%"+app.EscapeLike(strings.ToLower(q.Name))+"%")
	}
	return sel
}

// Follow makes follower follow followed; following twice is harmless.
// Following yourself is a 422; a follow of, or by, a user deleted
// meanwhile is a 404 and leaves no row.
//
// The follows table has no foreign keys (its columns are its key, of
// which bun's WithForeignKeys makes none), so the row's two users are
// held here, once it is in: a deletion that got to its follows first (it
// deletes them before anything else, deleteFollows) made the insert wait
// until it committed, and the users' rows are gone now; one that comes
// later waits for this row, then deletes it. A MySQL deadlock (a gap
// locked at the edge of a deletion's range) runs it again.
func (s *Service) Follow(ctx context.Context, follower, followed int64) error {
	if follower == followed {
		return app.Validation{"id": "you cannot follow yourself"}.Err()
	}
	// INSERT IGNORE / ON CONFLICT DO NOTHING rather than a read first, so
	// two concurrent follows (a double click) count once and neither fails.
	return s.events().RunInTx(ctx, s.db, 3, retryable, func(ctx context.Context, tx *events.Tx) error {
		f := &Follow{FollowerID: follower, FollowedID: followed, CreatedAt: s.now()}
		res, err := tx.NewInsert().Model(f).Ignore().Exec(ctx)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("users: follow: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil
		}
		// The two rows in id order, as a deletion's count update takes
		// the rows of the users it followed: two follows of each other at
		// once, or a follow beside such a deletion, wait rather than
		// deadlock.
		for _, id := range []int64{min(follower, followed), max(follower, followed)} {
			if id == follower {
				err = ShareLock(ctx, tx, follower)
			} else {
				err = countFollower(ctx, tx, followed)
			}
			if errors.Is(err, ErrNotFound) {
				return app.NotFound("user")
			}
			if err != nil {
				return fmt.Errorf("users: follow: %w", err)
			}
		}
		return events.Publish(ctx, tx, Followed, *f)
	})
}

// countFollower adds one to the user's followers_count; ErrNotFound when
// the user is gone.
func countFollower(ctx context.Context, tx bun.IDB, id int64) error {
	res, err := tx.NewUpdate().Model((*User)(nil)).Set("followers_count = followers_count + 1").Where("id = ?", id).Exec(ctx)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

// ShareLock reads the user's row in tx with a shared lock (on MySQL;
// SQLite's one writer holds the whole database): until tx ends the user
// cannot be deleted, and a deletion that held the row first has
// committed, so the user is gone (ErrNotFound). A module that writes a
// row of the user's without a foreign key (a follow, a favorite, a mail
// switch) calls it after the write, inside the write's transaction, so
// that the row never outlives the user.
func ShareLock(ctx context.Context, tx bun.IDB, id int64) error {
	q := "SELECT COUNT(*) FROM users WHERE id = ?"
	if app.IsMySQL(tx) {
		q += " LOCK IN SHARE MODE"
	}
	var n int
	if err := tx.NewRaw(q, id).Scan(ctx, &n); err != nil {
		return fmt.Errorf("users: lock %d: %w", id, err)
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}

// Unfollow undoes Follow; unfollowing someone not followed is harmless.
func (s *Service) Unfollow(ctx context.Context, follower, followed int64) error {
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		res, err := tx.NewDelete().Model((*Follow)(nil)).
			Where("follower_id = ? AND followed_id = ?", follower, followed).Exec(ctx)
		if err != nil {
			return fmt.Errorf("users: unfollow: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil
		}
		_, err = tx.NewUpdate().Model((*User)(nil)).Set("followers_count = followers_count - 1").
			Where("id = ? AND followers_count > 0", followed).Exec(ctx)
		return err
	})
}

// Update saves the given columns of u.
func (s *Service) Update(ctx context.Context, u *User, columns ...string) error {
	u.UpdatedAt = s.now()
	_, err := s.db.NewUpdate().Model(u).Column(append(columns, "updated_at")...).WherePK().Exec(ctx)
	if err != nil {
		return fmt.Errorf("users: update %d: %w", u.ID, err)
	}
	// Roles derive from the row: cached principals of the user go.
	s.tokens.invalidate(ctx, 0, u.ID)
	return nil
}

// TokenPrefix starts every token so leaked ones are easy to recognise.
const TokenPrefix = "onair_"

// IssueToken creates a new API token for the user and returns its plain
// text, which is shown once and never stored.
func (s *Service) IssueToken(ctx context.Context, userID int64, label string) (string, *Token, error) {
	if utf8.RuneCountInString(label) > 100 {
		return "", nil, app.Validation{"label": "must be at most 100 characters"}.Err()
	}
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return "", nil, fmt.Errorf("users: token randomness: %w", err)
	}
	plain := TokenPrefix + hex.EncodeToString(buf)
	t := &Token{UserID: userID, Label: label, Hash: hashToken(plain), Prefix: plain[:len(TokenPrefix)+6], CreatedAt: s.now()}
	if _, err := s.db.NewInsert().Model(t).Exec(ctx); err != nil {
		return "", nil, fmt.Errorf("users: issue token: %w", err)
	}
	return plain, t, nil
}

// Tokens lists a user's tokens, revoked ones included, newest first.
func (s *Service) Tokens(ctx context.Context, userID int64) ([]Token, error) {
	var list []Token
	err := s.db.NewSelect().Model(&list).Where("user_id = ?", userID).Order("id DESC").Scan(ctx)
	return list, err
}

// RevokeToken revokes a token of the user (userID 0: any user's, for staff).
func (s *Service) RevokeToken(ctx context.Context, userID, tokenID int64) error {
	q := s.db.NewUpdate().Model((*Token)(nil)).Set("revoked_at = ?", s.now()).
		Where("id = ? AND revoked_at IS NULL", tokenID)
	if userID != 0 {
		q.Where("user_id = ?", userID)
	}
	res, err := q.Exec(ctx)
	if err != nil {
		return fmt.Errorf("users: revoke token %d: %w", tokenID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	s.tokens.invalidate(ctx, tokenID, 0)
	return nil
}

func hashToken(plain string) string {
	sum := sha256.Sum256([]byte(plain))
	return hex.EncodeToString(sum[:])
}

// lastUsedEvery limits last_used_at writes to one a minute per token.
const lastUsedEvery = time.Minute

// lastUsedWait bounds the last_used_at write of a token lookup: it is
// bookkeeping, and a lookup that waited for a busy writer (SQLite's one
// connection behind a storm of go-live writes) would hold every request
// of the token with it.
const lastUsedWait = time.Second

// Authenticate resolves a Bearer token to its user's principal. An unknown
// or revoked token answers nil, nil (the kernel turns it into a 401).
func (s *Service) Authenticate(ctx context.Context, token string) (*app.Principal, error) {
	if !strings.HasPrefix(token, TokenPrefix) || len(token) > 200 {
		return nil, nil
	}
	// The token (at most 200 bytes, checked above) is hashed from a copy
	// on the stack: []byte(token) would allocate on every request.
	var buf [200]byte
	sum := sha256.Sum256(buf[:copy(buf[:], token)])
	if p := s.tokens.get(sum, time.Now()); p != nil {
		return p, nil
	}
	if !s.tokens.on() {
		return s.lookupToken(ctx, sum)
	}
	return s.tokens.share(ctx, sum, s.lookupToken)
}

// lookupToken reads the principal of a token hash from the database: nil
// for an unknown or revoked token or a suspended user.
func (s *Service) lookupToken(ctx context.Context, sum [sha256.Size]byte) (*app.Principal, error) {
	t := new(Token)
	err := s.reader.NewSelect().Model(t).Relation("User").
		Where("tk.hash = ?", hex.EncodeToString(sum[:])).Where("tk.revoked_at IS NULL").Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && t.User != nil && t.User.SuspendedAt != nil) {
		return nil, nil // a suspended user's tokens stop working (suspend.go)
	}
	if err != nil {
		return nil, fmt.Errorf("users: authenticate: %w", err)
	}
	now := s.now()
	if t.LastUsedAt == nil || now.Sub(*t.LastUsedAt) >= lastUsedEvery {
		// Bookkeeping only: a database that reads but cannot write now
		// (SQLite locked by another process, its writer busy past
		// lastUsedWait) does not refuse the token.
		wctx, cancel := context.WithTimeout(ctx, lastUsedWait)
		_, err := s.db.NewUpdate().Model((*Token)(nil)).Set("last_used_at = ?", now).Where("id = ?", t.ID).Exec(wctx)
		cancel()
		if err != nil {
			if !app.IsUnavailable(err) && !errors.Is(err, context.DeadlineExceeded) {
				return nil, fmt.Errorf("users: token last used: %w", err)
			}
		}
	}
	return PrincipalOf(t.User, t.ID), nil
}

// PrincipalOf derives the roles of a user.
func PrincipalOf(u *User, tokenID int64) *app.Principal {
	roles := []string{app.RoleUser}
	if u.Radio {
		roles = append(roles, app.RoleRadio)
	}
	if u.Role != "" {
		roles = append(roles, u.Role)
	}
	return &app.Principal{UserID: u.ID, TokenID: tokenID, Roles: roles}
}
