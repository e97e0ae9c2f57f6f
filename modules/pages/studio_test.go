package pages_test

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
)

// studioForm is a valid create/edit form; tweak fields per scenario.
func studioForm(csrf string, kv ...string) url.Values {
	f := url.Values{"csrf": {csrf}, "name": {"Studio Set"}, "description": {"Made in the studio."}, "tags": {"deep house, live"}, "tz": {"UTC"}}
	for i := 0; i+1 < len(kv); i += 2 {
		f.Set(kv[i], kv[i+1])
	}
	return f
}

var studioRedirect = regexp.MustCompile(`^/studio/shows/(\d+)\?saved=1$`)

// TestStudioAccess: who may open which studio page and post which form.
// Another user's show is a 404 on every studio route (staff use the
// console); forms without the session's token are refused.
func TestStudioAccess(t *testing.T) {
	t.Parallel()
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env := onairtest.New(t, onairtest.Options{Backend: backend})
		owner := newPerson(t, env, "Stu Dio")
		other := newPerson(t, env, "Lis Tener")
		staff := newPerson(t, env, "Mo Derator", onairtest.Role("admin"))
		created := onairtest.CreateShow(t, env, owner.token, map[string]any{"name": "Owned Set"})
		id, key := created.ID, created.Key
		anon, me, them, mod := newVisitor(t, env), owner.signedIn(t, env), other.signedIn(t, env), staff.signedIn(t, env)
		show := path("/studio/shows/%d", id)

		for _, tc := range []struct {
			name     string
			who      *browserless
			path     string
			status   int
			contains string
		}{
			{"signed out sees how to get in", anon, "/studio", 200, "Sign up"},
			{"signed out is sent to sign in", anon, "/studio/shows/new", 303, ""},
			{"signed out, a show's studio page", anon, show, 303, ""},
			{"the owner's list", me, "/studio", 200, "Owned Set"},
			{"another's list lacks the show", them, "/studio", 200, "New show"},
			{"the owner's form", me, "/studio/shows/new", 200, `name="starts_at"`},
			{"the owner's show", me, show, 200, "Set up OBS"},
			{"another user's show", them, show, 404, ""},
			{"staff, another's show", mod, show, 404, ""},
			{"another user's delete page", them, show + "/delete", 404, ""},
			{"the owner's delete page", me, show + "/delete", 200, "Delete the show"},
			{"no such show", me, "/studio/shows/999999", 404, ""},
			{"not a number", me, "/studio/shows/abc", 404, ""},
		} {
			p := tc.who.get(tc.path)
			if p.status != tc.status {
				t.Errorf("%s: GET %s: %d, want %d", tc.name, tc.path, p.status, tc.status)
				continue
			}
			if tc.contains != "" && !strings.Contains(p.body, tc.contains) {
				t.Errorf("%s: GET %s lacks %q", tc.name, tc.path, tc.contains)
			}
			if strings.Contains(p.body, key) {
				t.Errorf("%s: GET %s shows the stream key unasked", tc.name, tc.path)
			}
		}
		if strings.Contains(them.get("/studio").body, "Owned Set") {
			t.Error("another user's studio lists the show")
		}

		// Every form of another user's show: 404, nothing changed.
		for _, p := range []string{show, show + "/stop", show + "/delete", show + "/key", show + "/key/regenerate"} {
			r := them.post(p, studioForm(them.csrf, "name", "Hijacked"))
			if r.status != 404 || strings.Contains(r.body, key) {
				t.Errorf("another user POST %s: %d", p, r.status)
			}
		}
		// Without the token, or from another site: 403.
		for _, p := range []string{"/studio/shows", show, show + "/stop", show + "/delete", show + "/key", show + "/key/regenerate"} {
			if r := me.post(p, studioForm("")); r.status != 403 {
				t.Errorf("POST %s without the form token: %d, want 403", p, r.status)
			}
			if r := me.do("POST", p, studioForm(me.csrf), map[string]string{"Sec-Fetch-Site": "cross-site"}); r.status != 403 {
				t.Errorf("POST %s from another site: %d, want 403", p, r.status)
			}
		}
		if r := anon.post("/studio/shows", studioForm("")); r.status != 401 {
			t.Errorf("a signed-out POST /studio/shows: %d, want 401", r.status)
		}
		sh := onairtest.GetShow(t, env, owner.token, id)
		if sh["name"] != "Owned Set" {
			t.Errorf("the show changed: %v", sh["name"])
		}
		// The owner sees the key only on request, and not cached.
		p := me.post(show+"/key", url.Values{"csrf": {me.csrf}})
		if p.status != 200 || !strings.Contains(p.body, key) || p.header.Get("Cache-Control") != "no-store" {
			t.Errorf("the owner revealing the key: %d, shown %v, Cache-Control %q", p.status, strings.Contains(p.body, key), p.header.Get("Cache-Control"))
		}
		p = me.post(show+"/key/regenerate", url.Values{"csrf": {me.csrf}})
		if fresh := regexp.MustCompile(`sk_\d+_[0-9A-Za-z]{22}`).FindString(p.body); p.status != 200 || fresh == "" || fresh == key {
			t.Errorf("regenerate: %d, new key %q", p.status, fresh)
		}
	})
}

// TestStudioForm: the create and edit form applies the API's rules
// (shows.Service), and shows each problem beside its field.
func TestStudioForm(t *testing.T) {
	t.Parallel()
	env := onairtest.New(t, onairtest.Options{})
	dj := newPerson(t, env, "Form Filler")
	me := dj.signedIn(t, env)
	future := time.Now().UTC().Add(48 * time.Hour).Truncate(time.Minute)
	longName := strings.Repeat("n", 101)
	var tooMany []string
	for i := range 11 {
		tooMany = append(tooMany, fmt.Sprintf("tag%d", i))
	}

	for _, tc := range []struct {
		name  string
		form  url.Values
		field string // the id of the error beside the field
		want  string
	}{
		{"name missing", studioForm(me.csrf, "name", " "), "err-name", "Name is required"},
		{"name too long", studioForm(me.csrf, "name", longName), "err-name", "Name must be at most 100 characters"},
		{"description too long", studioForm(me.csrf, "description", strings.Repeat("d", 5001)), "err-description", "Description must be at most 5000 characters"},
		{"start in the past", studioForm(me.csrf, "starts_at", "2001-01-01T10:00"), "err-starts_at", "Start must be in the future"},
		{"start not a time", studioForm(me.csrf, "starts_at", "next friday"), "err-starts_at", "Start must be a date and time"},
		{"start in an unknown zone", studioForm(me.csrf, "starts_at", future.Format("2006-01-02T15:04"), "tz", "Mars/Olympus"), "err-starts_at", "Start must be a date and time"},
		{"too many tags", studioForm(me.csrf, "tags", strings.Join(tooMany, ",")), "err-tags", "Tags"},
		{"radio without approval", studioForm(me.csrf, "radio", "1"), "form-problem", "radio shows need a user approved for radio"},
	} {
		p := me.post("/studio/shows", tc.form)
		if p.status != http.StatusUnprocessableEntity {
			t.Errorf("%s: %d, want 422", tc.name, p.status)
			continue
		}
		m := regexp.MustCompile(`id="` + tc.field + `"[^>]*>([^<]*)<`).FindStringSubmatch(p.body)
		if m == nil || !strings.Contains(m[1], tc.want) {
			t.Errorf("%s: no %q beside the field (%s): %v", tc.name, tc.want, tc.field, m)
		}
		if !strings.Contains(p.body, `value="`+tc.form.Get("description")+`"`) && !strings.Contains(p.body, ">"+tc.form.Get("description")+"</textarea>") {
			t.Errorf("%s: the form lost what was typed", tc.name)
		}
	}
	if n := len(env.Do("GET", "/v1/users/me/shows?scheduled=true", dj.token, nil).Expect(t, 200).JSON(t)["shows"].([]any)); n != 0 {
		t.Fatalf("refused forms created %d shows", n)
	}

	// A start typed in Paris is stored in UTC.
	paris, _ := time.LoadLocation("Europe/Paris")
	local := future.In(paris)
	p := me.post("/studio/shows", studioForm(me.csrf, "starts_at", local.Format("2006-01-02T15:04"), "tz", "Europe/Paris", "private", "1"))
	m := studioRedirect.FindStringSubmatch(p.header.Get("Location"))
	if p.status != 303 || m == nil {
		t.Fatalf("create: %d to %q\n%s", p.status, p.header.Get("Location"), p.body)
	}
	var id int64
	fmt.Sscan(m[1], &id)
	sh := onairtest.GetShow(t, env, dj.token, id)
	if sh["start"] != future.Format("2006-01-02 15:04:05") || sh["private"] != true || len(sh["tags"].([]any)) != 2 {
		t.Errorf("created show: start %v (want %s), private %v, tags %v", sh["start"], future.Format("2006-01-02 15:04:05"), sh["private"], sh["tags"])
	}
	page := me.get(p.header.Get("Location"))
	if !strings.Contains(page.body, `id="saved"`) || !strings.Contains(page.body, `value="`+future.Format("2006-01-02T15:04")+`"`) {
		t.Errorf("the studio page after create lacks the notice or the start in UTC")
	}

	// Edit: rename, clear the tags, public; the unchanged start is kept.
	show := path("/studio/shows/%d", id)
	p = me.post(show, studioForm(me.csrf, "name", "Renamed Set", "tags", "", "starts_at", future.Format("2006-01-02T15:04")))
	if p.status != 303 {
		t.Fatalf("edit: %d\n%s", p.status, p.body)
	}
	sh = onairtest.GetShow(t, env, dj.token, id)
	if sh["name"] != "Renamed Set" || sh["private"] != false || len(sh["tags"].([]any)) != 0 || sh["start"] != future.Format("2006-01-02 15:04:05") {
		t.Errorf("edited show: %v", sh)
	}
	// The description is optional in the studio (the API requires one,
	// as the v1 spec does): emptied, it is saved empty.
	if p := me.post(show, studioForm(me.csrf, "name", "Renamed Set", "description", "")); p.status != 303 {
		t.Errorf("edit with no description: %d\n%s", p.status, p.body)
	} else if d := onairtest.GetShow(t, env, dj.token, id)["description"]; d != "" {
		t.Errorf("the emptied description reads %q", d)
	}
	if p := me.post("/studio/shows", studioForm(me.csrf, "name", "Name Only", "description", "")); p.status != 303 {
		t.Errorf("create without a description: %d\n%s", p.status, p.body)
	}
	env.Do("POST", "/v1/shows", dj.token, map[string]any{"name": "API Without"}).Expect(t, http.StatusUnprocessableEntity)
	env.Do("POST", "/v1/shows", dj.token, map[string]any{"name": "API Blank", "description": " "}).Expect(t, http.StatusUnprocessableEntity)

	// Stop a show that is not live: the API's 409, as a page.
	if p := me.post(show+"/stop", url.Values{"csrf": {me.csrf}}); p.status != 409 {
		t.Errorf("stop a show that is not live: %d, want 409", p.status)
	}
	// Delete, after the confirmation page.
	if p := me.get(show + "/delete"); p.status != 200 || !strings.Contains(p.body, "Renamed Set") {
		t.Errorf("delete confirmation: %d", p.status)
	}
	if p := me.post(show+"/delete", url.Values{"csrf": {me.csrf}}); p.status != 303 || p.header.Get("Location") != "/studio?deleted=1" {
		t.Errorf("delete: %d to %q", p.status, p.header.Get("Location"))
	}
	env.Do("GET", path("/v1/shows/%d", id), dj.token, nil).Expect(t, 404)
	if p := me.get(show); p.status != 404 {
		t.Errorf("the studio page of a deleted show: %d", p.status)
	}
}

// TestStudioListsEveryIngestAddress: with the SRT listener on, a show's
// studio page lists RTMP and SRT with OBS settings for each; the SRT URL
// carries the key only once the owner reveals it.
func TestStudioListsEveryIngestAddress(t *testing.T) {
	t.Parallel()
	env := onairtest.New(t, onairtest.Options{Configure: func(c *app.Config) { c.Set("ONAIR_SRT_ADDR", "127.0.0.1:0") }})
	owner := newPerson(t, env, "Many Ways")
	created := onairtest.CreateShow(t, env, owner.token, map[string]any{"name": "Any Protocol"})
	id, key := created.ID, created.Key
	me := owner.signedIn(t, env)
	show := path("/studio/shows/%d", id)
	p := me.get(show)
	if p.status != 200 || !strings.Contains(p.body, `id="ingest-rtmp"`) || !strings.Contains(p.body, `id="ingest-srt"`) ||
		!strings.Contains(p.body, "?streamid=(your stream key)") || strings.Contains(p.body, key) || strings.Contains(p.body, `id="ingest-rtmps"`) {
		t.Fatalf("studio page %d:\n%s", p.status, p.body)
	}
	p = me.post(show+"/key", url.Values{"csrf": {me.csrf}})
	if p.status != 200 || !strings.Contains(p.body, "?streamid="+key) || !strings.Contains(p.body, "Stream Key: empty") {
		t.Fatalf("studio page with the key shown %d:\n%s", p.status, p.body)
	}
}
