package users_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/onair/onair/admin"
	"github.com/onair/onair/admin/admintest"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/shows"
)

// TestConsoleAccounts: staff edit a user's profile, suspend and restore
// them (tokens, sessions and sign-in stop; their live show stops), and
// make a one-time password reset link; each success is audited, and the
// refused ones change nothing.
func TestConsoleAccounts(t *testing.T) {
	t.Parallel()
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env := admintest.NewEnv(t, backend)
		_, mod := admintest.Staff(t, env, "Mod Erator", "moderator")
		adminUser, adm := admintest.Staff(t, env, "Ad Min", "admin")
		_, userClient := admintest.SignedInUser(t, env, "Plain Visitor")
		userClient.Get(admin.Prefix)
		dj, djToken := env.CreateUser("Dee Jay", onairtest.Password(admintest.Password))
		djBrowser := admintest.New(t, env)
		if r := djBrowser.SignIn(dj.Email, admintest.Password); r.Status != http.StatusForbidden {
			t.Fatalf("a non-staff sign-in to the console: %d", r.Status)
		}
		djWeb := admintest.New(t, env)
		djWeb.Get("/signin")
		djWeb.Post("/signin", url.Values{"email": {dj.Email}, "password": {admintest.Password}}).Expect(t, http.StatusSeeOther)
		djWeb.Get("/account").Expect(t, http.StatusOK)
		userPath := fmt.Sprintf("/admin/users/%d", dj.ID)
		mod.Get(userPath).Expect(t, http.StatusOK).Contains(t, "Save profile", "Suspend (stops their live show)", "Make a password reset link")

		// Profile.
		userClient.Post(userPath+"/profile", url.Values{"name": {"Hijacked"}}).Refused(t, "user")
		mod.Post(userPath+"/profile", url.Values{"name": {""}}).Expect(t, http.StatusUnprocessableEntity)
		mod.Post(userPath+"/profile", url.Values{"name": {"Dee Jay Renamed"}, "location": {"Berlin"}, "description": {"Techno."}}).Expect(t, http.StatusSeeOther)
		me := env.Do("GET", "/v1/users/me", djToken, nil).Expect(t, http.StatusOK).JSON(t)["user"].(map[string]any)
		if me["name"] != "Dee Jay Renamed" || me["location"] != "Berlin" || me["description"] != "Techno." {
			t.Errorf("after the staff edit: %v", me)
		}
		if e := admintest.LastAudit(t, env, "users.profile", admin.Target("user", dj.ID)); !strings.Contains(admintest.Value(e.After), "Berlin") {
			t.Errorf("audit after: %s", admintest.Value(e.After))
		}

		// Suspend: the live show stops, the token and the session die.
		id := onairtest.CreateShow(t, env, djToken, map[string]any{"name": "Live Now", "description": "x"}).ID
		svc := shows.From(env.Core)
		video := "/media/shows/x/index.m3u8"
		onairtest.PublishShow(t, env, id, shows.Media{VideoURL: &video})
		userClient.Post(userPath+"/suspend", url.Values{"suspended": {"true"}}).Refused(t, "user")
		mod.Post(fmt.Sprintf("/admin/users/%d/suspend", adminUser.ID), url.Values{"suspended": {"true"}}).Expect(t, http.StatusForbidden)
		adm.Post(fmt.Sprintf("/admin/users/%d/suspend", adminUser.ID), url.Values{"suspended": {"true"}}).Expect(t, http.StatusConflict)
		mod.Post(userPath+"/suspend", url.Values{"suspended": {"maybe"}}).Expect(t, http.StatusUnprocessableEntity)
		env.Do("GET", "/v1/users/me", djToken, nil).Expect(t, http.StatusOK)
		mod.Post(userPath+"/suspend", url.Values{"suspended": {"true"}}).Expect(t, http.StatusSeeOther)
		env.Do("GET", "/v1/users/me", djToken, nil).Expect(t, http.StatusUnauthorized)
		djWeb.Get("/account").Expect(t, http.StatusSeeOther)
		again := admintest.New(t, env)
		again.Get("/signin")
		if r := again.Post("/signin", url.Values{"email": {dj.Email}, "password": {admintest.Password}}); r.Status != http.StatusForbidden || !strings.Contains(r.Body, "This account is suspended") || strings.Contains(r.Body, "do not match") {
			t.Errorf("a suspended user signing in with the right password: %d %s", r.Status, r.Body)
		}
		// A wrong password learns nothing of the suspension.
		if r := again.Post("/signin", url.Values{"email": {dj.Email}, "password": {"not the password"}}); r.Status != http.StatusUnauthorized || strings.Contains(r.Body, "suspended") {
			t.Errorf("a wrong password for a suspended user: %d", r.Status)
		}
		if r := admintest.New(t, env).SignIn(dj.Email, admintest.Password); r.Status != http.StatusForbidden || !strings.Contains(r.Body, "This account is suspended") {
			t.Errorf("a suspended user signing in to the console: %d %s", r.Status, r.Body)
		}
		if sh, _ := svc.Get(context.Background(), id); sh.Live || !sh.Complete {
			t.Errorf("the suspended user's show: live %v complete %v", sh.Live, sh.Complete)
		}
		if e := admintest.LastAudit(t, env, "users.suspend", admin.Target("user", dj.ID)); !strings.Contains(admintest.Value(e.After), fmt.Sprintf(`"stopped_shows":[%d]`, id)) {
			t.Errorf("audit after: %s", admintest.Value(e.After))
		}
		mod.Get(userPath).Contains(t, `id="suspended"`, "Lift the suspension")
		mod.Post(userPath+"/suspend", url.Values{"suspended": {"false"}}).Expect(t, http.StatusSeeOther)
		env.Do("GET", "/v1/users/me", djToken, nil).Expect(t, http.StatusOK)
		admintest.LastAudit(t, env, "users.unsuspend", admin.Target("user", dj.ID))

		// The reset link: shown once, works once.
		userClient.Post(userPath+"/reset", nil).Refused(t, "user")
		mod.Post(fmt.Sprintf("/admin/users/%d/reset", adminUser.ID), nil).Expect(t, http.StatusForbidden)
		page := mod.Post(userPath+"/reset", nil).Expect(t, http.StatusOK)
		link := regexp.MustCompile(regexp.QuoteMeta(env.URL) + `(/reset/[0-9a-f]{64})`).FindStringSubmatch(page.Body)
		if link == nil {
			t.Fatalf("no reset link on the page:\n%s", page.Body)
		}
		if page.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("the page with the link is cacheable: %q", page.Header.Get("Cache-Control"))
		}
		if strings.Contains(mod.Get(userPath).Body, link[1]) {
			t.Error("the link is shown again")
		}
		admintest.LastAudit(t, env, "users.reset_link", admin.Target("user", dj.ID))
		visitor := admintest.New(t, env)
		visitor.Get(link[1]).Expect(t, http.StatusOK).Contains(t, "Dee Jay Renamed")
		visitor.Post(link[1], url.Values{"password": {"a brand new one"}, "password_confirm": {"not the same"}}).Expect(t, http.StatusUnprocessableEntity)
		visitor.Post(link[1], url.Values{"password": {"short"}, "password_confirm": {"short"}}).Expect(t, http.StatusUnprocessableEntity)
		visitor.PostNoCSRF(link[1], url.Values{"password": {"a brand new one"}, "password_confirm": {"a brand new one"}}).Expect(t, http.StatusForbidden)
		visitor.Post(link[1], url.Values{"password": {"a brand new one"}, "password_confirm": {"a brand new one"}}).Expect(t, http.StatusSeeOther)
		visitor.Get("/account").Expect(t, http.StatusOK)
		admintest.New(t, env).Get(link[1]).Expect(t, http.StatusNotFound)
		old := admintest.New(t, env)
		old.Get("/signin")
		if r := old.Post("/signin", url.Values{"email": {dj.Email}, "password": {admintest.Password}}); r.Status == http.StatusSeeOther {
			t.Error("the old password still signs in")
		}
		admintest.New(t, env).Get("/reset/"+strings.Repeat("0", 64)).Expect(t, http.StatusNotFound)

		// Delete (admins only): the user's shows, their chat messages
		// elsewhere, their follows go with them.
		gone, goneToken := env.CreateUser("Gone Soon")
		goneShow := onairtest.CreateShow(t, env, goneToken, map[string]any{"name": "Last Set", "description": "x"}).ID
		env.Do("POST", fmt.Sprintf("/v1/shows/%d/chats", id), goneToken, map[string]any{"message": "bye"}).Expect(t, 201)
		env.Do("POST", fmt.Sprintf("/v1/users/%d/follow", dj.ID), goneToken, nil).Expect(t, 200)
		goneChats := func() float64 {
			return env.Do("GET", fmt.Sprintf("/v1/shows/%d", id), djToken, nil).Expect(t, 200).JSON(t)["show"].(map[string]any)["comments_count"].(float64)
		}
		if goneChats() != 1 {
			t.Fatalf("comments_count before the delete: %v", goneChats())
		}
		gonePath := fmt.Sprintf("/admin/users/%d/delete", gone.ID)
		userClient.Post(gonePath, nil).Refused(t, "user")
		mod.Post(gonePath, nil).Expect(t, http.StatusForbidden)
		adm.Post(fmt.Sprintf("/admin/users/%d/delete", adminUser.ID), nil).Expect(t, http.StatusConflict)
		adm.Get(fmt.Sprintf("/admin/users/%d", gone.ID)).Contains(t, "Delete the user")
		adm.Post(gonePath, nil).Expect(t, http.StatusSeeOther)
		env.Do("GET", fmt.Sprintf("/v1/users/%d", gone.ID), djToken, nil).Expect(t, http.StatusNotFound)
		env.Do("GET", fmt.Sprintf("/v1/shows/%d", goneShow), djToken, nil).Expect(t, http.StatusNotFound)
		env.Do("GET", "/v1/users/me", goneToken, nil).Expect(t, http.StatusUnauthorized)
		if n := goneChats(); n != 0 {
			t.Errorf("comments_count after the author was deleted: %v", n)
		}
		var followers int
		if err := env.Core.DB.NewRaw("SELECT followers_count FROM users WHERE id = ?", dj.ID).Scan(context.Background(), &followers); err != nil {
			t.Fatal(err)
		}
		if followers != 0 {
			t.Errorf("followers_count of the followed user after the delete: %d", followers)
		}
		if e := admintest.LastAudit(t, env, "users.delete", admin.Target("user", gone.ID)); !strings.Contains(admintest.Value(e.Before), fmt.Sprintf(`"deleted_shows":[%d]`, goneShow)) {
			t.Errorf("audit before: %s", admintest.Value(e.Before))
		}
	})
}
