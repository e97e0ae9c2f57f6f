package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
)

// Entry is one staff action of the audit log: who (ActorID), what (Action,
// such as "shows.feature", on Target, such as "show:12"), when, and the
// values before and after as JSON (nil: nothing, e.g. before a create).
type Entry struct {
	bun.BaseModel `bun:"table:audit_log,alias:al"`

	ID        int64     `bun:"id,pk,autoincrement"`
	ActorID   int64     `bun:"actor_id,notnull"`
	Action    string    `bun:"action,notnull,type:varchar(64)"`
	Target    string    `bun:"target,notnull,type:varchar(191)"`
	Before    *string   `bun:"before,type:text"`
	After     *string   `bun:"after,type:text"`
	CreatedAt time.Time `bun:"created_at,notnull"`
}

// Audit records a staff action. before and after are any values that
// encode to JSON (a struct of the fields that changed is best); nil stores
// nothing; clock (the kernel's, Core.Clock) dates the entry. Console
// handlers call it after the service call succeeded; Log is the shorthand
// for a request.
func Audit(ctx context.Context, db bun.IDB, clock *app.Clock, actorID int64, action, target string, before, after any) error {
	e := &Entry{ActorID: actorID, Action: action, Target: target, CreatedAt: clock.Stamp()}
	var err error
	if e.Before, err = encodeValue(before); err != nil {
		return fmt.Errorf("admin: audit %s: before: %w", action, err)
	}
	if e.After, err = encodeValue(after); err != nil {
		return fmt.Errorf("admin: audit %s: after: %w", action, err)
	}
	if _, err := db.NewInsert().Model(e).Exec(ctx); err != nil {
		return fmt.Errorf("admin: audit %s: %w", action, err)
	}
	return nil
}

// Log is Audit for a console request: the actor is the signed-in staff
// member.
func Log(c *fiber.Ctx, action, target string, before, after any) error {
	r := Current(c)
	if r.Principal == nil || r.db == nil {
		return fmt.Errorf("admin: audit %s outside a console request", action)
	}
	return Audit(c.UserContext(), r.db, r.clock, r.Principal.UserID, action, target, before, after)
}

// Target names an object of the audit log: Target("show", 12) is "show:12".
func Target(kind string, id int64) string { return kind + ":" + strconv.FormatInt(id, 10) }

func encodeValue(v any) (*string, error) {
	if v == nil {
		return nil, nil
	}
	// Not HTML-escaped: the page escapes what it shows, and the log stays
	// readable ("<b>" rather than "\u003cb\u003e").
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	s := strings.TrimSuffix(b.String(), "\n")
	if s == "null" {
		return nil, nil
	}
	return &s, nil
}

// AuditQuery filters the audit log. Zero values match everything.
type AuditQuery struct {
	ActorID int64
	// Action matches exactly, or a prefix when it ends with "." ("shows.").
	Action string
	Target string
	Page   app.Page
}

// AuditPageSize is the console's page of audit entries.
const AuditPageSize = 50

// Entries returns a page of the audit log, newest first, and the count.
func Entries(ctx context.Context, db bun.IDB, q AuditQuery) ([]Entry, int, error) {
	if q.Page.Size == 0 {
		q.Page = app.Page{Number: 1, Size: AuditPageSize}
	}
	var list []Entry
	sel := db.NewSelect().Model(&list)
	if q.ActorID != 0 {
		sel.Where("al.actor_id = ?", q.ActorID)
	}
	if strings.HasSuffix(q.Action, ".") {
		sel.Where("al.action LIKE ? ESCAPE '!'", app.EscapeLike(q.Action)+"%")
	} else if q.Action != "" {
		sel.Where("al.action = ?", q.Action)
	}
	if q.Target != "" {
		sel.Where("al.target = ?", q.Target)
	}
	n, err := sel.OrderExpr("al.id DESC").Limit(int64(q.Page.Size)).Offset(int64(q.Page.Offset())).ScanAndCount(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("admin: audit log: %w", err)
	}
	return list, int(n), nil
}

// auditRow is an entry with its actor's name, for the page.
type auditRow struct {
	Entry
	Actor string
}

// auditPage is GET /admin/audit.
func (m *Module) auditPage(c *fiber.Ctx) error {
	ctx := c.UserContext()
	n := PageNumber(c)
	q := AuditQuery{Action: strings.TrimSpace(c.Query("action")), Target: strings.TrimSpace(c.Query("target")),
		Page: app.Page{Number: n, Size: AuditPageSize}}
	if a := strings.TrimSpace(c.Query("actor")); a != "" {
		u, err := m.accounts.FindAccount(ctx, a)
		if err != nil {
			return err
		}
		q.ActorID = -1 // no such actor: no entries
		if u != nil {
			q.ActorID = u.ID
		}
	}
	list, count, err := Entries(ctx, m.core.DB, q)
	if err != nil {
		return err
	}
	names, err := m.names(ctx, list)
	if err != nil {
		return err
	}
	rows := make([]auditRow, len(list))
	for i, e := range list {
		rows[i] = auditRow{Entry: e, Actor: names[e.ActorID]}
	}
	return Render(c, auditView(auditData{
		Rows: rows, Actor: c.Query("actor"), Action: q.Action, Target: q.Target,
		Pager: NewPagination(c, n, count, AuditPageSize),
	}))
}

// names loads the names of the entries' actors in one query.
func (m *Module) names(ctx context.Context, list []Entry) (map[int64]string, error) {
	out := map[int64]string{}
	var ids []int64
	for _, e := range list {
		if _, ok := out[e.ActorID]; !ok {
			out[e.ActorID] = fmt.Sprintf("user %d (deleted)", e.ActorID)
			ids = append(ids, e.ActorID)
		}
	}
	if len(ids) == 0 {
		return out, nil
	}
	found, err := m.accounts.AccountNames(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("admin: audit actors: %w", err)
	}
	for id, name := range found {
		out[id] = name
	}
	return out, nil
}

// AdminWidgets: staff actions today.
func (m *Module) AdminWidgets(ctx context.Context) ([]app.AdminWidget, error) {
	today := m.core.Clock.Stamp().Truncate(24 * time.Hour)
	n, err := m.core.DB.NewSelect().Model((*Entry)(nil)).Where("created_at >= ?", today).Count(ctx)
	if err != nil {
		return nil, fmt.Errorf("admin: audit count: %w", err)
	}
	return []app.AdminWidget{{Label: "Staff actions today", Value: strconv.FormatInt(n, 10), Link: "/audit", Order: 90}}, nil
}

// change is one field of an entry's before or after value, for the page.
type change struct {
	Key, Value string
	Changed    bool
}

// fields lays out an entry's before (or after) JSON object one field a
// line, marking the fields whose value differs on the other side. A value
// that is not an object is one line without a key.
func fields(side, other *string) []change {
	if side == nil {
		return nil
	}
	var m, o map[string]json.RawMessage
	if json.Unmarshal([]byte(*side), &m) != nil {
		return []change{{Value: *side}}
	}
	if other != nil {
		_ = json.Unmarshal([]byte(*other), &o)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]change, 0, len(keys))
	for _, k := range keys {
		ov, ok := o[k]
		out = append(out, change{Key: k, Value: string(m[k]), Changed: other != nil && (!ok || string(ov) != string(m[k]))})
	}
	return out
}
