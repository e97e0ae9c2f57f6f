package chat_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/onair/onair/admin"
	"github.com/onair/onair/admin/admintest"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/chat"
	"github.com/onair/onair/modules/users"
)

// post sends a chat message through the API and returns the status and
// the message id (0 unless created).
func post(t *testing.T, env *onairtest.Env, token string, showID int64, text string) (int, int64) {
	t.Helper()
	r := env.Do("POST", chatPath(showID, "/chats"), token, map[string]any{"message": text})
	if r.Status != http.StatusCreated {
		return r.Status, 0
	}
	return r.Status, onairtest.ID(r.JSON(t)["chat"].(map[string]any))
}

func decode(t *testing.T, s *string) map[string]any {
	t.Helper()
	if s == nil {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(*s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestConsoleChatActions(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env := admintest.NewEnv(t, backend)
		m, _ := onairtest.Module[*chat.Module](env)
		ctx := context.Background()
		_, ownerTok := env.CreateUser("Owner")
		_, bossTok := env.CreateUser("Boss", onairtest.Role("admin"))
		boss := principal(t, env, bossTok)
		visitors := map[string]*admintest.Client{}
		for _, kind := range admintest.Roles {
			visitors[kind] = admintest.Visitor(t, env, kind)
		}
		type fixture struct {
			show, other int64
			fan         *users.User
			fanTok      string
			msg         int64
		}
		setup := func(t *testing.T) fixture {
			f := fixture{show: onairtest.CreateShow(t, env, ownerTok, nil).ID, other: onairtest.CreateShow(t, env, ownerTok, nil).ID}
			f.fan, f.fanTok = env.CreateUser("Fan")
			_, f.msg = post(t, env, f.fanTok, f.show, "hello from the fan")
			if f.msg == 0 {
				t.Fatal("no message")
			}
			return f
		}
		tests := []struct {
			name    string
			before  func(t *testing.T, f fixture)
			path    func(f fixture) string
			form    func(f fixture) url.Values
			audit   string
			target  func(f fixture) string
			changed func(t *testing.T, f fixture, before, after map[string]any)
		}{
			{"delete a message", nil,
				func(f fixture) string { return fmt.Sprintf("/admin/chat/messages/%d/delete", f.msg) },
				func(fixture) url.Values { return nil },
				"chat.delete", func(f fixture) string { return admin.Target("chat", f.msg) },
				func(t *testing.T, f fixture, before, after map[string]any) {
					if before["body"] != "hello from the fan" || after["deleted"] != true {
						t.Errorf("audit %v → %v", before, after)
					}
					env.Do("GET", chatPath(f.show, "/chats/"+strconv.FormatInt(f.msg, 10)), ownerTok, nil).Expect(t, http.StatusNotFound)
				}},
			{"ban in one show", nil,
				func(fixture) string { return "/admin/chat/bans" },
				func(f fixture) url.Values {
					return url.Values{"user": {strconv.FormatInt(f.fan.ID, 10)}, "show": {strconv.FormatInt(f.show, 10)}, "reason": {"spam"}}
				},
				"chat.ban", func(f fixture) string { return admin.Target("user", f.fan.ID) },
				func(t *testing.T, f fixture, before, after map[string]any) {
					if before != nil || after["show_id"] != float64(f.show) || after["reason"] != "spam" {
						t.Errorf("audit %v → %v", before, after)
					}
					if st, _ := post(t, env, f.fanTok, f.show, "again"); st != http.StatusForbidden {
						t.Errorf("banned user posts: %d", st)
					}
					if st, _ := post(t, env, f.fanTok, f.other, "elsewhere"); st != http.StatusCreated {
						t.Errorf("user banned in one show cannot post in another: %d", st)
					}
				}},
			{"ban everywhere (by email)", nil,
				func(fixture) string { return "/admin/chat/bans" },
				func(f fixture) url.Values { return url.Values{"user": {f.fan.Email}, "show": {""}} },
				"chat.ban", func(f fixture) string { return admin.Target("user", f.fan.ID) },
				func(t *testing.T, f fixture, before, after map[string]any) {
					if after["show_id"] != float64(0) {
						t.Errorf("audit after %v", after)
					}
					if st, _ := post(t, env, f.fanTok, f.other, "elsewhere"); st != http.StatusForbidden {
						t.Errorf("user banned everywhere posts: %d", st)
					}
				}},
			{"unban",
				func(t *testing.T, f fixture) {
					if _, err := m.Service.Ban(ctx, f.fan.ID, f.show, "rude", boss); err != nil {
						t.Fatal(err)
					}
				},
				func(fixture) string { return "/admin/chat/bans/delete" },
				func(f fixture) url.Values {
					return url.Values{"user": {strconv.FormatInt(f.fan.ID, 10)}, "show": {strconv.FormatInt(f.show, 10)}}
				},
				"chat.unban", func(f fixture) string { return admin.Target("user", f.fan.ID) },
				func(t *testing.T, f fixture, before, after map[string]any) {
					if before["show_id"] != float64(f.show) || before["reason"] != "rude" || after != nil {
						t.Errorf("audit %v → %v", before, after)
					}
					// (Posting right away would meet the one-per-second rate.)
					if banned, err := m.Service.Banned(ctx, f.show, f.fan.ID); err != nil || banned {
						t.Errorf("still banned after the unban (%v)", err)
					}
				}},
			{"slow mode", nil,
				func(fixture) string { return "/admin/chat/slow_mode" },
				func(f fixture) url.Values {
					return url.Values{"show": {strconv.FormatInt(f.show, 10)}, "seconds": {"30"}}
				},
				"chat.slow_mode", func(f fixture) string { return admin.Target("show", f.show) },
				func(t *testing.T, f fixture, before, after map[string]any) {
					if before["slow_mode"] != float64(0) || after["slow_mode"] != float64(30) {
						t.Errorf("audit %v → %v", before, after)
					}
					_, tok := env.CreateUser("Chatty")
					post(t, env, tok, f.show, "one")
					r := env.Do("POST", chatPath(f.show, "/chats"), tok, map[string]any{"message": "two"}).Expect(t, http.StatusTooManyRequests)
					if ra, _ := strconv.Atoi(r.Header.Get("Retry-After")); ra < 20 {
						t.Errorf("Retry-After %q under a 30 s slow mode", r.Header.Get("Retry-After"))
					}
				}},
		}
		for _, tt := range tests {
			for _, kind := range admintest.Roles {
				t.Run(tt.name+"/"+kind, func(t *testing.T) {
					f := setup(t)
					if tt.before != nil {
						tt.before(t, f)
					}
					r := visitors[kind].Post(tt.path(f), tt.form(f))
					entries := admintest.Audit(t, env, admin.AuditQuery{Action: tt.audit, Target: tt.target(f)})
					if kind == "user" || kind == "signed-out" {
						r.Refused(t, kind)
						if len(entries) != 0 {
							t.Errorf("a refused action was audited: %+v", entries)
						}
						if banned, _ := m.Service.Banned(ctx, f.show, f.fan.ID); banned != (tt.before != nil) {
							t.Errorf("a refused action changed the bans: banned=%v", banned)
						}
						return
					}
					r.Expect(t, http.StatusSeeOther)
					if len(entries) != 1 {
						t.Fatalf("%d audit entries %s, want 1", len(entries), tt.audit)
					}
					tt.changed(t, f, decode(t, entries[0].Before), decode(t, entries[0].After))
				})
			}
		}
	})
}

func TestConsoleChatPage(t *testing.T) {
	env := admintest.NewEnv(t, "sqlite")
	_, ownerTok := env.CreateUser("Owner")
	fan, fanTok := env.CreateUser("Fanny Fan")
	show := onairtest.CreateShow(t, env, ownerTok, map[string]any{"name": "Morning Mix"}).ID
	other := onairtest.CreateShow(t, env, ownerTok, map[string]any{"name": "Evening Mix"}).ID
	post(t, env, fanTok, show, "<script>alert(1)</script> first!")
	post(t, env, fanTok, other, "in the evening")
	_, mod := admintest.Staff(t, env, "Mo", "moderator")

	page := mod.Get("/admin/chat").Expect(t, http.StatusOK)
	page.Contains(t, "Recent messages across shows", "&lt;script&gt;alert(1)&lt;/script&gt; first!", "in the evening", "Morning Mix", "Evening Mix", "Fanny Fan", "Ban everywhere")
	one := mod.Get(fmt.Sprintf("/admin/chat?show=%d", show)).Expect(t, http.StatusOK)
	one.Contains(t, "Chat of “Morning Mix”", "first!", "Set slow mode")
	if strings.Contains(one.Body, "in the evening") {
		t.Error("the show filter shows another show's messages")
	}
	mod.Get("/admin/chat?show=999999").Expect(t, http.StatusNotFound)

	mod.Post("/admin/chat/bans", url.Values{"user": {fan.Email}, "reason": {"spam"}}).Expect(t, http.StatusSeeOther)
	mod.Get("/admin/chat").Expect(t, http.StatusOK).Contains(t, "every chat", "spam", "Unban")
	// Banning twice does not write a second entry.
	mod.Post("/admin/chat/bans", url.Values{"user": {fan.Email}}).Expect(t, http.StatusSeeOther)
	if n := admintest.AuditCount(t, env, "chat.ban"); n != 1 {
		t.Errorf("%d ban entries", n)
	}
	mod.Post("/admin/chat/bans", url.Values{"user": {"nobody@example.com"}}).Expect(t, http.StatusUnprocessableEntity)
	mod.Post("/admin/chat/bans/delete", url.Values{"user": {fan.Email}, "show": {strconv.FormatInt(show, 10)}}).Expect(t, http.StatusNotFound)
	mod.Post("/admin/chat/slow_mode", url.Values{"show": {strconv.FormatInt(show, 10)}, "seconds": {"7200"}}).Expect(t, http.StatusUnprocessableEntity)
	mod.Post("/admin/chat/slow_mode", url.Values{"show": {"999999"}, "seconds": {"5"}}).Expect(t, http.StatusNotFound)
	mod.Post("/admin/chat/messages/999999/delete", nil).Expect(t, http.StatusNotFound)
	mod.Get("/admin").Expect(t, http.StatusOK).Contains(t, `<div class="value">2</div><div class="label">Chat messages today</div>`)
}

// TestConsoleChatBanRank: a moderator bans no other staff member (the
// console's rank rule); an admin bans a moderator.
func TestConsoleChatBanRank(t *testing.T) {
	env := admintest.NewEnv(t, "sqlite")
	boss, adm := admintest.Staff(t, env, "Ada Admin", "admin")
	mo, mod := admintest.Staff(t, env, "Mo", "moderator")
	other, _ := admintest.Staff(t, env, "Olga", "moderator")
	for _, target := range []string{boss.Email, other.Email} {
		mod.Post("/admin/chat/bans", url.Values{"user": {target}}).Expect(t, http.StatusForbidden)
	}
	if n := admintest.AuditCount(t, env, "chat.ban"); n != 0 {
		t.Errorf("refused bans wrote %d audit entries", n)
	}
	adm.Post("/admin/chat/bans", url.Values{"user": {mo.Email}}).Expect(t, http.StatusSeeOther)
	mod.Post("/admin/chat/bans/delete", url.Values{"user": {mo.Email}, "show": {"0"}}).Expect(t, http.StatusSeeOther)
	adm.Post("/admin/chat/bans", url.Values{"user": {mo.Email}}).Expect(t, http.StatusSeeOther)
	mod.Post("/admin/chat/bans/delete", url.Values{"user": {boss.Email}, "show": {"0"}}).Expect(t, http.StatusForbidden)
}
