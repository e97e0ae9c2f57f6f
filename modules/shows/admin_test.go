package shows_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/onair/onair/admin"
	"github.com/onair/onair/admin/admintest"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/shows"
)

// v1Show reads a show through the API as token's user: the status and the
// show (nil unless 200).
func v1Show(t *testing.T, env *onairtest.Env, token string, id int64) (int, map[string]any) {
	t.Helper()
	r := env.Do("GET", fmt.Sprintf("/v1/shows/%d", id), token, nil)
	if r.Status != http.StatusOK {
		return r.Status, nil
	}
	return r.Status, r.JSON(t)["show"].(map[string]any)
}

// auditJSON decodes an audit value.
func auditJSON(t *testing.T, s *string) map[string]any {
	t.Helper()
	if s == nil {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(*s), &m); err != nil {
		t.Fatalf("audit value %q: %v", *s, err)
	}
	return m
}

func TestConsoleShowActions(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env := admintest.NewEnv(t, backend)
		svc := shows.From(env.Core)
		ctx := context.Background()
		_, ownerTok := env.CreateUser("Owner")
		_, viewerTok := env.CreateUser("Viewer")
		visitors := map[string]*admintest.Client{}
		for _, kind := range admintest.Roles {
			visitors[kind] = admintest.Visitor(t, env, kind)
		}
		goLive := func(id int64) {
			video := "/media/shows/live.m3u8"
			if _, err := svc.GoLive(ctx, id, shows.Media{VideoURL: &video}); err != nil {
				t.Fatal(err)
			}
		}
		tests := []struct {
			name    string
			setup   func(id int64)
			action  string // path after /admin/shows/:id
			form    url.Values
			status  int    // for staff: 303, or the refusal
			audit   string // the entry staff write
			changed func(t *testing.T, id int64, before, after map[string]any)
		}{
			{"feature", nil, "feature", url.Values{"featured": {"true"}}, http.StatusSeeOther, "shows.feature",
				func(t *testing.T, id int64, before, after map[string]any) {
					if before["featured"] != false || after["featured"] != true {
						t.Errorf("audit %v → %v", before, after)
					}
					if _, sh := v1Show(t, env, viewerTok, id); sh["featured"] != true {
						t.Errorf("/v1 featured = %v", sh["featured"])
					}
				}},
			{"unfeature", func(id int64) { svc.SetFeatured(ctx, id, true, nil) }, "feature", url.Values{"featured": {"false"}},
				http.StatusSeeOther, "shows.unfeature",
				func(t *testing.T, id int64, before, after map[string]any) {
					if before["featured"] != true || after["featured"] != false {
						t.Errorf("audit %v → %v", before, after)
					}
					if _, sh := v1Show(t, env, viewerTok, id); sh["featured"] != false {
						t.Errorf("/v1 featured = %v", sh["featured"])
					}
				}},
			{"take off", nil, "off", url.Values{"off": {"true"}}, http.StatusSeeOther, "shows.off",
				func(t *testing.T, id int64, before, after map[string]any) {
					if before["off"] != false || after["off"] != true {
						t.Errorf("audit %v → %v", before, after)
					}
					if st, _ := v1Show(t, env, viewerTok, id); st != http.StatusNotFound {
						t.Errorf("another user reads an off show: %d", st)
					}
					if _, sh := v1Show(t, env, ownerTok, id); sh["off"] != true {
						t.Errorf("owner sees off = %v", sh["off"])
					}
				}},
			{"take off a live show", goLive, "off", url.Values{"off": {"true"}}, http.StatusSeeOther, "shows.off",
				func(t *testing.T, id int64, before, after map[string]any) {
					if before["live"] != true || after["live"] != false || after["complete"] != true || after["off"] != true {
						t.Errorf("audit %v → %v", before, after)
					}
					if _, sh := v1Show(t, env, ownerTok, id); sh["live"] != false || sh["complete"] != true {
						t.Errorf("owner sees live=%v complete=%v", sh["live"], sh["complete"])
					}
				}},
			{"restore", func(id int64) { svc.SetOff(ctx, id, true, nil) }, "off", url.Values{"off": {"false"}},
				http.StatusSeeOther, "shows.restore",
				func(t *testing.T, id int64, before, after map[string]any) {
					if before["off"] != true || after["off"] != false {
						t.Errorf("audit %v → %v", before, after)
					}
					if st, _ := v1Show(t, env, viewerTok, id); st != http.StatusOK {
						t.Errorf("restored show answers %d", st)
					}
				}},
			{"stop", goLive, "stop", nil, http.StatusSeeOther, "shows.stop",
				func(t *testing.T, id int64, before, after map[string]any) {
					if before["live"] != true || after["live"] != false || after["complete"] != true {
						t.Errorf("audit %v → %v", before, after)
					}
					if _, sh := v1Show(t, env, viewerTok, id); sh["complete"] != true || sh["duration"] == nil {
						t.Errorf("/v1 complete=%v duration=%v", sh["complete"], sh["duration"])
					}
				}},
			{"stop a show that is not live", nil, "stop", nil, http.StatusConflict, "", nil},
			{"delete", nil, "delete", nil, http.StatusSeeOther, "shows.delete",
				func(t *testing.T, id int64, before, after map[string]any) {
					if before["name"] != "delete" || after != nil {
						t.Errorf("audit %v → %v", before, after)
					}
					if st, _ := v1Show(t, env, ownerTok, id); st != http.StatusNotFound {
						t.Errorf("deleted show answers %d to its owner", st)
					}
				}},
			{"malformed", nil, "feature", url.Values{"featured": {"maybe"}}, http.StatusUnprocessableEntity, "", nil},
			{"edit", nil, "edit", url.Values{"name": {"Edited by staff"}, "description": {"New words."}, "tags": {"Jazz, Late Night"}}, http.StatusSeeOther, "shows.edit",
				func(t *testing.T, id int64, before, after map[string]any) {
					if before["name"] != "edit" || after["name"] != "Edited by staff" || len(after["tags"].([]any)) != 2 {
						t.Errorf("audit %v → %v", before, after)
					}
					if _, sh := v1Show(t, env, viewerTok, id); sh["name"] != "Edited by staff" || sh["description"] != "New words." || len(sh["tags"].([]any)) != 2 {
						t.Errorf("/v1 after the staff edit: %v", sh)
					}
				}},
			{"chat off while live", goLive, "chat", url.Values{"chat_enabled": {"false"}}, http.StatusSeeOther, "shows.chat_off",
				func(t *testing.T, id int64, before, after map[string]any) {
					if before["chat_enabled"] != true || after["chat_enabled"] != false || after["live"] != true {
						t.Errorf("audit %v → %v", before, after)
					}
					if _, sh := v1Show(t, env, viewerTok, id); sh["chat_enabled"] != false {
						t.Errorf("/v1 chat_enabled = %v", sh["chat_enabled"])
					}
					r := env.Do("POST", fmt.Sprintf("/v1/shows/%d/chats", id), viewerTok, map[string]any{"message": "hello?"})
					if r.Status != http.StatusForbidden || r.ErrorCode(t) != "chat_disabled" {
						t.Errorf("post to a chat staff turned off: %d %s", r.Status, r.Body)
					}
				}},
			{"chat on", func(id int64) {
				env.Do("PUT", fmt.Sprintf("/v1/shows/%d", id), ownerTok, map[string]any{"chat_enabled": false}).Expect(t, http.StatusOK)
			}, "chat", url.Values{"chat_enabled": {"true"}}, http.StatusSeeOther, "shows.chat_on",
				func(t *testing.T, id int64, before, after map[string]any) {
					if before["chat_enabled"] != false || after["chat_enabled"] != true {
						t.Errorf("audit %v → %v", before, after)
					}
				}},
			{"chat malformed", nil, "chat", url.Values{"chat_enabled": {"maybe"}}, http.StatusUnprocessableEntity, "", nil},
			{"edit without a name", nil, "edit", url.Values{"name": {" "}, "description": {"x"}}, http.StatusUnprocessableEntity, "", nil},
		}
		for _, tt := range tests {
			for _, kind := range admintest.Roles {
				t.Run(tt.name+"/"+kind, func(t *testing.T) {
					id := onairtest.CreateShow(t, env, ownerTok, map[string]any{"name": tt.name, "description": "A show."}).ID
					if tt.setup != nil {
						tt.setup(id)
					}
					_, before := v1Show(t, env, ownerTok, id)
					c := visitors[kind]
					r := c.Post(fmt.Sprintf("/admin/shows/%d/%s", id, tt.action), tt.form)
					target := admin.Target("show", id)
					entries := admintest.Audit(t, env, admin.AuditQuery{Target: target})
					if kind == "user" || kind == "signed-out" {
						r.Refused(t, kind)
						if _, after := v1Show(t, env, ownerTok, id); fmt.Sprint(after) != fmt.Sprint(before) {
							t.Errorf("a refused action changed the show:\n%v\n%v", before, after)
						}
						if len(entries) != 0 {
							t.Errorf("a refused action was audited: %+v", entries)
						}
						return
					}
					r.Expect(t, tt.status)
					if tt.audit == "" {
						if len(entries) != 0 {
							t.Errorf("a failed action was audited: %+v", entries)
						}
						return
					}
					if len(entries) != 1 || entries[0].Action != tt.audit {
						t.Fatalf("audit entries %+v, want one %s", entries, tt.audit)
					}
					e := entries[0]
					if e.ActorID == 0 {
						t.Error("no actor")
					}
					tt.changed(t, id, auditJSON(t, e.Before), auditJSON(t, e.After))
					// The flash of the next page tells what happened.
					if loc := r.Location; !strings.HasPrefix(loc, "/admin/shows") {
						t.Errorf("redirect to %q", loc)
					}
				})
			}
		}
	})
}

func TestConsoleShowPages(t *testing.T) {
	env := admintest.NewEnv(t, "sqlite")
	svc := shows.From(env.Core)
	ctx := context.Background()
	_, ownerTok := env.CreateUser("Owner")
	_, mod := admintest.Staff(t, env, "Mo", "moderator")
	live := onairtest.CreateShow(t, env, ownerTok, map[string]any{"name": "Night Owls Live", "description": "A show."}).ID
	video := "/media/shows/x/index.m3u8"
	if _, err := svc.GoLive(ctx, live, shows.Media{VideoURL: &video}); err != nil {
		t.Fatal(err)
	}
	off := onairtest.CreateShow(t, env, ownerTok, map[string]any{"name": "Hidden Gem", "description": "A show."}).ID
	svc.SetOff(ctx, off, true, nil)
	featured := onairtest.CreateShow(t, env, ownerTok, map[string]any{"name": "Star Turn", "description": "A show."}).ID
	svc.SetFeatured(ctx, featured, true, nil)
	radioTok := func() string { _, tok := env.CreateUser("Radio Ray", onairtest.Radio); return tok }()
	radio := func() int64 {
		body := env.Do("POST", "/v1/shows", radioTok, map[string]any{"name": "All Day Radio", "description": "x", "radio": true}).Expect(t, 201).JSON(t)
		return onairtest.ID(body["show"].(map[string]any))
	}()

	all := mod.Get("/admin/shows").Expect(t, http.StatusOK)
	all.Contains(t, "Night Owls Live", "Hidden Gem", "Star Turn", "All Day Radio")
	for state, want := range map[string]string{
		"live": "Night Owls Live", "off": "Hidden Gem", "featured": "Star Turn", "radio": "All Day Radio", "today": "Star Turn",
	} {
		page := mod.Get("/admin/shows?state="+state).Expect(t, http.StatusOK).Contains(t, want)
		for _, other := range []string{"Night Owls Live", "Hidden Gem", "Star Turn", "All Day Radio"} {
			if other != want && strings.Contains(page.Body, ">"+other+"<") && state != "today" {
				t.Errorf("state=%s lists %q", state, other)
			}
		}
	}
	search := mod.Get("/admin/shows?q=gem").Expect(t, http.StatusOK).Contains(t, "Hidden Gem")
	if strings.Contains(search.Body, "Star Turn") {
		t.Error("search ignored")
	}
	mod.Get("/admin/shows?state=scheduled").Expect(t, http.StatusOK)
	mod.Get("/admin/shows?state=complete").Expect(t, http.StatusOK)
	mod.Get("/admin/shows?state=archived").Expect(t, http.StatusOK)

	// The peak: recorded by the live module as the audience grows.
	if err := svc.RecordPeak(ctx, live, 42); err != nil {
		t.Fatal(err)
	}
	mod.Get("/admin/shows?state=live").Contains(t, "Viewers now", "<th class=\"num\">Peak</th>", `<td class="num">42</td>`)
	mod.Get(fmt.Sprintf("/admin/shows/%d", live)).Contains(t, `<dd id="health">`, "not receiving", `<dt>Viewers now</dt><dd id="viewers">0</dd>`,
		`<dt>Peak viewers</dt><dd id="peak">42</dd>`, `action="/admin/shows/`+fmt.Sprint(live)+`/edit"`)
	// The console's edit does not open the API's PUT to staff: the spec
	// keeps it the owner's.
	_, modTok := env.CreateUser("Staff Token", onairtest.Role("moderator"))
	env.Do("PUT", fmt.Sprintf("/v1/shows/%d", live), modTok, map[string]any{"name": "Nope"}).Expect(t, http.StatusForbidden)
	detail := mod.Get(fmt.Sprintf("/admin/shows/%d", live)).Expect(t, http.StatusOK)
	detail.Contains(t, "Night Owls Live", "Open the player", env.URL+"/", env.URL+video, "Stop the broadcast", "Take off (stops it)", "Feature", "Delete")
	// The stream key stays its owner's, as docs/admin.md says: staff see
	// neither it nor a way to reveal it.
	liveShow, err := svc.Get(ctx, live)
	if err != nil {
		t.Fatal(err)
	}
	detail.Contains(t, "only its owner sees it")
	if liveShow.StreamKey == "" || strings.Contains(detail.Body, liveShow.StreamKey) {
		t.Error("the console's show page shows the stream key")
	}
	if doc, err := os.ReadFile("../../docs/admin.md"); err != nil || !strings.Contains(string(doc), "the stream key is not shown: only its owner sees it") {
		t.Errorf("docs/admin.md does not say the console keeps the stream key from staff (%v)", err)
	}
	mod.Get(fmt.Sprintf("/admin/shows/%d", off)).Expect(t, http.StatusOK).Contains(t, "Restore")
	mod.Get(fmt.Sprintf("/admin/shows/%d", featured)).Expect(t, http.StatusOK).Contains(t, "Unfeature")
	mod.Get(fmt.Sprintf("/admin/shows/%d", radio)).Expect(t, http.StatusOK).Contains(t, "radio")
	mod.Get("/admin/shows/0").Expect(t, http.StatusNotFound)

	dash := mod.Get("/admin").Expect(t, http.StatusOK)
	dash.Contains(t, `<div class="value">1</div><div class="label">Live now</div>`)
	dash.Contains(t, `<div class="value">4</div><div class="label">Shows today</div>`)
}
