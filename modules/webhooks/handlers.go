package webhooks

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
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
	if _, _, err := canonicalHost(u.Hostname()); errors.Is(err, errBadHost) {
		return "must name a valid host"
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return "has a bad port"
		}
	}
	return ""
}

// checkPrivate refuses a URL whose host is this machine or an address
// outside the public Internet, in any spelling (canonicalHost), when the
// guard is on; names are checked again at every delivery, after
// resolution. An IPv4 address in a spelling Go does not dial by itself
// (0x7f.1) is refused even with the guard off.
func (m *Module) checkPrivate(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return HostProblem(u.Hostname(), m.cfg.allowPrivate)
}

// HostProblem is the rule of checkPrivate for any URL's host (the
// restream module's destinations follow it too): "" when host may be
// named, else the problem in words. allowPrivate is
// ONAIR_WEBHOOK_ALLOW_PRIVATE. A host that is no valid host at all is
// the caller's to refuse.
func HostProblem(host string, allowPrivate bool) string {
	ip, name, err := canonicalHost(host)
	if !allowPrivate {
		if name == "localhost" || strings.HasSuffix(name, ".localhost") {
			return "must not point at this machine"
		}
		if ip.IsValid() && !PublicAddress(ip) {
			return "must not be a loopback, private, link-local or reserved address"
		}
	}
	if errors.Is(err, errOddIPv4) {
		return "must write an IPv4 address as four decimal numbers (a.b.c.d)"
	}
	if errors.Is(err, errBadHost) {
		return "must name a valid host"
	}
	return ""
}

// destinationRefused tells whether a delivery to raw must not be tried:
// the rule of checkPrivate at delivery time, for URLs stored before it.
func (m *Module) destinationRefused(raw string) bool {
	return !m.cfg.allowPrivate && m.checkPrivate(raw) != ""
}

// Input is what create and update may set (the API, the account page).
// A nil field was not sent: on update it keeps its value.
type Input struct {
	URL, Description, Scope *string
	Events                  *[]string
	Active                  *bool
}

// check normalises and validates an Input: an unknown event name is 400
// naming the known ones, every other problem one 422 naming the fields.
func (m *Module) check(in *Input, creating bool) error {
	v := app.Validation{}
	if in.URL != nil {
		u := strings.TrimSpace(*in.URL)
		in.URL = &u
		if p := app.TextProblem(u); p != "" {
			v.Add("url", p)
		} else if p := checkURL(u); p != "" {
			v.Add("url", p)
		} else if p := m.checkPrivate(u); p != "" {
			v.Add("url", p)
		}
	} else if creating {
		v.Add("url", "is required")
	}
	if in.Description != nil {
		if p := app.TextProblem(*in.Description); p != "" {
			v.Add("description", p)
		} else if len([]rune(*in.Description)) > MaxDescription {
			v.Add("description", fmt.Sprintf("must be at most %d characters", MaxDescription))
		}
	}
	if in.Scope != nil {
		switch *in.Scope {
		case "":
			in.Scope = nil
		case ScopeOwn, ScopeAll:
		default:
			v.Add("scope", `must be "own" or "all"`)
		}
	}
	if in.Events != nil || creating {
		var list []string
		if in.Events != nil {
			list = *in.Events
		}
		var unknown, events []string
		seen := map[string]bool{}
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
			return &app.Error{Status: fiber.StatusBadRequest, Code: "bad_request",
				Message: fmt.Sprintf("unknown event %s; known events: %s", strings.Join(unknown, ", "), strings.Join(Events, ", "))}
		}
		if len(events) == 0 {
			v.Add("events", "must name at least one event: "+strings.Join(Events, ", "))
		}
		in.Events = &events
	}
	return v.Err()
}

// readInput decodes a create or update body.
func (m *Module) readInput(c *fiber.Ctx, creating bool) (*Input, error) {
	raw, err := app.ReadInput(c)
	if err != nil {
		return nil, err
	}
	in := &Input{}
	for name, dst := range map[string]**string{"url": &in.URL, "description": &in.Description, "scope": &in.Scope} {
		s, ok, err := raw.String(name)
		if err != nil {
			return nil, err
		}
		if ok {
			*dst = &s
		}
	}
	if b, ok, err := raw.Bool("active"); err != nil {
		return nil, err
	} else if ok {
		in.Active = &b
	}
	if list, ok, err := raw.Strings("events"); err != nil {
		return nil, err
	} else if ok {
		if list == nil {
			list = []string{}
		}
		in.Events = &list
	}
	return in, m.check(in, creating)
}

// id reads a path parameter; anything but a positive integer is 0.
func pathID(c *fiber.Ctx, name string) int64 {
	id, err := strconv.ParseInt(c.Params(name), 10, 64)
	if err != nil || id < 1 {
		return 0
	}
	return id
}

// load finds a webhook p may act on: another user's is 404, as a missing
// one.
func (m *Module) load(ctx context.Context, db bun.IDB, p *app.Principal, id int64, act string, lock bool) (*Webhook, error) {
	if id < 1 || p == nil {
		return nil, ErrNotFound
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
	if w.UserID != p.UserID {
		return nil, ErrNotFound
	}
	if err := m.authz.Can(p, "webhooks", act, "owner"); err != nil {
		return nil, err
	}
	return w, nil
}

// Get returns one of p's webhooks.
func (m *Module) Get(ctx context.Context, p *app.Principal, id int64) (*Webhook, error) {
	return m.load(ctx, m.db, p, id, "read", false)
}

// Create registers a webhook of p (Input checked by check; the API's
// handler has done it, the account page's has not, so it runs again).
func (m *Module) Create(ctx context.Context, p *app.Principal, in Input) (*Webhook, error) {
	if err := m.authz.Can(p, "webhooks", "create"); err != nil {
		return nil, err
	}
	if err := m.check(&in, true); err != nil {
		return nil, err
	}
	w := &Webhook{UserID: p.UserID, URL: *in.URL, Events: strings.Join(*in.Events, ","), Scope: ScopeOwn, Active: true}
	if in.Description != nil {
		w.Description = *in.Description
	}
	if in.Scope != nil && *in.Scope == ScopeAll {
		if err := m.authz.Can(p, "webhooks", "scope_all"); err != nil {
			return nil, app.Forbidden(`only admins may create webhooks of scope "all"`)
		}
		w.Scope = ScopeAll
	}
	if in.Active != nil {
		w.Active = *in.Active
	}
	var err error
	if w.Secret, err = newSecret(); err != nil {
		return nil, err
	}
	now := m.now()
	w.CreatedAt, w.UpdatedAt = now, now
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
		return nil, wrap("create", err)
	}
	return w, nil
}

// Update changes the fields of in that were sent. Active=true re-enables
// a disabled webhook (and forgets its failures).
func (m *Module) Update(ctx context.Context, p *app.Principal, id int64, in Input) (*Webhook, error) {
	if err := m.check(&in, false); err != nil {
		return nil, err
	}
	var w *Webhook
	err := m.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var err error
		if w, err = m.load(ctx, tx, p, id, "update", true); err != nil {
			return err
		}
		if in.URL != nil {
			w.URL = *in.URL
		}
		if in.Description != nil {
			w.Description = *in.Description
		}
		if in.Events != nil {
			w.Events = strings.Join(*in.Events, ",")
		}
		if in.Scope != nil {
			if *in.Scope == ScopeAll && w.Scope != ScopeAll {
				if err := m.authz.Can(p, "webhooks", "scope_all"); err != nil {
					return app.Forbidden(`only admins may create webhooks of scope "all"`)
				}
			}
			w.Scope = *in.Scope
		}
		if in.Active != nil {
			if *in.Active && !w.Active {
				w.DisabledReason, w.FailingSince = "", nil
			}
			w.Active = *in.Active
		}
		w.UpdatedAt = m.now()
		_, err = tx.NewUpdate().Model(w).
			Column("url", "description", "events", "scope", "active", "disabled_reason", "failing_since", "updated_at").
			WherePK().Exec(ctx)
		return err
	})
	if err != nil {
		return nil, wrap("update", err)
	}
	m.Wake()
	return w, nil
}

// Delete removes a webhook of p with its deliveries; it returns it as it
// was.
func (m *Module) Delete(ctx context.Context, p *app.Principal, id int64) (*Webhook, error) {
	var w *Webhook
	err := m.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var err error
		if w, err = m.load(ctx, tx, p, id, "delete", true); err != nil {
			return err
		}
		for _, q := range []*bun.DeleteQuery{
			tx.NewDelete().Model((*Attempt)(nil)).Where("webhook_id = ?", w.ID),
			tx.NewDelete().Model((*Delivery)(nil)).Where("webhook_id = ?", w.ID),
			tx.NewDelete().Model((*Webhook)(nil)).Where("id = ?", w.ID),
		} {
			if _, err := q.Exec(ctx); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, wrap("delete", err)
	}
	return w, nil
}

// Rotate gives a webhook of p a new secret; the previous one keeps
// signing beside it for OldSecretFor.
func (m *Module) Rotate(ctx context.Context, p *app.Principal, id int64) (*Webhook, error) {
	secret, err := newSecret()
	if err != nil {
		return nil, err
	}
	var w *Webhook
	err = m.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var err error
		if w, err = m.load(ctx, tx, p, id, "update", true); err != nil {
			return err
		}
		now := m.now()
		until := now.Add(OldSecretFor)
		w.OldSecret, w.OldSecretUntil, w.Secret, w.UpdatedAt = w.Secret, &until, secret, now
		_, err = tx.NewUpdate().Model(w).Column("old_secret", "old_secret_until", "secret", "updated_at").WherePK().Exec(ctx)
		return err
	})
	if err != nil {
		return nil, wrap("rotate", err)
	}
	return w, nil
}

// Ping queues a ping event to a webhook of p, sent at once.
func (m *Module) Ping(ctx context.Context, p *app.Principal, id int64) (*Delivery, error) {
	w, err := m.load(ctx, m.db, p, id, "update", false)
	if err != nil {
		return nil, err
	}
	if !w.Active {
		return nil, app.Conflict("the webhook is disabled; enable it with PUT active=true first")
	}
	return m.enqueuePing(ctx, w)
}

// Deliveries lists a page of a webhook's deliveries, newest first, with
// their attempts (without their bodies).
func (m *Module) Deliveries(ctx context.Context, p *app.Principal, id int64, page app.Page) ([]Delivery, int, error) {
	w, err := m.load(ctx, m.db, p, id, "read", false)
	if err != nil {
		return nil, 0, err
	}
	var list []Delivery
	n, err := m.db.NewSelect().Model(&list).ExcludeColumn("payload").
		Relation("AttemptList", func(q *bun.SelectQuery) *bun.SelectQuery { return q.Order("a.id ASC") }).
		Where("d.webhook_id = ?", w.ID).Order("d.id DESC").Limit(int64(page.Size)).Offset(int64(page.Offset())).
		ScanAndCount(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("webhooks: deliveries of %d: %w", w.ID, err)
	}
	return list, int(n), nil
}

// Retry sends a delivery of a webhook of p again now (pending, failed or
// even succeeded), with the same webhook-id and body.
func (m *Module) Retry(ctx context.Context, p *app.Principal, id, deliveryID int64) (*Delivery, error) {
	var d Delivery
	err := m.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		w, err := m.load(ctx, tx, p, id, "update", true)
		if err != nil {
			return err
		}
		if !w.Active {
			return app.Conflict("the webhook is disabled; enable it with PUT active=true first")
		}
		if err := tx.NewSelect().Model(&d).ExcludeColumn("payload").Where("d.id = ?", deliveryID).Where("d.webhook_id = ?", w.ID).Scan(ctx); err != nil {
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
		return nil, wrap("retry", err)
	}
	m.Wake()
	if err := m.db.NewSelect().Model(&d.AttemptList).Where("delivery_id = ?", d.ID).Order("id ASC").Scan(ctx); err != nil {
		return nil, err
	}
	return &d, nil
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
	return app.NewList(c, m.public, page, int(n), "webhooks", views).Send(c)
}

// create is POST /v1/webhooks.
func (m *Module) create(c *fiber.Ctx) error {
	if err := m.authz.Can(app.CurrentPrincipal(c), "webhooks", "create"); err != nil {
		return err
	}
	in, err := m.readInput(c, true)
	if err != nil {
		return err
	}
	w, err := m.Create(c.UserContext(), app.CurrentPrincipal(c), *in)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderLocation, m.view(w, false).ObjectURL)
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{"webhook": m.view(w, true)})
}

// get is GET /v1/webhooks/:id.
func (m *Module) get(c *fiber.Ctx) error {
	w, err := m.Get(c.UserContext(), app.CurrentPrincipal(c), pathID(c, "id"))
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"webhook": m.view(w, false)})
}

// update is PUT /v1/webhooks/:id.
func (m *Module) update(c *fiber.Ctx) error {
	in, err := m.readInput(c, false)
	if err != nil {
		return err
	}
	w, err := m.Update(c.UserContext(), app.CurrentPrincipal(c), pathID(c, "id"), *in)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"webhook": m.view(w, false)})
}

// delete is DELETE /v1/webhooks/:id.
func (m *Module) delete(c *fiber.Ctx) error {
	w, err := m.Delete(c.UserContext(), app.CurrentPrincipal(c), pathID(c, "id"))
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"webhook": m.view(w, false)})
}

// rotate is POST /v1/webhooks/:id/secret.
func (m *Module) rotate(c *fiber.Ctx) error {
	w, err := m.Rotate(c.UserContext(), app.CurrentPrincipal(c), pathID(c, "id"))
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"webhook": m.view(w, true)})
}

// ping is POST /v1/webhooks/:id/ping: 202 with the queued delivery.
func (m *Module) ping(c *fiber.Ctx) error {
	d, err := m.Ping(c.UserContext(), app.CurrentPrincipal(c), pathID(c, "id"))
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"delivery": deliveryView(d)})
}

// deliveries is GET /v1/webhooks/:id/deliveries, newest first.
func (m *Module) deliveries(c *fiber.Ctx) error {
	page, err := app.ParsePage(c, PageSize)
	if err != nil {
		return err
	}
	list, n, err := m.Deliveries(c.UserContext(), app.CurrentPrincipal(c), pathID(c, "id"), page)
	if err != nil {
		return err
	}
	views := make([]*DeliveryView, 0, len(list))
	for i := range list {
		views = append(views, deliveryView(&list[i]))
	}
	return app.NewList(c, m.public, page, n, "deliveries", views).Send(c)
}

// retry is POST /v1/webhooks/:id/deliveries/:delivery_id/retry: 202.
func (m *Module) retry(c *fiber.Ctx) error {
	did := pathID(c, "delivery_id")
	if did == 0 {
		if _, err := m.Get(c.UserContext(), app.CurrentPrincipal(c), pathID(c, "id")); err != nil {
			return err
		}
		return app.NotFound("delivery")
	}
	d, err := m.Retry(c.UserContext(), app.CurrentPrincipal(c), pathID(c, "id"), did)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"delivery": deliveryView(d)})
}

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
