package users_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/onair/onair/admin/admintest"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/users"
)

// TestConsoleStaffRank walks every console action on a user for a
// moderator and an admin against a plain user, another moderator and an
// admin: a moderator changes no other staff member (an admin least of
// all) and, on a plain user, does what the roles table says (everything
// but the role and deleting); an admin does everything to everyone. A
// refused action changes and audits nothing.
func TestConsoleStaffRank(t *testing.T) {
	env := admintest.NewEnv(t, "sqlite")
	svc := func() *users.Service { m, _ := onairtest.Module[*users.Module](env); return m.Service }()
	_, asModerator := admintest.Staff(t, env, "Rank Moderator", "moderator")
	_, asAdmin := admintest.Staff(t, env, "Rank Admin", "admin")
	actors := map[string]*admintest.Client{"moderator": asModerator, "admin": asAdmin}

	type target struct {
		u       *users.User
		tokenID int64
	}
	actions := []struct {
		name string
		path func(tg target) string
		form url.Values
		ok   int  // the answer when allowed
		mod  bool // a moderator may do it to a plain user
	}{
		{"edit the profile", func(tg target) string { return fmt.Sprintf("/admin/users/%d/profile", tg.u.ID) },
			url.Values{"name": {"Renamed By Staff"}, "location": {"Here"}, "description": {"changed"}}, http.StatusSeeOther, true},
		{"set the marks", func(tg target) string { return fmt.Sprintf("/admin/users/%d/flags", tg.u.ID) },
			url.Values{"dj": {"true"}, "featured": {"true"}}, http.StatusSeeOther, true},
		{"approve radio", func(tg target) string { return fmt.Sprintf("/admin/radio/%d/approve", tg.u.ID) }, nil, http.StatusSeeOther, true},
		{"revoke radio", func(tg target) string { return fmt.Sprintf("/admin/radio/%d/revoke", tg.u.ID) }, nil, http.StatusSeeOther, true},
		{"suspend", func(tg target) string { return fmt.Sprintf("/admin/users/%d/suspend", tg.u.ID) },
			url.Values{"suspended": {"true"}}, http.StatusSeeOther, true},
		{"make a reset link", func(tg target) string { return fmt.Sprintf("/admin/users/%d/reset", tg.u.ID) }, nil, http.StatusOK, true},
		{"issue a token", func(tg target) string { return fmt.Sprintf("/admin/users/%d/tokens", tg.u.ID) }, nil, http.StatusOK, true},
		{"revoke a token", func(tg target) string { return fmt.Sprintf("/admin/users/%d/tokens/%d/revoke", tg.u.ID, tg.tokenID) }, nil, http.StatusSeeOther, true},
		{"set the role", func(tg target) string { return fmt.Sprintf("/admin/users/%d/role", tg.u.ID) },
			url.Values{"role": {"moderator"}}, http.StatusSeeOther, false},
		{"delete", func(tg target) string { return fmt.Sprintf("/admin/users/%d/delete", tg.u.ID) }, nil, http.StatusSeeOther, false},
	}
	for _, a := range actions {
		for _, actor := range []string{"moderator", "admin"} {
			for _, role := range []string{"", "moderator", "admin"} {
				name := role
				if name == "" {
					name = "user"
				}
				t.Run(a.name+"/"+actor+" on "+name, func(t *testing.T) {
					u, _ := env.CreateUser("Rank Target", onairtest.Role(role), onairtest.Password(admintest.Password))
					setRadio(t, env, u.ID, a.name == "revoke radio")
					u, err := svc.Get(t.Context(), u.ID)
					if err != nil {
						t.Fatal(err)
					}
					form := a.form
					if role == "moderator" && a.name == "set the role" {
						// Still a change of rank: moderator to admin.
						form = url.Values{"role": {"admin"}}
					}
					tg := target{u: u, tokenID: consoleTokenID(t, env, u.ID)}
					audited := admintest.AuditCount(t, env, "")
					r := actors[actor].Post(a.path(tg), form)
					allowed := actor == "admin" || role == "" && a.mod
					if !allowed {
						r.Refused(t, actor)
						if n := admintest.AuditCount(t, env, ""); n != audited {
							t.Errorf("a refused action was audited (%d entries, were %d)", n, audited)
						}
						after, err := svc.Get(t.Context(), u.ID)
						if err != nil {
							t.Fatalf("the refused action's target: %v", err)
						}
						if after.Name != u.Name || after.Role != u.Role || after.DJ != u.DJ || after.Featured != u.Featured ||
							after.Radio != u.Radio || (after.SuspendedAt == nil) != (u.SuspendedAt == nil) {
							t.Errorf("a refused action changed the user: %+v → %+v", u, after)
						}
						tokens, err := svc.Tokens(t.Context(), u.ID)
						if err != nil || len(tokens) != 1 || tokens[0].RevokedAt != nil {
							t.Errorf("a refused action changed the tokens: %v %+v", err, tokens)
						}
						return
					}
					r.Expect(t, a.ok)
					if n := admintest.AuditCount(t, env, ""); n != audited+1 {
						t.Errorf("%d audit entries, want %d", n, audited+1)
					}
				})
			}
		}
	}
}
