package pages_test

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/shows"
)

var sessionAttr = regexp.MustCompile(`data-vs="([A-Za-z0-9_-]+)"`)

// TestViewerSessions: a live show's viewers are playback sessions. A
// plain client counts per User-Agent on one address, a garbled token
// counts as no token, and each player page's session counts once however
// often it polls; health, the studio, the console and the show page give
// the same number.
func TestViewerSessions(t *testing.T) {
	t.Parallel()
	env := onairtest.New(t, onairtest.Options{})
	dj := newPerson(t, env, "Count Dee")
	staff := newPerson(t, env, "Count Staff", onairtest.Role("admin"))
	created := onairtest.CreateShow(t, env, dj.token, map[string]any{"name": "Counted"})
	id, showPath := created.ID, created.Path
	master := path("/media/shows/%d/master.m3u8", id)
	video := env.URL + master
	onairtest.PublishShow(t, env, id, shows.Media{VideoURL: &video})
	poll := func(query, ua string) {
		t.Helper()
		req, _ := http.NewRequest("GET", env.URL+master+query, nil)
		req.Header.Set("User-Agent", ua)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	viewers := func() float64 {
		h := env.Do("GET", path("/v1/shows/%d/health", id), dj.token, nil).Expect(t, http.StatusOK).JSON(t)["health"].(map[string]any)
		return h["viewers"].(float64)
	}
	await := func(want float64) {
		t.Helper()
		testload.Poll(t, fmt.Sprintf("%g viewers", want), func() error {
			if n := viewers(); n != want {
				return fmt.Errorf("%g viewers", n)
			}
			return nil
		})
	}

	// A plain client: one viewer per User-Agent, however often it polls.
	poll("", "PlainPlayer/1")
	poll("", "PlainPlayer/1")
	poll("", "OtherPlayer/2")
	await(2)
	// A garbled or forged token is no token: the address and User-Agent.
	poll("?vs=garbage", "PlainPlayer/1")
	poll("?vs=AAAAAAAAAAAAAAAAAAAAAAAA", "OtherPlayer/2")
	await(2)

	// Two player pages on the same address and browser: two sessions.
	var tokens []string
	for range 2 {
		body := newVisitor(t, env).get(showPath).body
		m := sessionAttr.FindStringSubmatch(body)
		if m == nil || !strings.Contains(body, "master.m3u8?vs="+m[1]) {
			t.Fatalf("the live show's page has no session in its player's source:\n%s", body)
		}
		tokens = append(tokens, m[1])
	}
	if tokens[0] == tokens[1] {
		t.Fatalf("two page loads share the session %q", tokens[0])
	}
	for range 3 {
		for _, tok := range tokens {
			poll("?vs="+tok, "PlainPlayer/1")
		}
	}
	await(4)
	// Another show's session is no session of this one.
	otherShow := onairtest.CreateShow(t, env, dj.token, map[string]any{"name": "Other"})
	other, otherPath := otherShow.ID, otherShow.Path
	otherVideo := env.URL + path("/media/shows/%d/master.m3u8", other)
	onairtest.PublishShow(t, env, other, shows.Media{VideoURL: &otherVideo})
	m := sessionAttr.FindStringSubmatch(newVisitor(t, env).get(otherPath).body)
	if m == nil {
		t.Fatal("the other show's page has no session")
	}
	poll("?vs="+m[1], "ThirdPlayer/3") // counted as its address and User-Agent
	poll("?vs="+m[1], "ThirdPlayer/3")
	await(5)

	if p := dj.signedIn(t, env).get(path("/studio/shows/%d", id)); !strings.Contains(p.body, `<dd id="h-viewers">5</dd>`) {
		t.Errorf("the studio does not count 5 viewers:\n%s", p.body)
	}
	if p := staff.signedIn(t, env).get(path("/admin/shows/%d", id)); !strings.Contains(p.body, `<dd id="viewers">5</dd>`) {
		t.Errorf("the console does not count 5 viewers (%d):\n%s", p.status, p.body)
	}
	if p := newVisitor(t, env).get(showPath); !strings.Contains(p.body, `<span id="audience"><span id="viewers">5</span> watching</span>`) ||
		!regexp.MustCompile(`<span id="presence">\d+</span> in chat</span>`).MatchString(p.body) {
		t.Errorf("the show page does not count 5 watching apart from its chat:\n%s", p.body)
	}

	env.Do("POST", path("/v1/shows/%d/stop", id), dj.token, nil).Expect(t, http.StatusOK)
	await(0)
	// A stopped show's page starts no session.
	if m := sessionAttr.FindStringSubmatch(newVisitor(t, env).get(showPath).body); m != nil {
		t.Errorf("the stopped show's page has a session %q", m[1])
	}
}
