package pages_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/onair/onair/internal/onairtest"
)

// TestChatOnThePage: messages render with their time, the host's badge
// and safe links; the show's owner deletes a message and bans its author
// from the page (a listener may not), each form with its token.
func TestChatOnThePage(t *testing.T) {
	t.Parallel()
	env := onairtest.New(t, onairtest.Options{})
	host := newPerson(t, env, "Hosty Host")
	fan := newPerson(t, env, "Chatty Fan")
	other := newPerson(t, env, "Other Listener")
	created := onairtest.CreateShow(t, env, host.token, map[string]any{"name": "Talk Show"})
	id, showPath := created.ID, created.Path
	post := func(p person, text string) int64 {
		t.Helper()
		r := env.Do("POST", path("/v1/shows/%d/chats", id), p.token, map[string]any{"message": text}).Expect(t, http.StatusCreated)
		return onairtest.ID(r.JSON(t)["chat"].(map[string]any))
	}
	post(host, "welcome, everyone")
	msg := post(fan, `see https://example.com/set?a=1&b=2. and javascript:alert(1) <b>bold</b>`)

	page := newVisitor(t, env).get(showPath)
	for _, want := range []string{
		`<a href="https://example.com/set?a=1&amp;b=2" rel="nofollow ugc noopener" target="_blank">https://example.com/set?a=1&amp;b=2</a>. and javascript:alert(1) &lt;b&gt;bold&lt;/b&gt;`,
		`<span class="badge role-host">host</span>`,
		`data-ago>`,
	} {
		if !strings.Contains(page.body, want) {
			t.Errorf("the show page lacks %s", want)
		}
	}
	if strings.Contains(page.body, `href="javascript`) {
		t.Error("a javascript: text became a link")
	}
	if strings.Contains(page.body, `data-mod="delete"`) {
		t.Error("an anonymous visitor sees moderation forms")
	}

	me, them := host.signedIn(t, env), other.signedIn(t, env)
	if p := me.get(showPath); !strings.Contains(p.body, `data-mod="delete"`) || !strings.Contains(p.body, path(`/chat/%d/users/%d/ban`, id, fan.user.ID)) {
		t.Error("the host sees no delete or ban form")
	}
	if p := them.get(showPath); strings.Contains(p.body, `data-mod=`) {
		t.Error("a listener sees moderation forms")
	}
	del := path("/chat/%d/messages/%d/delete", id, msg)
	ban := path("/chat/%d/users/%d/ban", id, fan.user.ID)
	for _, tc := range []struct {
		name   string
		who    *browserless
		path   string
		form   url.Values
		status int
	}{
		{"a listener deletes", them, del, url.Values{"csrf": {them.csrf}}, 403},
		{"a listener bans", them, ban, url.Values{"csrf": {them.csrf}}, 403},
		{"the host without the token", me, del, url.Values{}, 403},
		{"the host, a message of another show", me, path("/chat/%d/messages/%d/delete", id+1000, msg), url.Values{"csrf": {me.csrf}}, 404},
		{"the host bans nobody", me, path("/chat/%d/users/999999/ban", id), url.Values{"csrf": {me.csrf}}, 404},
		{"the host deletes", me, del, url.Values{"csrf": {me.csrf}}, 303},
		{"the host bans", me, ban, url.Values{"csrf": {me.csrf}}, 303},
	} {
		if p := tc.who.post(tc.path, tc.form); p.status != tc.status {
			t.Errorf("%s: %d, want %d", tc.name, p.status, tc.status)
		}
	}
	env.Do("GET", path("/v1/shows/%d/chats/%d", id, msg), host.token, nil).Expect(t, http.StatusNotFound)
	if r := env.Do("POST", path("/v1/shows/%d/chats", id), fan.token, map[string]any{"message": "am I banned?"}); r.Status != http.StatusForbidden {
		t.Errorf("the banned fan posts: %d, want 403", r.Status)
	}
	// The script's JSON answer.
	msg2 := post(other, "one more")
	p := me.do("POST", path("/chat/%d/messages/%d/delete", id, msg2), url.Values{"csrf": {me.csrf}}, map[string]string{"Accept": "application/json"})
	if p.status != 200 || !strings.Contains(p.body, `"ok":true`) {
		t.Errorf("JSON delete: %d %s", p.status, p.body)
	}
}
