package pages_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/shows"
)

// TestStudioShowOptions: the studio form's end, audio-only and chat
// fields, posted without a script (urlencoded, with the form token), go
// through shows.Service: the API's rules beside the fields, the end read in
// the visitor's zone, and the pages show the result (ends at, listen mode,
// the chat off on the show page and the embed).
func TestStudioShowOptions(t *testing.T) {
	t.Parallel()
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env := onairtest.New(t, onairtest.Options{Backend: backend})
		dj := newPerson(t, env, "Option Filler")
		fan := newPerson(t, env, "Option Fan")
		me, them := dj.signedIn(t, env), fan.signedIn(t, env)
		future := time.Now().UTC().Add(48 * time.Hour).Truncate(time.Minute)
		local := func(t time.Time) string { return t.Format("2006-01-02T15:04") }
		start := local(future)

		for _, tc := range []struct {
			name, end, want string
		}{
			{"end before start", local(future.Add(-time.Hour)), "End must be after start"},
			{"end at start", start, "End must be after start"},
			{"end past 24 hours", local(future.Add(24*time.Hour + time.Minute)), "End must be at most 24 hours after start"},
			{"end not a time", "late", "End must be a date and time"},
		} {
			p := me.post("/studio/shows", studioForm(me.csrf, "starts_at", start, "ends_at", tc.end))
			if p.status != http.StatusUnprocessableEntity {
				t.Errorf("%s: %d, want 422", tc.name, p.status)
				continue
			}
			m := regexp.MustCompile(`id="err-ends_at"[^>]*>([^<]*)<`).FindStringSubmatch(p.body)
			if m == nil || !strings.Contains(m[1], tc.want) {
				t.Errorf("%s: no %q beside the end: %v", tc.name, tc.want, m)
			}
		}
		// At the 24 hour limit, typed in Paris: stored in UTC.
		paris, _ := time.LoadLocation("Europe/Paris")
		end := future.Add(24 * time.Hour)
		p := me.post("/studio/shows", studioForm(me.csrf, "starts_at", local(future.In(paris)), "ends_at", local(end.In(paris)),
			"tz", "Europe/Paris", "audio_only", "1", "chat_enabled", "1"))
		m := studioRedirect.FindStringSubmatch(p.header.Get("Location"))
		if p.status != http.StatusSeeOther || m == nil {
			t.Fatalf("create: %d to %q\n%s", p.status, p.header.Get("Location"), p.body)
		}
		var id int64
		fmt.Sscan(m[1], &id)
		sh := onairtest.GetShow(t, env, dj.token, id)
		if sh["ends_at"] != end.Format("2006-01-02 15:04:05") || sh["audio_only"] != true || sh["chat_enabled"] != true {
			t.Fatalf("created: ends_at %v audio_only %v chat_enabled %v", sh["ends_at"], sh["audio_only"], sh["chat_enabled"])
		}
		if list := me.get("/studio"); !strings.Contains(list.body, `to <time datetime="`+end.Format(time.RFC3339)+`"`) ||
			!strings.Contains(list.body, `<span class="badge">Audio only</span>`) {
			t.Errorf("the studio list lacks the end or the audio-only badge")
		}
		show := path("/studio/shows/%d", id)
		page := me.get(show)
		for _, want := range []string{`id="ends-at"`, "24 h planned", `name="ends_at" type="datetime-local" value="` + local(end) + `"`,
			`id="show-audio-only" name="audio_only" type="checkbox" value="1" checked`, `id="show-chat" name="chat_enabled" type="checkbox" value="1" checked`} {
			if !strings.Contains(page.body, want) {
				t.Errorf("the studio page lacks %q", want)
			}
		}

		// Edit: the box unticked turns the chat off, the emptied end goes.
		p = me.post(show, studioForm(me.csrf, "starts_at", start, "ends_at", "", "audio_only", "1"))
		if p.status != http.StatusSeeOther {
			t.Fatalf("edit: %d\n%s", p.status, p.body)
		}
		sh = onairtest.GetShow(t, env, dj.token, id)
		if sh["ends_at"] != nil || sh["chat_enabled"] != false || sh["audio_only"] != true {
			t.Fatalf("edited: ends_at %v chat_enabled %v audio_only %v", sh["ends_at"], sh["chat_enabled"], sh["audio_only"])
		}

		// The public page: listen mode, the chat off instead of the input.
		u, _ := url.Parse(sh["url"].(string))
		env.Do("PUT", path("/v1/shows/%d", id), dj.token, map[string]any{"ends_at": end.Format("2006-01-02 15:04:05")}).Expect(t, http.StatusOK)
		pub := them.get(u.Path)
		if !strings.Contains(pub.body, `<span id="ends-at">Ends at <time datetime="`+end.Format(time.RFC3339)+`"`) || !strings.Contains(pub.body, "(24 h planned)") {
			t.Errorf("the public page lacks the planned end")
		}
		if pub.status != 200 || !strings.Contains(pub.body, `<audio`) || strings.Contains(pub.body, ">Watch</a>") ||
			!strings.Contains(pub.body, "Audio only") {
			t.Errorf("public page of an audio-only show: %d, audio %v", pub.status, strings.Contains(pub.body, "<audio"))
		}
		if !regexp.MustCompile(`<p id="chat-off" class="hint">`).MatchString(pub.body) ||
			!regexp.MustCompile(`<form id="chat-form"[^>]* hidden`).MatchString(pub.body) {
			t.Errorf("public page with the chat off: chat-off shown %v, form hidden %v",
				strings.Contains(pub.body, `<p id="chat-off" class="hint">`), regexp.MustCompile(`<form id="chat-form"[^>]* hidden`).MatchString(pub.body))
		}
		if emb := them.get(path("/embed/%d?chat=1", id)); !strings.Contains(emb.body, `<p id="chat-off" class="hint">`) {
			t.Errorf("embed with the chat off lacks the notice")
		}
		// The form's post is refused by the chat service, in the error shape.
		r := them.do("POST", path("/chat/%d", id), url.Values{"csrf": {them.csrf}, "message": {"hi"}},
			map[string]string{"Accept": "application/json", "X-CSRF-Token": them.csrf})
		var body struct {
			Error struct {
				Status int    `json:"status"`
				Code   string `json:"code"`
			} `json:"error"`
		}
		if json.Unmarshal([]byte(r.body), &body); r.status != http.StatusForbidden || body.Error.Code != "chat_disabled" {
			t.Errorf("page chat post with the chat off: %d %s", r.status, r.body)
		}

		// Live: audio-only is settled (the box disabled and not sent), the
		// chat and the end still change; past the end the health warns.
		svc := shows.From(env.Core)
		onairtest.PublishShow(t, env, id, shows.Media{})
		page = me.get(show)
		if !regexp.MustCompile(`id="show-audio-only"[^>]* disabled`).MatchString(page.body) {
			t.Errorf("the audio-only box of a live show is not disabled")
		}
		later := time.Now().UTC().Add(2 * time.Hour).Truncate(time.Minute)
		p = me.post(show, studioForm(me.csrf, "ends_at", local(later), "chat_enabled", "1"))
		if p.status != http.StatusSeeOther {
			t.Fatalf("edit while live: %d\n%s", p.status, p.body)
		}
		if sh = onairtest.GetShow(t, env, dj.token, id); sh["audio_only"] != true || sh["chat_enabled"] != true || sh["ends_at"] != later.Format("2006-01-02 15:04:05") {
			t.Fatalf("edited while live: %v", sh)
		}
		past := time.Now().UTC().Add(-10 * time.Minute).Truncate(time.Second)
		if _, err := svc.DB().NewUpdate().Model((*shows.Show)(nil)).Set("ends_at = ?", past).Where("id = ?", id).Exec(context.Background()); err != nil {
			t.Fatal(err)
		}
		h := me.do("GET", show+"/health", nil, map[string]string{"Accept": "application/json"})
		if h.status != 200 || !strings.Contains(h.body, "the scheduled end") {
			t.Errorf("health past the end: %d %s", h.status, h.body)
		}
		if sh = onairtest.GetShow(t, env, dj.token, id); sh["live"] != true {
			t.Errorf("a show past its end stopped: %v", sh)
		}
	})
}
