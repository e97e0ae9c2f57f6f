package users_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/onair/onair/admin"
	"github.com/onair/onair/admin/admintest"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/users"
)

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

// v1User reads a user through the API.
func v1User(t *testing.T, env *onairtest.Env, id int64) map[string]any {
	t.Helper()
	_, tok := env.CreateUser("Reader")
	return env.Do("GET", fmt.Sprintf("/v1/users/%d", id), tok, nil).Expect(t, http.StatusOK).JSON(t)["user"].(map[string]any)
}

type fixture struct {
	user    *users.User
	token   string
	tokenID int64
	admin   *users.User // another admin
}

func TestConsoleUserActions(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env := admintest.NewEnv(t, backend)
		visitors := map[string]*admintest.Client{}
		for _, kind := range admintest.Roles {
			visitors[kind] = admintest.Visitor(t, env, kind)
		}
		tests := []struct {
			name string
			// setup may change the user before the action.
			setup  func(t *testing.T, f *fixture)
			path   func(f *fixture) string
			form   func(f *fixture) url.Values
			status map[string]int // staff answers by role; default 303
			audit  string
			check  func(t *testing.T, f *fixture, r *admintest.Response, before, after map[string]any)
		}{
			{name: "approve radio",
				setup: func(t *testing.T, f *fixture) {
					env.Do("POST", "/v1/users/me/radio_request", f.token, nil).Expect(t, http.StatusOK)
				},
				path:  func(f *fixture) string { return fmt.Sprintf("/admin/radio/%d/approve", f.user.ID) },
				audit: "users.radio_approve",
				check: func(t *testing.T, f *fixture, r *admintest.Response, before, after map[string]any) {
					if before["radio_requested"] != true || before["radio"] != false || after["radio"] != true || after["radio_requested"] != false {
						t.Errorf("audit %v → %v", before, after)
					}
					if v1User(t, env, f.user.ID)["radio"] != true {
						t.Error("/v1 radio is not true")
					}
					env.Do("POST", "/v1/shows", f.token, map[string]any{"name": "R", "description": "r", "radio": true}).Expect(t, http.StatusCreated)
				}},
			{name: "revoke radio",
				setup: func(t *testing.T, f *fixture) { setRadio(t, env, f.user.ID, true) },
				path:  func(f *fixture) string { return fmt.Sprintf("/admin/radio/%d/revoke", f.user.ID) },
				audit: "users.radio_revoke",
				check: func(t *testing.T, f *fixture, r *admintest.Response, before, after map[string]any) {
					if before["radio"] != true || after["radio"] != false {
						t.Errorf("audit %v → %v", before, after)
					}
					env.Do("POST", "/v1/shows", f.token, map[string]any{"name": "R", "description": "r", "radio": true}).Expect(t, http.StatusForbidden)
				}},
			{name: "set marks",
				path: func(f *fixture) string { return fmt.Sprintf("/admin/users/%d/flags", f.user.ID) },
				form: func(*fixture) url.Values {
					return url.Values{"dj": {"true"}, "featured": {"true"}}
				},
				audit: "users.flags",
				check: func(t *testing.T, f *fixture, r *admintest.Response, before, after map[string]any) {
					if before["dj"] != false || after["dj"] != true || after["featured"] != true || after["producer"] != false {
						t.Errorf("audit %v → %v", before, after)
					}
					u := v1User(t, env, f.user.ID)
					if u["dj"] != true || u["featured"] != true || u["producer"] != false {
						t.Errorf("/v1 dj=%v featured=%v producer=%v", u["dj"], u["featured"], u["producer"])
					}
				}},
			{name: "make moderator",
				path:   func(f *fixture) string { return fmt.Sprintf("/admin/users/%d/role", f.user.ID) },
				form:   func(*fixture) url.Values { return url.Values{"role": {"moderator"}} },
				status: map[string]int{"moderator": http.StatusForbidden},
				audit:  "users.role",
				check: func(t *testing.T, f *fixture, r *admintest.Response, before, after map[string]any) {
					if before["role"] != "" || after["role"] != "moderator" {
						t.Errorf("audit %v → %v", before, after)
					}
					// The new moderator gets into the console.
					c := admintest.New(t, env)
					c.SignIn(f.user.Email, admintest.Password).Expect(t, http.StatusSeeOther)
				}},
			{name: "take a role away",
				setup:  func(t *testing.T, f *fixture) { f.user = f.admin },
				path:   func(f *fixture) string { return fmt.Sprintf("/admin/users/%d/role", f.user.ID) },
				form:   func(*fixture) url.Values { return url.Values{"role": {""}} },
				status: map[string]int{"moderator": http.StatusForbidden},
				audit:  "users.role",
				check: func(t *testing.T, f *fixture, r *admintest.Response, before, after map[string]any) {
					if before["role"] != "admin" || after["role"] != "" {
						t.Errorf("audit %v → %v", before, after)
					}
					c := admintest.New(t, env)
					c.SignIn(f.user.Email, admintest.Password).Expect(t, http.StatusForbidden)
				}},
			{name: "bad role",
				path:   func(f *fixture) string { return fmt.Sprintf("/admin/users/%d/role", f.user.ID) },
				form:   func(*fixture) url.Values { return url.Values{"role": {"owner"}} },
				status: map[string]int{"admin": http.StatusUnprocessableEntity, "moderator": http.StatusForbidden}},
			{name: "create a user",
				path: func(*fixture) string { return "/admin/users" },
				form: func(*fixture) url.Values {
					return url.Values{"name": {"New Person"}, "email": {"new-" + randomSuffix() + "@example.com"}, "password": {"long enough"}, "dj": {"true"}}
				},
				audit: "users.create",
				check: func(t *testing.T, f *fixture, r *admintest.Response, before, after map[string]any) {
					if before != nil || after["name"] != "New Person" || after["dj"] != true || after["password_set"] != true || after["role"] != "" {
						t.Errorf("audit %v → %v", before, after)
					}
					if _, ok := after["password"]; ok {
						t.Error("the audit log holds a password")
					}
				}},
			{name: "create an admin",
				path: func(*fixture) string { return "/admin/users" },
				form: func(*fixture) url.Values {
					return url.Values{"name": {"New Admin"}, "email": {"admin-" + randomSuffix() + "@example.com"}, "role": {"admin"}}
				},
				status: map[string]int{"moderator": http.StatusForbidden},
				audit:  "users.create",
				check: func(t *testing.T, f *fixture, r *admintest.Response, before, after map[string]any) {
					if after["role"] != "admin" {
						t.Errorf("audit after %v", after)
					}
				}},
			{name: "issue a token",
				path:   func(f *fixture) string { return fmt.Sprintf("/admin/users/%d/tokens", f.user.ID) },
				form:   func(*fixture) url.Values { return url.Values{"label": {"laptop"}} },
				status: map[string]int{"admin": http.StatusOK, "moderator": http.StatusOK},
				audit:  "tokens.issue",
				check: func(t *testing.T, f *fixture, r *admintest.Response, before, after map[string]any) {
					token := tokenRe.FindString(r.Body)
					if token == "" {
						t.Fatal("the new token is not on the page")
					}
					r.Contains(t, "shown only this once")
					if after["label"] != "laptop" || !strings.HasPrefix(token, after["prefix"].(string)) || strings.Contains(fmt.Sprint(after), token) {
						t.Errorf("audit after %v", after)
					}
					me := env.Do("GET", "/v1/users/me", token, nil).Expect(t, http.StatusOK).JSON(t)["user"].(map[string]any)
					if me["id"] != float64(f.user.ID) {
						t.Errorf("the token is of user %v", me["id"])
					}
					// Shown once: the user's page no longer has it.
					if strings.Contains(visitorsGet(t, env, f.user.ID), token) {
						t.Error("the token is shown again")
					}
				}},
			{name: "issue a token for another admin",
				setup:  func(t *testing.T, f *fixture) { f.user = f.admin },
				path:   func(f *fixture) string { return fmt.Sprintf("/admin/users/%d/tokens", f.user.ID) },
				status: map[string]int{"admin": http.StatusOK, "moderator": http.StatusForbidden},
				audit:  "tokens.issue",
				check:  func(t *testing.T, f *fixture, r *admintest.Response, before, after map[string]any) {}},
			{name: "revoke a token",
				path: func(f *fixture) string {
					return fmt.Sprintf("/admin/users/%d/tokens/%d/revoke", f.user.ID, f.tokenID)
				},
				audit: "tokens.revoke",
				check: func(t *testing.T, f *fixture, r *admintest.Response, before, after map[string]any) {
					if before["revoked_at"] != nil || after["revoked_at"] == nil {
						t.Errorf("audit %v → %v", before, after)
					}
					env.Do("GET", "/v1/users/me", f.token, nil).Expect(t, http.StatusUnauthorized)
				}},
		}
		for _, tt := range tests {
			for _, kind := range admintest.Roles {
				t.Run(tt.name+"/"+kind, func(t *testing.T) {
					f := &fixture{}
					f.user, f.token = env.CreateUser("Someone", onairtest.Password(admintest.Password))
					f.tokenID = consoleTokenID(t, env, f.user.ID)
					f.admin, _ = env.CreateUser("Other Admin", onairtest.Role("admin"), onairtest.Password(admintest.Password))
					if tt.setup != nil {
						tt.setup(t, f)
					}
					var form url.Values
					if tt.form != nil {
						form = tt.form(f)
					}
					before := admintest.AuditCount(t, env, tt.audit)
					r := visitors[kind].Post(tt.path(f), form)
					entries := admintest.Audit(t, env, admin.AuditQuery{Action: tt.audit})
					if kind == "user" || kind == "signed-out" {
						r.Refused(t, kind)
						if tt.audit != "" && len(entries) != before {
							t.Errorf("a refused action was audited")
						}
						return
					}
					want := http.StatusSeeOther
					if s, ok := tt.status[kind]; ok {
						want = s
					}
					r.Expect(t, want)
					if want >= 400 || tt.audit == "" {
						if tt.audit != "" && len(entries) != before {
							t.Errorf("a refused action was audited")
						}
						return
					}
					if len(entries) != before+1 {
						t.Fatalf("%d %s entries, want %d", len(entries), tt.audit, before+1)
					}
					e := entries[0]
					if e.ActorID == 0 {
						t.Error("no actor")
					}
					tt.check(t, f, r, decode(t, e.Before), decode(t, e.After))
				})
			}
		}
	})
}

var tokenRe = regexp.MustCompile(users.TokenPrefix + `[0-9a-f]{64}`)

var suffix int

func randomSuffix() string { suffix++; return fmt.Sprint(suffix) }

func setRadio(t *testing.T, env *onairtest.Env, id int64, on bool) {
	t.Helper()
	m, _ := onairtest.Module[*users.Module](env)
	if _, err := m.Service.SetRadio(t.Context(), id, on); err != nil {
		t.Fatal(err)
	}
}

func consoleTokenID(t *testing.T, env *onairtest.Env, userID int64) int64 {
	t.Helper()
	m, _ := onairtest.Module[*users.Module](env)
	list, err := m.Service.Tokens(t.Context(), userID)
	if err != nil || len(list) == 0 {
		t.Fatalf("tokens: %v", err)
	}
	return list[0].ID
}

// visitorsGet reads a user's console page as a fresh admin.
func visitorsGet(t *testing.T, env *onairtest.Env, id int64) string {
	t.Helper()
	_, c := admintest.Staff(t, env, "Reader Admin", "admin")
	return c.Get(fmt.Sprintf("/admin/users/%d", id)).Expect(t, http.StatusOK).Body
}

func TestConsoleUserRules(t *testing.T) {
	env := admintest.NewEnv(t, "sqlite")
	ann, adm := admintest.Staff(t, env, "Ann", "admin")
	mo, mod := admintest.Staff(t, env, "Mo", "moderator")

	t.Run("nobody changes their own role", func(t *testing.T) {
		adm.Post(fmt.Sprintf("/admin/users/%d/role", ann.ID), url.Values{"role": {""}}).Expect(t, http.StatusConflict)
		if admintest.AuditCount(t, env, "users.role") != 0 {
			t.Error("audited")
		}
	})
	t.Run("a moderator manages their own tokens", func(t *testing.T) {
		mod.Post(fmt.Sprintf("/admin/users/%d/tokens", mo.ID), nil).Expect(t, http.StatusOK)
	})
	t.Run("a moderator does not see the role form", func(t *testing.T) {
		u, _ := env.CreateUser("Target")
		page := mod.Get(fmt.Sprintf("/admin/users/%d", u.ID)).Expect(t, http.StatusOK)
		if strings.Contains(page.Body, "/role") {
			t.Error("role form shown to a moderator")
		}
		adm.Get(fmt.Sprintf("/admin/users/%d", u.ID)).Expect(t, http.StatusOK).Contains(t, fmt.Sprintf("/admin/users/%d/role", u.ID))
		if strings.Contains(mod.Get("/admin/users").Body, `name="role"`) {
			t.Error("a moderator is offered a role for new users")
		}
	})
	t.Run("revoking twice", func(t *testing.T) {
		u, _ := env.CreateUser("Twice")
		id := consoleTokenID(t, env, u.ID)
		path := fmt.Sprintf("/admin/users/%d/tokens/%d/revoke", u.ID, id)
		adm.Post(path, nil).Expect(t, http.StatusSeeOther)
		adm.Post(path, nil).Expect(t, http.StatusConflict)
		// A token of another user is not found through this user.
		other, _ := env.CreateUser("Other")
		adm.Post(fmt.Sprintf("/admin/users/%d/tokens/%d/revoke", other.ID, consoleTokenID(t, env, u.ID)), nil).Expect(t, http.StatusNotFound)
	})
	t.Run("pages", func(t *testing.T) {
		waiting, tok := env.CreateUser("Wanda Waiting")
		env.Do("POST", "/v1/users/me/radio_request", tok, nil).Expect(t, http.StatusOK)
		// Asking twice changes nothing.
		u := env.Do("POST", "/v1/users/me/radio_request", tok, nil).Expect(t, http.StatusOK).JSON(t)["user"].(map[string]any)
		if u["radio"] != false || u["id"] != float64(waiting.ID) {
			t.Errorf("answer %v", u)
		}
		approved, _ := env.CreateUser("Rita Radio", onairtest.Radio)
		page := mod.Get("/admin/radio").Expect(t, http.StatusOK)
		page.Contains(t, "Wanda Waiting", "Rita Radio", fmt.Sprintf("/admin/radio/%d/approve", waiting.ID), fmt.Sprintf("/admin/radio/%d/revoke", approved.ID))
		mod.Get("/admin/users?q=wanda").Expect(t, http.StatusOK).Contains(t, "Wanda Waiting", "radio requested")
		if strings.Contains(mod.Get("/admin/users?q=wanda").Body, "Rita Radio") {
			t.Error("search ignored")
		}
		mod.Get("/admin/users?q="+url.QueryEscape(approved.Email)).Expect(t, http.StatusOK).Contains(t, "Rita Radio")
		mod.Get("/admin").Expect(t, http.StatusOK).Contains(t, `<div class="value">1</div><div class="label">Radio requests</div>`)
		mod.Get("/admin/users/999999").Expect(t, http.StatusNotFound)
		mod.Post("/admin/radio/999999/approve", nil).Expect(t, http.StatusNotFound)
	})
}
