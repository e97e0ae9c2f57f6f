package chat

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/uptrace/bun"

	"github.com/onair/onair/admin"
	"github.com/onair/onair/app"
	"github.com/onair/onair/modules/shows"
	"github.com/onair/onair/modules/users"
)

// The chat page of the staff console: recent messages across shows (or
// one show's), deleting messages, bans per show or everywhere, and slow
// mode. Every action goes through the Service, which asks Casbin as the
// API does; each success is audited.

var (
	_ app.AdminPager    = (*Module)(nil)
	_ app.AdminWidgeter = (*Module)(nil)
)

// AdminPages lists the console routes of the module in one place.
func (m *Module) AdminPages() []app.AdminPage {
	h := &adminHandlers{m: m}
	return []app.AdminPage{{Path: "/chat", Title: "Chat", Order: 20, Mount: func(r fiber.Router) {
		r.Get("/", h.page)
		r.Post("/messages/:id/delete", h.deleteMessage)
		r.Post("/bans", h.ban)
		r.Post("/bans/delete", h.unban)
		r.Post("/slow_mode", h.slowMode)
	}}}
}

// AdminWidgets: chat messages posted today (UTC).
func (m *Module) AdminWidgets(ctx context.Context) ([]app.AdminWidget, error) {
	n, err := m.Service.CountSince(ctx, m.core.Clock.Stamp().Truncate(24*time.Hour))
	if err != nil {
		return nil, err
	}
	return []app.AdminWidget{{Label: "Chat messages today", Value: strconv.Itoa(n), Link: "/chat", Order: 40}}, nil
}

// CountSince is the number of messages posted since t (deleted ones too:
// they were posted).
func (s *Service) CountSince(ctx context.Context, t time.Time) (int, error) {
	n, err := s.db.NewSelect().Model((*Message)(nil)).Where("created_at >= ?", t.UTC()).Count(ctx)
	if err != nil {
		return 0, fmt.Errorf("chat: count: %w", err)
	}
	return int(n), nil
}

// SlowModes lists the shows' chat settings that slow the chat down.
func (s *Service) SlowModes(ctx context.Context) ([]Settings, error) {
	var list []Settings
	err := s.db.NewSelect().Model(&list).Where("slow_mode > 0").Order("show_id DESC").Limit(500).Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("chat: slow modes: %w", err)
	}
	return list, nil
}

type adminHandlers struct{ m *Module }

// chatPageData is everything the chat page shows.
type chatPageData struct {
	Show      *shows.Show // the show filtered on, or nil for every show
	Messages  []Message
	ShowNames map[int64]string
	UserNames map[int64]string
	Bans      []Ban
	SlowModes []Settings
	SlowMode  int // of Show
	Pager     admin.Pagination
}

// page is GET /admin/chat (?show= narrows it to one show's chat).
func (h *adminHandlers) page(c *fiber.Ctx) error {
	ctx := c.UserContext()
	s := h.m.Service
	d := chatPageData{}
	var err error
	if raw := c.Query("show"); raw != "" {
		id, _ := strconv.ParseInt(raw, 10, 64)
		if d.Show, err = h.m.shows.Get(ctx, id); err != nil {
			return err
		}
		n := admin.PageNumber(c)
		var count int
		if d.Messages, count, err = s.List(ctx, id, nil, app.Page{Number: n, Size: PageSize}); err != nil {
			return err
		}
		d.Pager = admin.NewPagination(c, n, count, PageSize)
		if d.SlowMode, err = s.SlowMode(ctx, id); err != nil {
			return err
		}
	} else if d.Messages, err = s.Recent(ctx, 100); err != nil {
		return err
	}
	if d.Bans, err = s.Bans(ctx); err != nil {
		return err
	}
	if d.SlowModes, err = s.SlowModes(ctx); err != nil {
		return err
	}
	if d.ShowNames, d.UserNames, err = h.names(ctx, d); err != nil {
		return err
	}
	return admin.Render(c, chatView(d))
}

// names loads the show and user names the page mentions, two queries.
func (h *adminHandlers) names(ctx context.Context, d chatPageData) (map[int64]string, map[int64]string, error) {
	showIDs, userIDs := map[int64]bool{}, map[int64]bool{}
	for _, m := range d.Messages {
		showIDs[m.ShowID] = true
	}
	for _, b := range d.Bans {
		userIDs[b.UserID] = true
		if b.ShowID != 0 {
			showIDs[b.ShowID] = true
		}
	}
	for _, st := range d.SlowModes {
		showIDs[st.ShowID] = true
	}
	db := h.m.Service.db
	showNames, userNames := map[int64]string{}, map[int64]string{}
	if len(showIDs) > 0 {
		var list []shows.Show
		if err := db.NewSelect().Model(&list).Column("id", "name").Where("id IN (?)", bun.List(keys(showIDs))).Scan(ctx); err != nil {
			return nil, nil, fmt.Errorf("chat: show names: %w", err)
		}
		for _, sh := range list {
			showNames[sh.ID] = sh.Name
		}
	}
	if len(userIDs) > 0 {
		var list []users.User
		if err := db.NewSelect().Model(&list).Column("id", "name").Where("id IN (?)", bun.List(keys(userIDs))).Scan(ctx); err != nil {
			return nil, nil, fmt.Errorf("chat: user names: %w", err)
		}
		for _, u := range list {
			userNames[u.ID] = u.Name
		}
	}
	return showNames, userNames, nil
}

func keys(m map[int64]bool) []int64 {
	out := make([]int64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// messageState is what the audit log keeps of a deleted message.
type messageState struct {
	ShowID  int64  `json:"show_id"`
	UserID  int64  `json:"user_id"`
	Body    string `json:"body"`
	Deleted bool   `json:"deleted"`
}

// deleteMessage is POST /admin/chat/messages/:id/delete.
func (h *adminHandlers) deleteMessage(c *fiber.Ctx) error {
	id, err := admin.IDParam(c, "id")
	if err != nil {
		return err
	}
	m, err := h.m.Service.Delete(c.UserContext(), id, admin.Principal(c))
	if errors.Is(err, ErrNotFound) {
		return app.NotFound("message")
	}
	if err != nil {
		return err
	}
	before := messageState{ShowID: m.ShowID, UserID: m.UserID, Body: m.Body}
	after := before
	after.Deleted = true
	if err := admin.Log(c, "chat.delete", admin.Target("chat", m.ID), before, after); err != nil {
		return err
	}
	return admin.Back(c, admin.Path("/chat"), "Deleted the message.")
}

// banState is what the audit log keeps of a ban.
type banState struct {
	ShowID int64  `json:"show_id"` // 0: every chat
	Reason string `json:"reason,omitempty"`
}

// banTarget reads the user (id or email) and show (empty or 0: every
// chat) fields of the ban forms.
func (h *adminHandlers) banTarget(c *fiber.Ctx) (*users.User, int64, error) {
	who := strings.TrimSpace(c.FormValue("user"))
	if who == "" {
		return nil, 0, app.Validation{"user": "is required (an id or an email)"}.Err()
	}
	u, err := h.m.users.Find(c.UserContext(), who)
	if errors.Is(err, users.ErrNotFound) {
		return nil, 0, app.Validation{"user": "no such user"}.Err()
	}
	if err != nil {
		return nil, 0, err
	}
	showID, err := admin.FormInt(c, "show")
	if err != nil {
		return nil, 0, err
	}
	if showID != 0 {
		if _, err := h.m.shows.Get(c.UserContext(), showID); err != nil {
			return nil, 0, app.Validation{"show": "no such show"}.Err()
		}
	}
	// The console's staff rank rule (docs/admin.md): a moderator bans or
	// lifts the ban of plain users, never another staff member.
	if p := admin.Principal(c); u.Role != "" && u.ID != p.UserID {
		if err := h.m.core.Authz.Can(p, "users", "set_role"); err != nil {
			return nil, 0, app.Forbidden("only an admin may ban another staff member")
		}
	}
	return u, showID, nil
}

// ban is POST /admin/chat/bans: user, show (empty: everywhere), reason.
func (h *adminHandlers) ban(c *fiber.Ctx) error {
	// Ask Casbin before reading the form, so a refused ban reveals nothing.
	if err := h.m.core.Authz.Can(admin.Principal(c), "chat", "ban"); err != nil {
		return err
	}
	u, showID, err := h.banTarget(c)
	if err != nil {
		return err
	}
	reason := strings.TrimSpace(c.FormValue("reason"))
	if len([]rune(reason)) > 200 {
		return app.Validation{"reason": "must be at most 200 characters"}.Err()
	}
	was, err := h.m.Service.bannedExactly(c.UserContext(), u.ID, showID)
	if err != nil {
		return err
	}
	if _, err := h.m.Service.Ban(c.UserContext(), u.ID, showID, reason, admin.Principal(c)); err != nil {
		return err
	}
	where := "every chat"
	if showID != 0 {
		where = "the chat of show " + strconv.FormatInt(showID, 10)
	}
	if was != nil {
		return admin.Back(c, admin.Path("/chat"), u.Name+" was already banned from "+where+".")
	}
	if err := admin.Log(c, "chat.ban", admin.Target("user", u.ID), nil, banState{showID, reason}); err != nil {
		return err
	}
	return admin.Back(c, admin.Path("/chat"), "Banned "+u.Name+" from "+where+".")
}

// unban is POST /admin/chat/bans/delete: user, show (0: the global ban).
func (h *adminHandlers) unban(c *fiber.Ctx) error {
	if err := h.m.core.Authz.Can(admin.Principal(c), "chat", "ban"); err != nil {
		return err
	}
	u, showID, err := h.banTarget(c)
	if err != nil {
		return err
	}
	was, err := h.m.Service.bannedExactly(c.UserContext(), u.ID, showID)
	if err != nil {
		return err
	}
	if was == nil {
		return app.NotFound("ban")
	}
	if err := h.m.Service.Unban(c.UserContext(), u.ID, showID, admin.Principal(c)); err != nil {
		return err
	}
	if err := admin.Log(c, "chat.unban", admin.Target("user", u.ID), banState{showID, was.Reason}, nil); err != nil {
		return err
	}
	return admin.Back(c, admin.Path("/chat"), "Lifted the ban of "+u.Name+".")
}

// slowState is what the audit log keeps of a slow-mode change.
type slowState struct {
	SlowMode int `json:"slow_mode"`
}

// slowMode is POST /admin/chat/slow_mode: show, seconds (0 turns it off).
func (h *adminHandlers) slowMode(c *fiber.Ctx) error {
	showID, err := admin.FormInt(c, "show")
	if err != nil {
		return err
	}
	secs, err := strconv.Atoi(strings.TrimSpace(c.FormValue("seconds")))
	if err != nil {
		return app.Validation{"seconds": "must be a whole number of seconds"}.Err()
	}
	before, err := h.m.Service.SlowMode(c.UserContext(), showID)
	if err != nil {
		return err
	}
	if err := h.m.Service.SetSlowMode(c.UserContext(), showID, secs, admin.Principal(c)); err != nil {
		return err
	}
	if before != secs {
		if err := admin.Log(c, "chat.slow_mode", admin.Target("show", showID), slowState{before}, slowState{secs}); err != nil {
			return err
		}
	}
	msg := "Slow mode is off for show " + strconv.FormatInt(showID, 10) + "."
	if secs > 0 {
		msg = "Slow mode: one message per " + (time.Duration(secs) * time.Second).String() + " in show " + strconv.FormatInt(showID, 10) + "."
	}
	return admin.Back(c, admin.Path("/chat?show=%d", showID), msg)
}
