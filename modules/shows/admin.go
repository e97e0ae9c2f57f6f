package shows

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/admin"
	"github.com/onair/onair/app"
)

// The shows page of the staff console: search and filter every show
// (hidden ones included), a show's state, and the staff's lifecycle
// actions. Every action goes through the lifecycle service, which asks
// Casbin, exactly as the API does; each success is audited.

var (
	_ app.AdminPager    = (*Module)(nil)
	_ app.AdminWidgeter = (*Module)(nil)
)

// AdminPages lists the console routes of the module in one place.
func (m *Module) AdminPages() []app.AdminPage {
	h := &adminHandlers{svc: m.Service, viewers: m.viewers, health: m.HealthOf}
	return []app.AdminPage{{Path: "/shows", Title: "Shows", Order: 10, Mount: func(r fiber.Router) {
		r.Get("/", h.list)
		r.Get("/:id", h.show)
		r.Post("/:id/feature", h.feature)
		r.Post("/:id/off", h.off)
		r.Post("/:id/stop", h.stop)
		r.Post("/:id/delete", h.delete)
		r.Post("/:id/edit", h.edit)
		r.Post("/:id/chat", h.chat)
	}}}
}

// viewerCounter is a module that counts a live show's viewers (the live
// module: distinct players fetching its playlists).
type viewerCounter interface{ Viewers(showID int64) int }

// viewers is a live show's viewers now, -1 when no module counts them.
func (m *Module) viewers(id int64) int {
	if m.core == nil {
		return -1
	}
	for _, mod := range m.core.Modules {
		if vc, ok := mod.(viewerCounter); ok {
			return vc.Viewers(id)
		}
	}
	return -1
}

// AdminWidgets: shows live now and shows starting today (UTC).
func (m *Module) AdminWidgets(ctx context.Context) ([]app.AdminWidget, error) {
	yes := true
	_, live, err := m.Service.Lists.List(ctx, ListQuery{Live: &yes, Page: app.Page{Number: 1, Size: 1}})
	if err != nil {
		return nil, err
	}
	from, to := today(m.Service.clock.Stamp())
	_, todays, err := m.Service.Lists.List(ctx, ListQuery{From: &from, To: &to, Page: app.Page{Number: 1, Size: 1}})
	if err != nil {
		return nil, err
	}
	return []app.AdminWidget{
		{Label: "Live now", Value: strconv.Itoa(live), Link: "/shows?state=live", Order: 10},
		{Label: "Shows today", Value: strconv.Itoa(todays), Link: "/shows?state=today", Order: 20},
	}, nil
}

func today(now time.Time) (time.Time, time.Time) {
	from := now.Truncate(24 * time.Hour)
	return from, from.Add(24 * time.Hour)
}

// AdminStates are the filters of the console's show list, in menu order.
var AdminStates = []struct{ Value, Label string }{
	{"", "All"}, {"live", "Live"}, {"today", "Today"}, {"scheduled", "Scheduled"}, {"complete", "Complete"},
	{"archived", "Archived"}, {"off", "Off"}, {"featured", "Featured"}, {"radio", "Radio"},
}

type adminHandlers struct {
	svc     *Service
	viewers func(showID int64) int
	health  func(sh *Show) Health
}

// viewersOf counts the viewers of the live shows of a list.
func (h *adminHandlers) viewersOf(list []Show) map[int64]int {
	out := map[int64]int{}
	for _, sh := range list {
		if sh.Live {
			out[sh.ID] = h.viewers(sh.ID)
		}
	}
	return out
}

// stateQuery turns the state filter into list filters.
func stateQuery(state string, q *ListQuery, now time.Time) {
	yes := true
	switch state {
	case "live":
		q.Live = &yes
	case "today":
		from, to := today(now)
		q.From, q.To = &from, &to
	case "scheduled":
		q.Scheduled = &yes
	case "complete":
		no := false
		q.Scheduled = &no
	case "archived":
		q.Archive = &yes
	case "off":
		q.Off = &yes
	case "featured":
		q.Featured = &yes
	case "radio":
		q.Radio = &yes
	}
}

// list is GET /admin/shows?q=&state=&page=.
func (h *adminHandlers) list(c *fiber.Ctx) error {
	n := admin.PageNumber(c)
	f := showFilter{Q: strings.TrimSpace(c.Query("q")), State: c.Query("state")}
	q := ListQuery{Filter: f.Q, Page: app.Page{Number: n, Size: PageSize}}
	now := h.svc.clock.Stamp()
	stateQuery(f.State, &q, now)
	list, count, err := h.svc.Lists.List(c.UserContext(), q)
	if err != nil {
		return err
	}
	return admin.Render(c, adminShowsView(f, list, now, h.viewersOf(list), admin.NewPagination(c, n, count, PageSize)))
}

// show is GET /admin/shows/:id.
func (h *adminHandlers) show(c *fiber.Ctx) error {
	sh, err := h.load(c)
	if err != nil {
		return err
	}
	var health *Health
	if sh.Live {
		hl := h.health(sh)
		health = &hl
	}
	return admin.Render(c, adminShowView(sh, h.svc.clock.Stamp(), h.svc.View(sh, false), h.viewersOf([]Show{*sh})[sh.ID], health))
}

// editedShow is what the audit log records of a staff edit.
type editedShow struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
}

func edited(sh *Show) editedShow {
	e := editedShow{Name: sh.Name, Description: sh.Description, Tags: []string{}}
	for _, t := range sh.Tags {
		e.Tags = append(e.Tags, t.Name)
	}
	return e
}

// edit is POST /admin/shows/:id/edit: name, description and tags of any
// show (StaffUpdate, the same validation as the API).
func (h *adminHandlers) edit(c *fiber.Ctx) error {
	before, err := h.load(c)
	if err != nil {
		return err
	}
	name, desc := c.FormValue("name"), c.FormValue("description")
	var tags []string
	for _, t := range strings.Split(c.FormValue("tags"), ",") {
		if t = strings.TrimSpace(t); t != "" {
			tags = append(tags, t)
		}
	}
	if tags == nil {
		tags = []string{}
	}
	sh, err := h.svc.StaffUpdate(c.UserContext(), before.ID, admin.Principal(c), Input{Name: &name, Description: &desc, Tags: &tags})
	if err != nil {
		return err
	}
	b, a := edited(before), edited(sh)
	if b.Name != a.Name || b.Description != a.Description || strings.Join(b.Tags, "\x00") != strings.Join(a.Tags, "\x00") {
		if err := admin.Log(c, "shows.edit", admin.Target("show", sh.ID), b, a); err != nil {
			return err
		}
	}
	return admin.Redirect(c, admin.Path("/shows/%d", sh.ID), "Saved “"+sh.Name+"”.")
}

func (h *adminHandlers) load(c *fiber.Ctx) (*Show, error) {
	id, err := admin.IDParam(c, "id")
	if err != nil {
		return nil, err
	}
	return h.svc.Get(c.UserContext(), id)
}

// stateOf is what the audit log records of a show's state.
type stateOf struct {
	Live     bool `json:"live"`
	Complete bool `json:"complete"`
	Featured bool `json:"featured"`
	Off      bool `json:"off"`
	Chat     bool `json:"chat_enabled"`
	Duration *int `json:"duration,omitempty"`
}

func state(sh *Show) stateOf {
	return stateOf{Live: sh.Live, Complete: sh.Complete, Featured: sh.Featured, Off: sh.Off, Chat: !sh.ChatDisabled, Duration: sh.Duration}
}

// feature is POST /admin/shows/:id/feature with featured=true|false.
func (h *adminHandlers) feature(c *fiber.Ctx) error {
	return h.toggle(c, "featured", "shows.feature", "shows.unfeature", "Featured", "No longer featuring",
		func(id int64, on bool) (*Show, error) {
			return h.svc.SetFeatured(c.UserContext(), id, on, admin.Principal(c))
		})
}

// chat is POST /admin/shows/:id/chat with chat_enabled=true or false:
// staff turn a show's chat on or off (StaffUpdate), also while it is live.
func (h *adminHandlers) chat(c *fiber.Ctx) error {
	return h.toggle(c, "chat_enabled", "shows.chat_on", "shows.chat_off", "Turned the chat on for", "Turned the chat off for",
		func(id int64, on bool) (*Show, error) {
			return h.svc.StaffUpdate(c.UserContext(), id, admin.Principal(c), Input{ChatEnabled: &on})
		})
}

// off is POST /admin/shows/:id/off with off=true (take off; a live show is
// stopped) or off=false (restore).
func (h *adminHandlers) off(c *fiber.Ctx) error {
	return h.toggle(c, "off", "shows.off", "shows.restore", "Took off", "Restored",
		func(id int64, on bool) (*Show, error) {
			return h.svc.SetOff(c.UserContext(), id, on, admin.Principal(c))
		})
}

func (h *adminHandlers) toggle(c *fiber.Ctx, field, actOn, actOff, msgOn, msgOff string, set func(int64, bool) (*Show, error)) error {
	on, err := app.ParseBool(c.FormValue(field))
	if err != nil {
		return app.Validation{field: "must be true or false"}.Err()
	}
	before, err := h.load(c)
	if err != nil {
		return err
	}
	sh, err := set(before.ID, on)
	if err != nil {
		return err
	}
	action, msg := actOn, msgOn
	if !on {
		action, msg = actOff, msgOff
	}
	if err := admin.Log(c, action, admin.Target("show", sh.ID), state(before), state(sh)); err != nil {
		return err
	}
	return admin.Back(c, admin.Path("/shows/%d", sh.ID), msg+" “"+sh.Name+"”.")
}

// stop is POST /admin/shows/:id/stop (409 unless live).
func (h *adminHandlers) stop(c *fiber.Ctx) error {
	before, err := h.load(c)
	if err != nil {
		return err
	}
	sh, err := h.svc.Stop(c.UserContext(), before.ID, admin.Principal(c))
	if err != nil {
		return err
	}
	if err := admin.Log(c, "shows.stop", admin.Target("show", sh.ID), state(before), state(sh)); err != nil {
		return err
	}
	return admin.Back(c, admin.Path("/shows/%d", sh.ID), "Stopped “"+sh.Name+"”.")
}

// deletedShow is what the audit log keeps of a deleted show.
type deletedShow struct {
	stateOf
	Name   string `json:"name"`
	UserID int64  `json:"user_id"`
	Slug   string `json:"slug"`
	Start  string `json:"start"`
}

// delete is POST /admin/shows/:id/delete (a live show is stopped first).
func (h *adminHandlers) delete(c *fiber.Ctx) error {
	sh, err := h.load(c)
	if err != nil {
		return err
	}
	before := deletedShow{stateOf: state(sh), Name: sh.Name, UserID: sh.UserID, Slug: sh.Slug, Start: admin.Time(sh.Start)}
	if _, err := h.svc.Delete(c.UserContext(), sh.ID, admin.Principal(c)); err != nil {
		return err
	}
	if err := admin.Log(c, "shows.delete", admin.Target("show", sh.ID), before, nil); err != nil {
		return err
	}
	return admin.Redirect(c, admin.Path("/shows"), "Deleted “"+sh.Name+"”.")
}

// showFilter is the list's search form.
type showFilter struct{ Q, State string }
