package webhooks

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
	"github.com/onair/onair/app/events"

	"github.com/onair/onair/modules/chat"
	"github.com/onair/onair/modules/shows"
	"github.com/onair/onair/modules/users"
)

// Event names a webhook may subscribe to, in the order docs/webhooks.md
// lists them.
var Events = []string{
	"show.created", "show.updated", "show.live", "show.resumed", "show.stopped",
	"show.archived", "show.deleted", "show.off",
	"chat.message.created", "chat.message.deleted",
	"user.followed",
	"ping",
}

func knownEvent(name string) bool {
	for _, e := range Events {
		if e == name {
			return true
		}
	}
	return false
}

// Body is the JSON body of every delivery.
type Body struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	Timestamp string `json:"timestamp"`
	Data      any    `json:"data"`
}

var eventIDEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// newEventID is "evt_" and 26 base32 characters of 128 random bits.
func newEventID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "evt_" + strings.ToLower(eventIDEncoding.EncodeToString(b))
}

// subscribe hooks the module into the transactions of shows, chat and
// follows: deliveries commit with the change that causes them.
func (m *Module) subscribe(bus *events.Bus) {
	m.shows.SubscribeTx(m.onShow)
	// The commit is when this node's new deliveries become visible to its
	// workers: wake them then rather than at the next poll.
	m.shows.Subscribe(func(_ context.Context, ev shows.Event) {
		if !ev.Remote {
			m.Wake()
		}
	})
	m.chat.SubscribeTx(m.onChat)
	events.SubscribeTx(bus, users.Followed, func(ctx context.Context, tx *events.Tx, f users.Follow) error {
		return m.onFollow(ctx, tx, f.FollowerID, f.FollowedID)
	})
}

// onShow writes the deliveries of a show event inside the change's
// transaction.
func (m *Module) onShow(ctx context.Context, tx bun.IDB, ev shows.Event) error {
	if ev.Show == nil {
		return nil
	}
	typ := "show." + ev.Type
	if !knownEvent(typ) {
		return nil
	}
	sh := ev.Show
	if sh.User == nil {
		// The view embeds the owner.
		loaded, err := m.loadShow(ctx, tx, sh.ID)
		if err == nil {
			sh = loaded
		}
	}
	data := map[string]any{"show": m.shows.View(sh, false)}
	return m.enqueue(ctx, tx, typ, sh.UserID, sh.Private, sh.ID, data)
}

// onChat writes the deliveries of a posted or deleted message.
func (m *Module) onChat(ctx context.Context, tx bun.IDB, ev chat.TxEvent) error {
	typ := "chat.message.created"
	if ev.Type == chat.EventChatDeleted {
		typ = "chat.message.deleted"
	}
	// Most messages have nobody to tell: ask first whether any webhook
	// may want the event, in one statement, and load the show and the
	// author only when one does.
	if wanted, err := m.mayWant(ctx, tx, typ, ev.Message.ShowID); err != nil || !wanted {
		return err
	}
	return m.writeChat(ctx, tx, typ, ev)
}

// writeChat writes the deliveries of a posted or deleted message, of
// type typ, on tx.
func (m *Module) writeChat(ctx context.Context, tx bun.IDB, typ string, ev chat.TxEvent) error {
	sh, err := m.loadShow(ctx, tx, ev.Message.ShowID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil // the show is gone: nobody to tell
	}
	if err != nil {
		return err
	}
	// The chat moves the show's comments_count once the message's
	// transaction committed (chat.Service.count): the payload's show
	// carries the count with this message.
	if ev.Type == chat.EventChatDeleted {
		sh.CommentsCount = max(0, sh.CommentsCount-1)
	} else {
		sh.CommentsCount++
	}
	msg := *ev.Message
	if msg.User == nil {
		u := new(users.User)
		if err := tx.NewSelect().Model(u).Where("id = ?", msg.UserID).Scan(ctx); err != nil {
			return fmt.Errorf("webhooks: chat author %d: %w", msg.UserID, err)
		}
		msg.User = u
	}
	data := map[string]any{"show": m.shows.View(sh, false), "chat": m.chat.View(&msg)}
	return m.enqueue(ctx, tx, typ, sh.UserID, sh.Private, sh.ID, data)
}

// mayWant tells whether an active webhook that could be sent the show's
// event typ wants it: one of the show owner's, or a staff one of scope
// "all" (enqueue then applies the rule of private shows).
func (m *Module) mayWant(ctx context.Context, tx bun.IDB, typ string, showID int64) (bool, error) {
	var hooks []Webhook
	err := tx.NewSelect().Model(&hooks).Where("active = ?", true).
		WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
			return q.Where("scope = ?", ScopeAll).
				WhereOr("user_id = (SELECT s.user_id FROM shows AS s WHERE s.id = ?)", showID)
		}).Scan(ctx)
	if err != nil {
		return false, fmt.Errorf("webhooks: enqueue %s: %w", typ, err)
	}
	for i := range hooks {
		if hooks[i].Wants(typ) {
			return true, nil
		}
	}
	return false, nil
}

// onFollow writes the deliveries of a new follower of a user.
func (m *Module) onFollow(ctx context.Context, tx bun.IDB, follower, followed int64) error {
	var list []users.User
	if err := tx.NewSelect().Model(&list).Where("id IN (?)", bun.List([]int64{follower, followed})).Scan(ctx); err != nil {
		return fmt.Errorf("webhooks: follow: %w", err)
	}
	var who, whom *users.User
	for i := range list {
		if list[i].ID == follower {
			who = &list[i]
		}
		if list[i].ID == followed {
			whom = &list[i]
		}
	}
	if who == nil || whom == nil {
		return nil
	}
	data := map[string]any{
		"user":     users.NewView(m.public, whom, users.ForUserRead),
		"follower": users.NewView(m.public, who, users.ForUserRead),
	}
	return m.enqueue(ctx, tx, "user.followed", followed, true, 0, data)
}

// loadShow reads a show with its owner and tags on tx.
func (m *Module) loadShow(ctx context.Context, tx bun.IDB, id int64) (*shows.Show, error) {
	sh := new(shows.Show)
	err := tx.NewSelect().Model(sh).Relation("User").
		Relation("Tags", func(q *bun.SelectQuery) *bun.SelectQuery { return q.OrderExpr("t.folded ASC") }).
		Where("s.id = ?", id).Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("webhooks: show %d: %w", id, err)
	}
	sh.SortTags()
	return sh, nil
}

// enqueue writes one delivery per interested webhook, on tx: the owner's
// webhooks subscribed to typ, and the staff webhooks of scope "all" unless
// ownerOnly (a private show is only its owner's business, and so is a new
// follower).
func (m *Module) enqueue(ctx context.Context, tx bun.IDB, typ string, ownerID int64, ownerOnly bool, showID int64, data any) error {
	var hooks []Webhook
	q := tx.NewSelect().Model(&hooks).Where("active = ?", true)
	if ownerOnly {
		q = q.Where("user_id = ?", ownerID)
	} else {
		q = q.WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
			return q.Where("user_id = ?", ownerID).WhereOr("scope = ?", ScopeAll)
		})
	}
	if err := q.Scan(ctx); err != nil {
		return fmt.Errorf("webhooks: enqueue %s: %w", typ, err)
	}
	var rows []Delivery
	now := m.now()
	id := newEventID()
	var payload []byte
	for i := range hooks {
		if !hooks[i].Wants(typ) {
			continue
		}
		if payload == nil {
			var err error
			payload, err = json.Marshal(Body{ID: id, Type: typ, Timestamp: now.Format(time.RFC3339), Data: data})
			if err != nil {
				return fmt.Errorf("webhooks: encode %s: %w", typ, err)
			}
		}
		rows = append(rows, Delivery{
			WebhookID: hooks[i].ID, EventID: id, Type: typ, ShowID: showID, Payload: string(payload),
			Status: StatusPending, NextAttemptAt: &now, CreatedAt: now, UpdatedAt: now,
		})
	}
	if len(rows) == 0 {
		return nil
	}
	if _, err := tx.NewInsert().Model(&rows).Exec(ctx); err != nil {
		return fmt.Errorf("webhooks: enqueue %s: %w", typ, err)
	}
	// The rows are visible to the workers once the change commits: wake
	// them then (chat, follows; a show change's commit wakes them in
	// subscribe), as the workers no longer poll each second.
	if etx, ok := tx.(*events.Tx); ok {
		etx.AfterCommit(func(context.Context) { m.Wake() })
	}
	m.Wake()
	return nil
}

// enqueuePing writes a ping delivery to one webhook.
func (m *Module) enqueuePing(ctx context.Context, w *Webhook) (*Delivery, error) {
	now := m.now()
	id := newEventID()
	payload, err := json.Marshal(Body{ID: id, Type: "ping", Timestamp: now.Format(time.RFC3339),
		Data: map[string]any{"webhook": map[string]any{"id": w.ID, "url": w.URL}}})
	if err != nil {
		return nil, err
	}
	d := &Delivery{WebhookID: w.ID, EventID: id, Type: "ping", Payload: string(payload), Status: StatusPending,
		NextAttemptAt: &now, CreatedAt: now, UpdatedAt: now}
	err = app.RunInTxRetry(ctx, m.db, 3, func(ctx context.Context, tx bun.Tx, _ int) error {
		d.ID = 0
		_, err := tx.NewInsert().Model(d).Exec(ctx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("webhooks: ping %d: %w", w.ID, err)
	}
	m.Wake()
	return d, nil
}
