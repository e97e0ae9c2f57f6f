package pages_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/onair/onair/internal/onairtest"
)

// TestHomeSearchAndTabs: the home page's search finds shows and people,
// its tabs list one kind of show, and both page through long lists.
func TestHomeSearchAndTabs(t *testing.T) {
	t.Parallel()
	env := onairtest.New(t, onairtest.Options{})
	dj := newPerson(t, env, "Needle Dropper")
	newPerson(t, env, "Vinyl Needle Fan")
	base := time.Now().UTC().Add(24 * time.Hour).Truncate(time.Second)
	for i := range 30 {
		onairtest.CreateShow(t, env, dj.token, map[string]any{"name": fmt.Sprintf("Upcoming %02d", i), "start": base.Add(time.Duration(i) * time.Hour).Format("2006-01-02 15:04:05")})
	}
	onairtest.CreateShow(t, env, dj.token, map[string]any{"name": "Secret Needle", "private": true})
	anon := newVisitor(t, env)
	cards := regexp.MustCompile(`<h3><a href="[^"]+">([^<]+)</a></h3>`)
	names := func(body string) []string {
		var out []string
		for _, m := range cards.FindAllStringSubmatch(body, -1) {
			out = append(out, m[1])
		}
		return out
	}

	home := anon.get("/")
	if !strings.Contains(home.body, `role="search"`) || !strings.Contains(home.body, `href="/?tab=upcoming"`) {
		t.Error("the home page has no search box or no tabs")
	}
	p1 := anon.get("/?tab=upcoming")
	got := names(p1.body)
	if p1.status != 200 || len(got) != 24 || got[0] != "Upcoming 00" || got[23] != "Upcoming 23" {
		t.Errorf("upcoming page 1: %d, %d shows %v", p1.status, len(got), got)
	}
	if !strings.Contains(p1.body, `rel="next" href="/?page=2&amp;tab=upcoming"`) || strings.Contains(p1.body, `rel="prev"`) {
		t.Error("upcoming page 1 lacks the link to page 2")
	}
	p2 := anon.get("/?tab=upcoming&page=2")
	if got := names(p2.body); len(got) != 6 || got[0] != "Upcoming 24" || !strings.Contains(p2.body, `rel="prev" href="/?tab=upcoming"`) || strings.Contains(p2.body, `rel="next"`) {
		t.Errorf("upcoming page 2: %v", got)
	}
	if p := anon.get("/?tab=live"); !strings.Contains(p.body, `id="no-results"`) {
		t.Error("an empty tab does not say so")
	}

	s := anon.get("/?q=needle")
	if s.status != 200 || !strings.Contains(s.body, "Vinyl Needle Fan") || !strings.Contains(s.body, "Needle Dropper") {
		t.Errorf("search for people: %d", s.status)
	}
	if strings.Contains(s.body, "Secret Needle") {
		t.Error("search shows a private show")
	}
	if s := anon.get("/?q=upcoming+2"); len(names(s.body)) != 10 {
		t.Errorf("search 'upcoming 2' found %v", names(s.body))
	}
	if s := anon.get("/?q=upcoming&page=2"); len(names(s.body)) != 6 || !strings.Contains(s.body, `rel="prev" href="/?q=upcoming"`) {
		t.Errorf("search page 2: %v", names(s.body))
	}
	for _, bad := range []string{"/?page=0", "/?page=x", "/?q=" + strings.Repeat("a", 201), "/?q=%00"} {
		if p := anon.get(bad); p.status != 400 {
			t.Errorf("GET %s: %d, want 400", bad, p.status)
		}
	}
}
