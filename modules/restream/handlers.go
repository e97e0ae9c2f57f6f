package restream

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
	"github.com/onair/onair/modules/users"
)

// ErrNotFound is a missing destination, or another user's.
var ErrNotFound = app.NotFound("destination")

// View is the API form of a Destination: the URL with its key masked.
type View struct {
	ID        int64         `json:"id"`
	ObjectURL string        `json:"object_url"`
	Name      string        `json:"name"`
	URL       string        `json:"url"`
	Enabled   bool          `json:"enabled"`
	CreatedAt app.Timestamp `json:"created_at"`
	UpdatedAt app.Timestamp `json:"updated_at"`
}

func (m *Module) view(d *Destination) *View {
	return &View{ID: d.ID, ObjectURL: fmt.Sprintf("%s/v1/destinations/%d", m.public, d.ID), Name: d.Name,
		URL: d.MaskedURL(), Enabled: d.Enabled, CreatedAt: app.Timestamp(d.CreatedAt), UpdatedAt: app.Timestamp(d.UpdatedAt)}
}

// MaskedURL is the destination's URL with its stream key masked.
func (d *Destination) MaskedURL() string { return masked(d.Prefix, d.Hint) }

// Input is what create and update may set (the API, the studio page). A
// nil field was not sent: on update it keeps its value. A URL whose key
// is the masked form of the current one (what GET answered) keeps the
// stored key with the new prefix.
type Input struct {
	Name, URL *string
	Enabled   *bool
}

// check normalises and validates in: every problem is one 422 naming the
// fields. current is the destination being updated (nil on create).
func (m *Module) check(in *Input, current *Destination) error {
	v := app.Validation{}
	if in.Name != nil {
		n := strings.TrimSpace(*in.Name)
		in.Name = &n
		switch {
		case app.TextProblem(n) != "":
			v.Add("name", app.TextProblem(n))
		case n == "":
			v.Add("name", "is required")
		case len([]rune(n)) > MaxName:
			v.Add("name", fmt.Sprintf("must be at most %d characters", MaxName))
		}
	} else if current == nil {
		v.Add("name", "is required")
	}
	if in.URL != nil {
		u := strings.TrimSpace(*in.URL)
		in.URL = &u
		if current != nil {
			// The masked form sent back keeps the key.
			if prefix, key, ok := splitKey(u); ok && key == Mask+current.Hint {
				if p := checkURL(prefix+"k", m.allowPrivate); p != "" {
					v.Add("url", p)
				}
				return v.Err()
			}
		}
		if p := app.TextProblem(u); p != "" {
			v.Add("url", p)
		} else if p := checkURL(u, m.allowPrivate); p != "" {
			v.Add("url", p)
		}
	} else if current == nil {
		v.Add("url", "is required")
	}
	return v.Err()
}

// readInput decodes a create or update body.
func readInput(c *fiber.Ctx) (*Input, error) {
	raw, err := app.ReadInput(c)
	if err != nil {
		return nil, err
	}
	in := &Input{}
	for name, dst := range map[string]**string{"name": &in.Name, "url": &in.URL} {
		s, ok, err := raw.String(name)
		if err != nil {
			return nil, err
		}
		if ok {
			*dst = &s
		}
	}
	if b, ok, err := raw.Bool("enabled"); err != nil {
		return nil, err
	} else if ok {
		in.Enabled = &b
	}
	return in, nil
}

func pathID(c *fiber.Ctx) int64 {
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil || id < 1 {
		return 0
	}
	return id
}

// load finds a destination p may act on: another user's is 404, as a
// missing one.
func (m *Module) load(ctx context.Context, db bun.IDB, p *app.Principal, id int64, act string, lock bool) (*Destination, error) {
	if id < 1 || p == nil {
		return nil, ErrNotFound
	}
	d := new(Destination)
	q := db.NewSelect().Model(d).Where("id = ?", id)
	if lock && app.IsMySQL(db) {
		q = q.For("UPDATE")
	}
	if err := q.Scan(ctx); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, ErrNotFound
		}
		return nil, fmt.Errorf("restream: get %d: %w", id, err)
	}
	if d.UserID != p.UserID {
		return nil, ErrNotFound
	}
	if err := m.authz.Can(p, "destinations", act, "owner"); err != nil {
		return nil, err
	}
	return d, nil
}

// setURL stores raw's prefix, and its key sealed, in d.
func (m *Module) setURL(d *Destination, raw string) error {
	prefix, key, _ := splitKey(raw)
	sealed, err := m.keys.seal(d.UserID, key)
	if err != nil {
		return err
	}
	d.Prefix, d.Key, d.Hint = prefix, sealed, hintOf(key)
	return nil
}

// Get returns one of p's destinations.
func (m *Module) Get(ctx context.Context, p *app.Principal, id int64) (*Destination, error) {
	return m.load(ctx, m.db, p, id, "read", false)
}

// Create registers a destination of p.
func (m *Module) Create(ctx context.Context, p *app.Principal, in Input) (*Destination, error) {
	if err := m.authz.Can(p, "destinations", "create"); err != nil {
		return nil, err
	}
	if err := m.check(&in, nil); err != nil {
		return nil, err
	}
	d := &Destination{UserID: p.UserID, Name: *in.Name, Enabled: true}
	if in.Enabled != nil {
		d.Enabled = *in.Enabled
	}
	if err := m.setURL(d, *in.URL); err != nil {
		return nil, err
	}
	now := m.clock.Stamp()
	d.CreatedAt, d.UpdatedAt = now, now
	err := m.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		// The user's row keeps two creates from both passing the count.
		if app.IsMySQL(tx) {
			var id int64
			if err := tx.NewSelect().Model((*users.User)(nil)).Column("id").Where("id = ?", p.UserID).For("UPDATE").Scan(ctx, &id); err != nil {
				return err
			}
		}
		n, err := tx.NewSelect().Model((*Destination)(nil)).Where("user_id = ?", p.UserID).Count(ctx)
		if err != nil {
			return err
		}
		if n >= MaxPerUser {
			return app.Conflict(fmt.Sprintf("a user may have at most %d destinations", MaxPerUser))
		}
		_, err = tx.NewInsert().Model(d).Exec(ctx)
		return err
	})
	if err != nil {
		return nil, wrap("create", err)
	}
	m.changed(d.UserID)
	return d, nil
}

// Update changes the fields of in that were sent.
func (m *Module) Update(ctx context.Context, p *app.Principal, id int64, in Input) (*Destination, error) {
	var d *Destination
	err := m.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var err error
		if d, err = m.load(ctx, tx, p, id, "update", true); err != nil {
			return err
		}
		if err := m.check(&in, d); err != nil {
			return err
		}
		if in.Name != nil {
			d.Name = *in.Name
		}
		if in.URL != nil {
			if prefix, key, _ := splitKey(*in.URL); key == Mask+d.Hint {
				d.Prefix = prefix
			} else if err := m.setURL(d, *in.URL); err != nil {
				return err
			}
		}
		if in.Enabled != nil {
			d.Enabled = *in.Enabled
		}
		d.UpdatedAt = m.clock.Stamp()
		_, err = tx.NewUpdate().Model(d).Column("name", "url_prefix", "key_sealed", "key_hint", "enabled", "updated_at").WherePK().Exec(ctx)
		return err
	})
	if err != nil {
		return nil, wrap("update", err)
	}
	m.changed(d.UserID)
	return d, nil
}

// Delete removes a destination of p and returns it as it was.
func (m *Module) Delete(ctx context.Context, p *app.Principal, id int64) (*Destination, error) {
	var d *Destination
	err := m.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var err error
		if d, err = m.load(ctx, tx, p, id, "delete", true); err != nil {
			return err
		}
		_, err = tx.NewDelete().Model((*Destination)(nil)).Where("id = ?", d.ID).Exec(ctx)
		return err
	})
	if err != nil {
		return nil, wrap("delete", err)
	}
	m.changed(d.UserID)
	return d, nil
}

// OfUser lists a user's destinations, oldest first.
func OfUser(ctx context.Context, db bun.IDB, userID int64) ([]Destination, error) {
	var list []Destination
	if err := db.NewSelect().Model(&list).Where("user_id = ?", userID).Order("id ASC").Scan(ctx); err != nil {
		return nil, fmt.Errorf("restream: of user %d: %w", userID, err)
	}
	return list, nil
}

// list is GET /v1/destinations: the caller's destinations, oldest first.
func (m *Module) list(c *fiber.Ctx) error {
	page, err := app.ParsePage(c, PageSize)
	if err != nil {
		return err
	}
	var list []Destination
	n, err := m.db.NewSelect().Model(&list).Where("user_id = ?", app.CurrentPrincipal(c).UserID).
		Order("id ASC").Limit(int64(page.Size)).Offset(int64(page.Offset())).ScanAndCount(c.UserContext())
	if err != nil {
		return fmt.Errorf("restream: list: %w", err)
	}
	views := make([]*View, 0, len(list))
	for i := range list {
		views = append(views, m.view(&list[i]))
	}
	return app.NewList(c, m.public, page, int(n), "destinations", views).Send(c)
}

// create is POST /v1/destinations: 201 with the destination, its key
// masked.
func (m *Module) create(c *fiber.Ctx) error {
	in, err := readInput(c)
	if err != nil {
		return err
	}
	d, err := m.Create(c.UserContext(), app.CurrentPrincipal(c), *in)
	if err != nil {
		return err
	}
	v := m.view(d)
	c.Set(fiber.HeaderLocation, v.ObjectURL)
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{"destination": v})
}

// get is GET /v1/destinations/:id.
func (m *Module) get(c *fiber.Ctx) error {
	d, err := m.Get(c.UserContext(), app.CurrentPrincipal(c), pathID(c))
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"destination": m.view(d)})
}

// update is PUT /v1/destinations/:id.
func (m *Module) update(c *fiber.Ctx) error {
	in, err := readInput(c)
	if err != nil {
		return err
	}
	d, err := m.Update(c.UserContext(), app.CurrentPrincipal(c), pathID(c), *in)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"destination": m.view(d)})
}

// delete is DELETE /v1/destinations/:id.
func (m *Module) delete(c *fiber.Ctx) error {
	d, err := m.Delete(c.UserContext(), app.CurrentPrincipal(c), pathID(c))
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"destination": m.view(d)})
}

// wrap keeps API errors as they are.
func wrap(op string, err error) error {
	var apiErr *app.Error
	if errors.As(err, &apiErr) {
		return err
	}
	return fmt.Errorf("restream: %s: %w", op, err)
}
