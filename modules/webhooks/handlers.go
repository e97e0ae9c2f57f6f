package webhooks

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
	"github.com/onair/onair/modules/users"
)

var errSQLNoRows = sql.ErrNoRows

// Scopes of a webhook.
const (
	ScopeOwn = "own"
	ScopeAll = "all"
)

// Limits of the resource.
const (
	MaxPerUser     = 20
	MaxURL         = 2000
	MaxDescription = 500
	PageSize       = 20
	// OldSecretFor is how long the previous secret keeps signing after a
	// rotation.
	OldSecretFor = 24 * time.Hour
)

// ErrNotFound is a missing webhook, or another user's.
var ErrNotFound = app.NotFound("webhook")

// View is the API form of a Webhook. Secret appears only in the answers of
// create and rotate.
type View struct {
	ID             int64          `json:"id"`
	ObjectURL      string         `json:"object_url"`
	URL            string         `json:"url"`
	Events         []string       `json:"events"`
	Description    string         `json:"description"`
	Scope          string         `json:"scope"`
	Active         bool           `json:"active"`
	DisabledReason *string        `json:"disabled_reason"`
	FailingSince   *app.Timestamp `json:"failing_since"`
	CreatedAt      app.Timestamp  `json:"created_at"`
	UpdatedAt      app.Timestamp  `json:"updated_at"`
	Secret         *string        `json:"secret,omitempty"`
}

func (m *Module) view(w *Webhook, withSecret bool) *View {
	v := &View{
		ID: w.ID, ObjectURL: fmt.Sprintf("%s/v1/webhooks/%d", m.public, w.ID), URL: w.URL,
		Events: w.EventList(), Description: w.Description, Scope: w.Scope, Active: w.Active,
		CreatedAt: app.Timestamp(w.CreatedAt), UpdatedAt: app.Timestamp(w.UpdatedAt),
	}
	if w.DisabledReason != "" {
		r := w.DisabledReason
		v.DisabledReason = &r
	}
	if w.FailingSince != nil {
		t := app.Timestamp(*w.FailingSince)
		v.FailingSince = &t
	}
	if withSecret {
		s := w.Secret
		v.Secret = &s
	}
	return v
}

// checkURL is the rule of a webhook URL; "" when it is fine.
func checkURL(raw string) string {
	if raw == "" {
		return "is required"
	}
	if len(raw) > MaxURL {
		return fmt.Sprintf("must be at most %d characters", MaxURL)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" {
		return "must be an absolute http or https URL"
	}
	switch {
	case u.Scheme != "https" && u.Scheme != "http":
		return "must be an absolute http or https URL"
	case u.Host == "" || u.Hostname() == "":
		return "must name a host"
	case u.User != nil:
		return "must not carry credentials (user:password@)"
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return "has a bad port"
		}
	}
	return ""
}

// checkPrivate refuses, when the guard is on, a URL whose host is
// literally a loopback or private address (names are checked again at
// every delivery, after resolution).
func (m *Module) checkPrivate(raw string) string {
	if m.cfg.allowPrivate {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	host := strings.ToLower(u.Hostname())
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return "must not point at this machine"
	}
	if ip, err := netip.ParseAddr(host); err == nil && !PublicAddress(ip) {
		return "must not be a loopback, private, link-local or reserved address"
	}
	if ip := net.ParseIP(host); ip != nil {
		if a, ok := netip.AddrFromSlice(ip); ok && !PublicAddress(a) {
			return "must not be a loopback, private, link-local or reserved address"
		}
	}
	return ""
}

// input is a validated create or update body; nil fields were not sent.
type input struct {
	url, description, scope *string
	events                  *[]string
	active                  *bool
}

func (m *Module) readInput(c *fiber.Ctx, creating bool) (*input, error) {
	in, err := app.ReadInput(c)
	if err != nil {
		return nil, err
	}
	out := &input{}
	v := app.Validation{}
	if s, ok, err := in.String("url"); err != nil {
		return nil, err
	} else if ok {
		s = strings.TrimSpace(s)
		out.url = &s
		if p := checkURL(s); p != "" {
			v.Add("url", p)
		} else if p := m.checkPrivate(s); p != "" {
			v.Add("url", p)
		}
	} else if creating {
		v.Add("url", "is required")
	}
	if s, ok, err := in.String("description"); err != nil {
		return nil, err
	} else if ok {
		if len([]rune(s)) > MaxDescription {
			v.Add("description", fmt.Sprintf("must be at most %d characters", MaxDescription))
		}
		out.description = &s
	}
	if s, ok, err := in.String("scope"); err != nil {
		return nil, err
	} else if ok && s != "" {
		if s != ScopeOwn && s != ScopeAll {
			v.Add("scope", `must be "own" or "all"`)
		}
		out.scope = &s
	}
	if b, ok, err := in.Bool("active"); err != nil {
		return nil, err
	} else if ok {
		out.active = &b
	}
	list, ok, err := in.Strings("events")
	if err != nil {
		return nil, err
	}
	if ok || creating {
		var unknown []string
		seen := map[string]bool{}
		var events []string
		for _, e := range list {
			e = strings.TrimSpace(e)
			switch {
			case !knownEvent(e):
				unknown = append(unknown, strconv.Quote(e))
			case !seen[e]:
				seen[e] = true
				events = append(events, e)
			}
		}
		if len(unknown) > 0 {
			return nil, &app.Error{Status: fiber.StatusBadRequest, Code: "bad_request",
				Message: fmt.Sprintf("unknown event %s; known events: %s", strings.Join(unknown, ", "), strings.Join(Events, ", "))}
		}
		if len(events) == 0 {
			v.Add("events", "must name at least one event: "+strings.Join(Events, ", "))
		}
		out.events = &events
	}
	return out, v.Err()
}

// id reads :id; anything but a positive integer is a missing webhook.
func webhookID(c *fiber.Ctx, name string) (int64, error) {
	id, err := strconv.ParseInt(c.Params(name), 10, 64)
	if err != nil || id < 1 {
		return 0, ErrNotFound
	}
	return id, nil
}

// load finds a webhook the caller may act on: another user's is 404.
func (m *Module) load(ctx context.Context, db bun.IDB, c *fiber.Ctx, act string, lock bool) (*Webhook, error) {
	id, err := webhookID(c, "id")
	if err != nil {
		return nil, err
	}
	w := new(Webhook)
	q := db.NewSelect().Model(w).Where("id = ?", id)
	if lock && app.IsMySQL(db) {
		q = q.For("UPDATE")
	}
	if err := q.Scan(ctx); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, ErrNotFound
		}
		return nil, fmt.Errorf("webhooks: get %d: %w", id, err)
	}
	p := app.CurrentPrincipal(c)
	if p == nil || w.UserID != p.UserID {
		return nil, ErrNotFound
	}
	if err := m.authz.Can(p, "webhooks", act, "owner"); err != nil {
		return nil, err
	}
	return w, nil
}

// list is GET /v1/webhooks: the caller's webhooks, oldest first.
func (m *Module) list(c *fiber.Ctx) error {
	page, err := app.ParsePage(c, PageSize)
	if err != nil {
		return err
	}
	var list []Webhook
	n, err := m.db.NewSelect().Model(&list).Where("user_id = ?", app.CurrentPrincipal(c).UserID).
		Order("id ASC").Limit(int64(page.Size)).Offset(int64(page.Offset())).ScanAndCount(c.UserContext())
	if err != nil {
		return fmt.Errorf("webhooks: list: %w", err)
	}
	views := make([]*View, 0, len(list))
	for i := range list {
		views = append(views, m.view(&list[i], false))
	}
	return c.JSON(app.NewList(c, m.public, page, int(n), "webhooks", views))
}

// create is POST /v1/webhooks.
func (m *Module) create(c *fiber.Ctx) error {
	p := app.CurrentPrincipal(c)
	if err := m.authz.Can(p, "webhooks", "create"); err != nil {
		return err
	}
	in, err := m.readInput(c, true)
	if err != nil {
		return err
	}
	w := &Webhook{UserID: p.UserID, URL: *in.url, Events: strings.Join(*in.events, ","), Scope: ScopeOwn, Active: true}
	if in.description != nil {
		w.Description = *in.description
	}
	if in.scope != nil && *in.scope == ScopeAll {
		if err := m.authz.Can(p, "webhooks", "scope_all"); err != nil {
			return app.Forbidden(`only admins may create webhooks of scope "all"`)
		}
		w.Scope = ScopeAll
	}
	if in.active != nil {
		w.Active = *in.active
	}
	if w.Secret, err = newSecret(); err != nil {
		return err
	}
	now := m.now()
	w.CreatedAt, w.UpdatedAt = now, now
	ctx := c.UserContext()
	err = m.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		// The user's row is the lock that keeps two creates from both
		// passing the count (SQLite serialises transactions anyway).
		if app.IsMySQL(tx) {
			var id int64
			if err := tx.NewSelect().Model((*users.User)(nil)).Column("id").Where("id = ?", p.UserID).For("UPDATE").Scan(ctx, &id); err != nil {
				return err
			}
		}
		n, err := tx.NewSelect().Model((*Webhook)(nil)).Where("user_id = ?", p.UserID).Count(ctx)
		if err != nil {
			return err
		}
		if n >= MaxPerUser {
			return app.Conflict(fmt.Sprintf("a user may have at most %d webhooks", MaxPerUser))
		}
		_, err = tx.NewInsert().Model(w).Exec(ctx)
		return err
	})
	if err != nil {
		return wrap("create", err)
	}
	c.Set(fiber.HeaderLocation, m.view(w, false).ObjectURL)
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{"webhook": m.view(w, true)})
}

// get is GET /v1/webhooks/:id.
func (m *Module) get(c *fiber.Ctx) error {
	w, err := m.load(c.UserContext(), m.db, c, "read", false)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"webhook": m.view(w, false)})
}

// update is PUT /v1/webhooks/:id: the fields sent change. active=true
// re-enables a disabled webhook (and forgets its failures).
func (m *Module) update(c *fiber.Ctx) error {
	p := app.CurrentPrincipal(c)
	in, err := m.readInput(c, false)
	if err != nil {
		return err
	}
	var w *Webhook
	ctx := c.UserContext()
	err = m.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if w, err = m.load(ctx, tx, c, "update", true); err != nil {
			return err
		}
		if in.url != nil {
			w.URL = *in.url
		}
		if in.description != nil {
			w.Description = *in.description
		}
		if in.events != nil {
			w.Events = strings.Join(*in.events, ",")
		}
		if in.scope != nil {
			if *in.scope == ScopeAll && w.Scope != ScopeAll {
				if err := m.authz.Can(p, "webhooks", "scope_all"); err != nil {
					return app.Forbidden(`only admins may create webhooks of scope "all"`)
				}
			}
			w.Scope = *in.scope
		}
		if in.active != nil {
			if *in.active && !w.Active {
				w.DisabledReason, w.FailingSince = "", nil
			}
			w.Active = *in.active
		}
		w.UpdatedAt = m.now()
		_, err := tx.NewUpdate().Model(w).
			Column("url", "description", "events", "scope", "active", "disabled_reason", "failing_since", "updated_at").
			WherePK().Exec(ctx)
		return err
	})
	if err != nil {
		return wrap("update", err)
	}
	m.Wake()
	return c.JSON(fiber.Map{"webhook": m.view(w, false)})
}

// delete is DELETE /v1/webhooks/:id; its deliveries go with it.
func (m *Module) delete(c *fiber.Ctx) error {
	var w *Webhook
	ctx := c.UserContext()
	err := m.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var err error
		if w, err = m.load(ctx, tx, c, "delete", true); err != nil {
			return err
		}
		for _, model := range []any{(*Attempt)(nil), (*Delivery)(nil), (*Webhook)(nil)} {
			col := "webhook_id"
			if _, ok := model.(*Webhook); ok {
				col = "id"
			}
			if _, err := tx.NewDelete().Model(model).Where("? = ?", bun.Ident(col), w.ID).Exec(ctx); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return wrap("delete", err)
	}
	return c.JSON(fiber.Map{"webhook": m.view(w, false)})
}

// rotate is POST /v1/webhooks/:id/secret: a new secret; the previous one
// keeps signing beside it for OldSecretFor.
func (m *Module) rotate(c *fiber.Ctx) error {
	var w *Webhook
	ctx := c.UserContext()
	secret, err := newSecret()
	if err != nil {
		return err
	}
	err = m.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if w, err = m.load(ctx, tx, c, "update", true); err != nil {
			return err
		}
		now := m.now()
		until := now.Add(OldSecretFor)
		w.OldSecret, w.OldSecretUntil, w.Secret, w.UpdatedAt = w.Secret, &until, secret, now
		_, err := tx.NewUpdate().Model(w).Column("old_secret", "old_secret_until", "secret", "updated_at").WherePK().Exec(ctx)
		return err
	})
	if err != nil {
		return wrap("rotate", err)
	}
	return c.JSON(fiber.Map{"webhook": m.view(w, true)})
}

// ping is POST /v1/webhooks/:id/ping: a ping event, sent at once by the
// workers; 202 with its delivery.
func (m *Module) ping(c *fiber.Ctx) error {
	w, err := m.load(c.UserContext(), m.db, c, "update", false)
	if err != nil {
		return err
	}
	if !w.Active {
		return app.Conflict("the webhook is disabled; enable it with PUT active=true first")
	}
	d, err := m.enqueuePing(c.UserContext(), w)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"delivery": deliveryView(d)})
}

// DeliveryView is the API form of a Delivery with its attempts.
type DeliveryView struct {
	ID            int64          `json:"id"`
	EventID       string         `json:"event_id"`
	Type          string         `json:"type"`
	Status        string         `json:"status"`
	Attempt       int            `json:"attempt"`
	StatusCode    *int           `json:"status_code"`
	DurationMS    *int           `json:"duration_ms"`
	Error         *string        `json:"error"`
	NextAttemptAt *app.Timestamp `json:"next_attempt_at"`
	CreatedAt     app.Timestamp  `json:"created_at"`
	Attempts      []AttemptView  `json:"attempts"`
}

// AttemptView is one attempt of a delivery.
type AttemptView struct {
	Attempt       int            `json:"attempt"`
	StatusCode    *int           `json:"status_code"`
	DurationMS    int            `json:"duration_ms"`
	Error         *string        `json:"error"`
	Response      string         `json:"response"`
	NextAttemptAt *app.Timestamp `json:"next_attempt_at"`
	CreatedAt     app.Timestamp  `json:"created_at"`
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func tsPtr(t *time.Time) *app.Timestamp {
	if t == nil {
		return nil
	}
	v := app.Timestamp(*t)
	return &v
}

func deliveryView(d *Delivery) *DeliveryView {
	v := &DeliveryView{
		ID: d.ID, EventID: d.EventID, Type: d.Type, Status: d.Status, Attempt: d.Attempts,
		StatusCode: d.StatusCode, DurationMS: d.DurationMS, Error: strPtr(d.Error),
		CreatedAt: app.Timestamp(d.CreatedAt), Attempts: []AttemptView{},
	}
	if d.Status == StatusPending {
		v.NextAttemptAt = tsPtr(d.NextAttemptAt)
	}
	for _, a := range d.AttemptList {
		v.Attempts = append(v.Attempts, AttemptView{
			Attempt: a.Number, StatusCode: a.StatusCode, DurationMS: a.DurationMS, Error: strPtr(a.Error),
			Response: a.Response, NextAttemptAt: tsPtr(a.NextAttemptAt), CreatedAt: app.Timestamp(a.CreatedAt),
		})
	}
	return v
}

// deliveries is GET /v1/webhooks/:id/deliveries, newest first.
func (m *Module) deliveries(c *fiber.Ctx) error {
	page, err := app.ParsePage(c, PageSize)
	if err != nil {
		return err
	}
	w, err := m.load(c.UserContext(), m.db, c, "read", false)
	if err != nil {
		return err
	}
	var list []Delivery
	n, err := m.db.NewSelect().Model(&list).ExcludeColumn("payload").
		Relation("AttemptList", func(q *bun.SelectQuery) *bun.SelectQuery { return q.Order("a.id ASC") }).
		Where("d.webhook_id = ?", w.ID).Order("d.id DESC").Limit(int64(page.Size)).Offset(int64(page.Offset())).
		ScanAndCount(c.UserContext())
	if err != nil {
		return fmt.Errorf("webhooks: deliveries of %d: %w", w.ID, err)
	}
	views := make([]*DeliveryView, 0, len(list))
	for i := range list {
		views = append(views, deliveryView(&list[i]))
	}
	return c.JSON(app.NewList(c, m.public, page, int(n), "deliveries", views))
}

// retry is POST /v1/webhooks/:id/deliveries/:delivery_id/retry: the
// delivery (pending, failed or even succeeded) is sent again now, with the
// same webhook-id and body; 202.
func (m *Module) retry(c *fiber.Ctx) error {
	did, err := webhookID(c, "delivery_id")
	if err != nil {
		return app.NotFound("delivery")
	}
	var d Delivery
	ctx := c.UserContext()
	err = m.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		w, err := m.load(ctx, tx, c, "update", true)
		if err != nil {
			return err
		}
		if !w.Active {
			return app.Conflict("the webhook is disabled; enable it with PUT active=true first")
		}
		if err := tx.NewSelect().Model(&d).ExcludeColumn("payload").Where("d.id = ?", did).Where("d.webhook_id = ?", w.ID).Scan(ctx); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return app.NotFound("delivery")
			}
			return err
		}
		now := m.now()
		if d.Status == StatusPending && d.NextAttemptAt != nil && d.NextAttemptAt.After(now) && w.BusyUntil != nil && w.BusyUntil.After(now) {
			return app.Conflict("the delivery is being sent")
		}
		d.Status, d.NextAttemptAt, d.UpdatedAt = StatusPending, &now, now
		_, err = tx.NewUpdate().Model(&d).Column("status", "next_attempt_at", "updated_at").WherePK().Exec(ctx)
		return err
	})
	if err != nil {
		return wrap("retry", err)
	}
	m.Wake()
	d.AttemptList = nil
	if err := m.db.NewSelect().Model(&d.AttemptList).Where("delivery_id = ?", d.ID).Order("id ASC").Scan(ctx); err != nil {
		return err
	}
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"delivery": deliveryView(&d)})
}

// wrap keeps API errors as they are.
func wrap(op string, err error) error {
	var apiErr *app.Error
	if errors.As(err, &apiErr) {
		return err
	}
	return fmt.Errorf("webhooks: %s: %w", op, err)
}

// OfUser lists a user's webhooks, oldest first (the account page shows
// them with their state).
func OfUser(ctx context.Context, db bun.IDB, userID int64) ([]Webhook, error) {
	var list []Webhook
	if err := db.NewSelect().Model(&list).Where("user_id = ?", userID).Order("id ASC").Scan(ctx); err != nil {
		return nil, fmt.Errorf("webhooks: of user %d: %w", userID, err)
	}
	return list, nil
}

// State is a webhook's state in words, and whether it needs its owner.
func (w *Webhook) State() (string, bool) {
	switch {
	case !w.Active && w.DisabledReason != "":
		return "Disabled: " + w.DisabledReason, true
	case !w.Active:
		return "Paused", false
	case w.FailingSince != nil:
		return "Failing since " + w.FailingSince.UTC().Format("2006-01-02 15:04") + " UTC (retrying)", true
	}
	return "Active", false
}
