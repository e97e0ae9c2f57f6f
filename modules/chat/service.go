package chat

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
	"github.com/onair/onair/app/events"
	"github.com/onair/onair/modules/shows"
	"github.com/onair/onair/modules/users"
)

// Limits of product-decisions.md.
const (
	MaxMessageLength = 500
	PageSize         = 50
)

// Service is the chat module's operations: the REST handlers, the admin
// console and the public pages call it.
type Service struct {
	db     *bun.DB
	shows  *shows.Service
	users  *users.Service
	authz  *app.Authz
	rate   RateGate
	hub    *Hub
	public string
	// nowFunc is the kernel's clock (Core.Clock.Now).
	nowFunc func() time.Time
	// viewers issue the anonymous viewer cookie and derive each room's ids.
	viewers *viewerKeys

	// bus carries the Changed events: the boot's.
	bus *events.Bus
	log *slog.Logger
}

// Changed is the kernel topic (package app/events) of chat changes, seen
// from inside their transaction; SubscribeTx subscribes to it.
var Changed = events.NewTopic[TxEvent]("chat.changed")

// TxEvent is a chat change seen from inside its transaction: Type is
// EventChatCreated or EventChatDeleted, Message the row as written (on a
// post its User is loaded, without tags; on a delete it is not). Show is
// the show's row as the post read it, without its owner and tags (nil on
// a delete: read it on tx, Message.ShowID).
type TxEvent struct {
	Type    string
	Message *Message
	Show    *shows.Show
}

// SubscribeTx registers fn to run inside the transaction of every posted
// or deleted message, after the message's row changed; an error rolls the
// change back. The show's comments_count moves after the commit (count),
// so a subscriber reading the show sees it without this change.
// Modules subscribe in Provision (the webhooks module writes its
// deliveries there, so a message and its notifications commit together).
func (s *Service) SubscribeTx(fn func(ctx context.Context, tx bun.IDB, ev TxEvent) error) {
	events.SubscribeTx(s.bus, Changed, func(ctx context.Context, tx *events.Tx, ev TxEvent) error { return fn(ctx, tx, ev) })
}

// runTxHooks publishes ev to Changed's transaction subscribers inside
// etx, a Wrap of the change's transaction: the caller calls its Committed
// once the transaction committed, which runs what the subscribers left for
// then (the webhooks wake their workers).
func (s *Service) runTxHooks(ctx context.Context, etx *events.Tx, ev TxEvent) error {
	return events.PublishTx(ctx, etx, Changed, ev)
}

// tell publishes a committed post's or delete's event to the show's room
// while count moves its comments_count by delta, and returns when both
// are done. The update is a round trip (and a wait for the show's row
// behind the other posts) that the answer waits for and the delivery
// need not, and with Redis the publish is a round trip of its own: the
// request waits for the slower of the two, not for both in turn.
func (s *Service) tell(ctx context.Context, showID int64, ev Event, delta int) {
	atOnce(func() { s.hub.Publish(ctx, showID, ev) }, func() { s.count(ctx, showID, delta) })
}

// count moves the show's comments_count by delta once a post's or
// delete's transaction committed (tell), in a statement of its own,
// before the request answers. Every post
// of a show updates the show's one row, and InnoDB holds a row's lock to
// the end of its transaction: inside the message's transaction the lock
// spanned a round trip to this node (the update's answer, then the
// COMMIT), and on a busy machine the posts of a show queued behind one
// another for it (the 2026-11-29c chat benchmark: up to 2.8 s a POST). On
// its own the update holds the lock for MariaDB's own work only.
//
// The message is stored by then, so a failed update is logged, not
// returned: the poster must not send it again. A node that dies between
// the commit and the update leaves the count one short (docs/shows.md).
// The request's end (a deadline, the client gone) does not stop it.
func (s *Service) count(ctx context.Context, showID int64, delta int) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), countWait)
	defer cancel()
	if err := s.shows.AddComments(ctx, s.db, showID, delta); err != nil && !errors.Is(err, shows.ErrNotFound) {
		s.log.Error("chat: the show's comments_count was not moved", "show", showID, "by", delta, "err", err)
	}
}

// countWait bounds count's update: a database that does not answer
// within it leaves the count one short (logged).
const countWait = 10 * time.Second

// ErrNotFound is a missing (or deleted) message.
var ErrNotFound = errors.New("chat: message not found")

// ErrChatDisabled refuses a message to a show whose owner (or staff)
// turned its chat off (chat_enabled=false); its history stays readable.
var ErrChatDisabled = &app.Error{Status: http.StatusForbidden, Code: "chat_disabled", Message: "the chat of this show is off"}

// Post stores a message of the caller on a show the caller can see, and
// fans it out to the show's room. It enforces bans, the one-per-second rate
// (or the show's slow mode) and the length limit.
//
// Each statement and Redis command is a round trip that waits for a core
// on a busy node, so a post makes few and waits for fewer
// (TestPostRoundTrips pins them): the show's row alone and, at the same
// time, the author with their bans and the show's slow mode in one
// statement; the Redis rate gate; the transaction; then the Redis
// publish and the count's update at the same time. Nothing is cached: a
// ban or slow mode set on any node holds for the next post everywhere.
func (s *Service) Post(ctx context.Context, showID int64, by *app.Principal, body string) (*Message, error) {
	// The show's row and the author's are read at once (both); their
	// answers are then judged in the order a reader would expect: a show
	// not found before a banned author.
	var (
		sh        *shows.Show
		author    *author
		err       error
		authorErr error
	)
	s.both(func() { sh, err = s.shows.VisibleRow(ctx, showID, by) },
		func() { author, authorErr = s.poster(ctx, showID, by.UserID) })
	if err != nil {
		return nil, err
	}
	if sh.ChatDisabled {
		return nil, ErrChatDisabled
	}
	// The web pages' chat form reaches here without app.Input, so the
	// text rule is applied here as well.
	if p := app.TextProblem(body); p != "" {
		return nil, app.Validation{"message": p}.Err()
	}
	if n := utf8.RuneCountInString(body); n == 0 || strings.TrimSpace(body) == "" {
		return nil, app.Validation{"message": "is required"}.Err()
	} else if n > MaxMessageLength {
		return nil, app.Validation{"message": fmt.Sprintf("must be at most %d characters", MaxMessageLength)}.Err()
	}
	if authorErr != nil {
		return nil, authorErr
	}
	if author.Banned {
		return nil, app.Forbidden("you are banned from this chat")
	}
	window := time.Second
	if author.SlowMode > 0 {
		window = time.Duration(author.SlowMode) * time.Second
	}
	if ok, retry := s.rate.Allow(ctx, fmt.Sprintf("chat:%d:%d", sh.ID, by.UserID), window); !ok {
		return nil, app.TooManyRequests("one message per "+window.String()+" in this chat", max(1, int((retry+time.Second-1)/time.Second)))
	}
	now := s.nowFunc()
	m := &Message{ShowID: sh.ID, UserID: by.UserID, User: &author.User, Body: body, CreatedAt: now.UTC().Truncate(time.Second), Position: position(sh.Start, now)}
	var etx *events.Tx
	err = s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		etx = s.bus.Wrap(tx)
		if _, err := tx.NewInsert().Model(m).Exec(ctx); err != nil {
			return fmt.Errorf("chat: post on show %d: %w", sh.ID, err)
		}
		if err := s.runTxHooks(ctx, etx, TxEvent{Type: EventChatCreated, Message: m, Show: sh}); err != nil {
			return err
		}
		return etx.Flush(ctx)
	})
	if err != nil {
		return nil, err
	}
	etx.Committed(ctx)
	s.tell(ctx, sh.ID, Event{Type: EventChatCreated, Chat: s.View(m), Badge: Badge(m.User, sh.UserID)}, 1)
	return m, nil
}

// both runs a and b at once when the database is MySQL (each on a
// connection of its own, so the caller waits for the slower round trip
// rather than for the two in turn), and in turn on SQLite, whose one
// connection in this process would take them in turn anyway.
func (s *Service) both(a, b func()) {
	if !app.IsMySQL(s.db) {
		a()
		b()
		return
	}
	atOnce(a, b)
}

// atOnce runs a and b at the same time, b on a goroutine of its own, and
// returns when both are done. A panic in b is raised again in the
// caller's goroutine, where the request's recovery answers it, rather
// than in one whose panic would end the process.
func atOnce(a, b func()) {
	done := make(chan struct{})
	var panicked any
	go func() {
		defer close(done)
		defer func() { panicked = recover() }()
		b()
	}()
	a()
	<-done
	if panicked != nil {
		panic(panicked)
	}
}

// author is a poster's row (without tags: a chat message's author carries
// none) with what keeps them from posting on one show.
type author struct {
	users.User `bun:",extend"`
	// Banned: a ban on the show or on every chat.
	Banned bool `bun:"chat_banned,scanonly"`
	// SlowMode is the show's slow mode in seconds (0: off).
	SlowMode int `bun:"chat_slow_mode,scanonly"`
}

// poster reads the author of a post on showID with Banned and SlowMode in
// one statement.
func (s *Service) poster(ctx context.Context, showID, userID int64) (*author, error) {
	a := new(author)
	err := s.db.NewSelect().Model(a).ColumnExpr("?TableColumns").
		ColumnExpr("EXISTS (SELECT 1 FROM chat_bans AS b WHERE b.user_id = u.id AND b.show_id IN (0, ?)) AS chat_banned", showID).
		ColumnExpr("COALESCE((SELECT cs.slow_mode FROM chat_settings AS cs WHERE cs.show_id = ?), 0) AS chat_slow_mode", showID).
		Where("u.id = ?", userID).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("chat: author %d: %w", userID, users.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("chat: author %d: %w", userID, err)
	}
	return a, nil
}

// position is the offset of t from the show's start, in 10 µs units;
// zero before the start.
func position(start, t time.Time) int64 {
	d := t.Sub(start)
	if d < 0 {
		return 0
	}
	return d.Microseconds() / 10
}

// List returns a page of a visible show's messages, newest first.
func (s *Service) List(ctx context.Context, showID int64, viewer *app.Principal, page app.Page) ([]Message, int, error) {
	if _, err := s.shows.Visible(ctx, showID, viewer); err != nil {
		return nil, 0, err
	}
	var list []Message
	n, err := s.db.NewSelect().Model(&list).Relation("User").
		Where("m.show_id = ?", showID).Where("m.deleted_at IS NULL").
		OrderExpr("m.created_at DESC, m.id DESC").
		Limit(int64(page.Size)).Offset(int64(page.Offset())).ScanAndCount(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("chat: list show %d: %w", showID, err)
	}
	return list, int(n), nil
}

// Get returns one message of a visible show.
func (s *Service) Get(ctx context.Context, showID, id int64, viewer *app.Principal) (*Message, error) {
	if _, err := s.shows.Visible(ctx, showID, viewer); err != nil {
		return nil, err
	}
	m := new(Message)
	err := s.db.NewSelect().Model(m).Relation("User").
		Where("m.id = ? AND m.show_id = ?", id, showID).Where("m.deleted_at IS NULL").Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("chat: get %d: %w", id, err)
	}
	return m, nil
}

// Recent lists the newest messages across every show (the console's view).
func (s *Service) Recent(ctx context.Context, limit int) ([]Message, error) {
	var list []Message
	err := s.db.NewSelect().Model(&list).Relation("User").Where("m.deleted_at IS NULL").
		OrderExpr("m.id DESC").Limit(int64(limit)).Scan(ctx)
	return list, err
}

// Delete hides a message (moderation, or its author taking it back) and
// tells the room.
func (s *Service) Delete(ctx context.Context, id int64, by *app.Principal) (*Message, error) {
	m := new(Message)
	if err := s.db.NewSelect().Model(m).Where("id = ? AND deleted_at IS NULL", id).Scan(ctx); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, ErrNotFound
		}
		return nil, fmt.Errorf("chat: delete %d: %w", id, err)
	}
	var relations []string
	if by != nil && m.UserID == by.UserID {
		relations = append(relations, "author")
	}
	if host, err := s.hosts(ctx, m.ShowID, by); err != nil {
		return nil, err
	} else if host {
		relations = append(relations, "host")
	}
	if err := s.authz.Can(by, "chat", "delete", relations...); err != nil {
		return nil, err
	}
	now := s.stamp()
	m.DeletedAt, m.DeletedBy = &now, &by.UserID
	var etx *events.Tx
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		etx = s.bus.Wrap(tx)
		if _, err := tx.NewUpdate().Model(m).Column("deleted_at", "deleted_by").WherePK().Exec(ctx); err != nil {
			return fmt.Errorf("chat: delete %d: %w", id, err)
		}
		if err := s.runTxHooks(ctx, etx, TxEvent{Type: EventChatDeleted, Message: m}); err != nil {
			return err
		}
		return etx.Flush(ctx)
	})
	if err != nil {
		return nil, err
	}
	etx.Committed(ctx)
	s.tell(ctx, m.ShowID, Event{Type: EventChatDeleted, ID: m.ID}, -1)
	return m, nil
}

// Ban keeps a user out of a show's chat (showID 0: every chat).
func (s *Service) Ban(ctx context.Context, userID, showID int64, reason string, by *app.Principal) (*Ban, error) {
	var relations []string
	if host, err := s.hosts(ctx, showID, by); err != nil {
		return nil, err
	} else if host {
		relations = append(relations, "host")
	}
	if err := s.authz.Can(by, "chat", "ban", relations...); err != nil {
		return nil, err
	}
	if by != nil && by.UserID == userID {
		return nil, app.Validation{"user_id": "you cannot ban yourself"}.Err()
	}
	if p := app.TextProblem(reason); p != "" {
		return nil, app.Validation{"reason": p}.Err()
	}
	if banned, err := s.bannedExactly(ctx, userID, showID); err != nil || banned != nil {
		return banned, err
	}
	b := &Ban{UserID: userID, ShowID: showID, Reason: reason, CreatedBy: by.UserID, CreatedAt: s.stamp()}
	if _, err := s.db.NewInsert().Model(b).Exec(ctx); err != nil {
		return nil, fmt.Errorf("chat: ban %d: %w", userID, err)
	}
	return b, nil
}

// hosts tells whether by owns the show (0: no show, every chat): a host
// moderates their own show's chat (the Casbin relation "host").
func (s *Service) hosts(ctx context.Context, showID int64, by *app.Principal) (bool, error) {
	if showID == 0 || by == nil || by.UserID == 0 {
		return false, nil
	}
	sh, err := s.shows.Get(ctx, showID)
	if errors.Is(err, shows.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return sh.UserID == by.UserID, nil
}

// Badge is what a message's author is in the room: "host" (the show's
// owner), "staff" (admin or moderator), or "".
func Badge(u *users.User, ownerID int64) string {
	switch {
	case u == nil:
		return ""
	case u.ID == ownerID:
		return "host"
	case u.Role != "":
		return "staff"
	}
	return ""
}

// Unban lifts a ban of the user on that show (showID 0: the global ban).
func (s *Service) Unban(ctx context.Context, userID, showID int64, by *app.Principal) error {
	if err := s.authz.Can(by, "chat", "ban"); err != nil {
		return err
	}
	_, err := s.db.NewDelete().Model((*Ban)(nil)).Where("user_id = ? AND show_id = ?", userID, showID).Exec(ctx)
	return err
}

// Bans lists the bans, newest first.
func (s *Service) Bans(ctx context.Context) ([]Ban, error) {
	var list []Ban
	err := s.db.NewSelect().Model(&list).Order("id DESC").Limit(500).Scan(ctx)
	return list, err
}

func (s *Service) bannedExactly(ctx context.Context, userID, showID int64) (*Ban, error) {
	b := new(Ban)
	err := s.db.NewSelect().Model(b).Where("user_id = ? AND show_id = ?", userID, showID).Limit(1).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return b, err
}

// Banned tells whether the user may not post in the show's chat.
func (s *Service) Banned(ctx context.Context, showID, userID int64) (bool, error) {
	ok, err := s.db.NewSelect().Model((*Ban)(nil)).
		Where("user_id = ? AND show_id IN (0, ?)", userID, showID).Exists(ctx)
	if err != nil {
		return false, fmt.Errorf("chat: banned: %w", err)
	}
	return ok, nil
}

// SlowMode is the show's slow mode in seconds (0: off).
func (s *Service) SlowMode(ctx context.Context, showID int64) (int, error) {
	st := new(Settings)
	err := s.db.NewSelect().Model(st).Where("show_id = ?", showID).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("chat: slow mode: %w", err)
	}
	return st.SlowMode, nil
}

// SetSlowMode sets a show's slow mode (0 turns it off; at most an hour).
func (s *Service) SetSlowMode(ctx context.Context, showID int64, seconds int, by *app.Principal) error {
	if err := s.authz.Can(by, "chat", "slow_mode"); err != nil {
		return err
	}
	if seconds < 0 || seconds > 3600 {
		return app.Validation{"slow_mode": "must be between 0 and 3600 seconds"}.Err()
	}
	if _, err := s.shows.Get(ctx, showID); err != nil {
		return err
	}
	st := &Settings{ShowID: showID, SlowMode: seconds, UpdatedAt: s.stamp()}
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewDelete().Model((*Settings)(nil)).Where("show_id = ?", showID).Exec(ctx); err != nil {
			return err
		}
		_, err := tx.NewInsert().Model(st).Exec(ctx)
		return err
	})
}

// deleteShow removes every message, ban and setting of a deleted show.
func (s *Service) deleteShow(ctx context.Context, showID int64) error {
	for _, model := range []any{(*Message)(nil), (*Ban)(nil), (*Settings)(nil)} {
		if _, err := s.db.NewDelete().Model(model).Where("show_id = ?", showID).Exec(ctx); err != nil {
			return fmt.Errorf("chat: delete show %d: %w", showID, err)
		}
	}
	return nil
}

// stamp is the current time as rows keep it, in whole seconds
// (app.Clock.Stamp).
func (s *Service) stamp() time.Time { return s.nowFunc().UTC().Truncate(time.Second) }
