package pages_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/onair/onair/internal/onairtest"
)

// TestStudioDestinations: the studio's Destinations page adds, edits and
// deletes a destination; its key is shown masked only (the page, the
// API), a bad URL is refused with its reason, another user sees none of
// it, and a POST without the form token is refused.
func TestStudioDestinations(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{})
	dj := newPerson(t, env, "Relay Jockey")
	b := dj.signedIn(t, env)
	const key = "live_12345_abcdefghijklmnop"

	p := b.get("/studio")
	if !strings.Contains(p.body, `href="/studio/destinations"`) {
		t.Fatalf("the studio has no link to the destinations")
	}
	p = b.get("/studio/destinations")
	if p.status != http.StatusOK || !strings.Contains(p.body, "No destinations yet.") {
		t.Fatalf("empty page %d:\n%s", p.status, p.body)
	}
	if r := b.post("/studio/destinations", url.Values{"name": {"Twitch"}, "url": {"rtmp://live.twitch.tv/app/" + key}, "enabled": {"1"}}); r.status != http.StatusForbidden {
		t.Fatalf("POST without the form token: %d", r.status)
	}
	r := b.post("/studio/destinations", url.Values{"csrf": {b.csrf}, "name": {"Twitch"}, "url": {"rtmp://live.twitch.tv/app/" + key}, "enabled": {"1"}})
	if r.status != http.StatusSeeOther {
		t.Fatalf("add: %d\n%s", r.status, r.body)
	}
	p = b.get("/studio/destinations")
	if strings.Contains(p.body, key) || strings.Contains(p.body, "ijkl") || !strings.Contains(p.body, "rtmp://live.twitch.tv/app/••••mnop") {
		t.Fatalf("the page shows the key, or not its masked form:\n%s", p.body)
	}
	list := env.Do("GET", "/v1/destinations", dj.token, nil).Expect(t, http.StatusOK)
	if strings.Contains(string(list.Body), key) {
		t.Fatalf("the API shows the key: %s", list.Body)
	}
	id := regexp.MustCompile(`data-destination="(\d+)"`).FindStringSubmatch(p.body)[1]

	// A bad URL: the reason, and the name typed kept.
	r = b.post("/studio/destinations", url.Values{"csrf": {b.csrf}, "name": {"Files"}, "url": {"ftp://example.com/live/key"}})
	if r.status != http.StatusUnprocessableEntity || !strings.Contains(r.body, "rtmp://") || !strings.Contains(r.body, `value="Files"`) {
		t.Fatalf("a bad URL: %d\n%s", r.status, r.body)
	}

	// Edit: the masked URL kept, the name changed, disabled.
	r = b.post("/studio/destinations/"+id, url.Values{"csrf": {b.csrf}, "name": {"Twitch main"}, "url": {"rtmp://live.twitch.tv/app/••••mnop"}})
	if r.status != http.StatusSeeOther {
		t.Fatalf("edit: %d\n%s", r.status, r.body)
	}
	d := env.Do("GET", "/v1/destinations/"+id, dj.token, nil).Expect(t, http.StatusOK).JSON(t)["destination"].(map[string]any)
	if d["name"] != "Twitch main" || d["enabled"] != false || d["url"] != "rtmp://live.twitch.tv/app/••••mnop" {
		t.Fatalf("after the edit: %v", d)
	}

	// Another user: neither the page nor the actions reach it.
	other := newPerson(t, env, "Someone Else").signedIn(t, env)
	if p := other.get("/studio/destinations"); strings.Contains(p.body, "data-destination") || strings.Contains(p.body, "Twitch main") {
		t.Fatalf("another user's page lists it:\n%s", p.body)
	}
	if r := other.post("/studio/destinations/"+id+"/delete", url.Values{"csrf": {other.csrf}}); r.status != http.StatusNotFound {
		t.Fatalf("another user's delete: %d", r.status)
	}

	r = b.post("/studio/destinations/"+id+"/delete", url.Values{"csrf": {b.csrf}})
	if r.status != http.StatusSeeOther {
		t.Fatalf("delete: %d\n%s", r.status, r.body)
	}
	if p := b.get("/studio/destinations"); !strings.Contains(p.body, "No destinations yet.") {
		t.Fatalf("after the delete:\n%s", p.body)
	}
	if strings.Contains(env.Logs(), key) {
		t.Errorf("the key is in the log")
	}
}
