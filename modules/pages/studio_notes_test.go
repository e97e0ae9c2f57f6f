package pages_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/shows"
)

// TestStudioEarlyStart is a DJ who schedules a show from 6:15 to 8:12 and
// goes live an hour early: the studio page gives the time left to the
// planned end, not a "planned" length counted from the early start, and
// once the show has run the list says when it really ended, not the plan.
func TestStudioEarlyStart(t *testing.T) {
	t.Parallel()
	env := onairtest.New(t, onairtest.Options{})
	dj := newPerson(t, env, "Early Bird")
	now := time.Now().UTC().Truncate(time.Minute)
	start, end := now.Add(61*time.Minute), now.Add(178*time.Minute) // 1 h 57 min planned
	id := onairtest.CreateShow(t, env, dj.token, map[string]any{"name": "Early Set",
		"start": start.Format("2006-01-02 15:04:05"), "ends_at": end.Format("2006-01-02 15:04:05")}).ID
	me := dj.signedIn(t, env)
	studio := path("/studio/shows/%d", id)
	endsAt := regexp.MustCompile(`(?s)<span id="ends-at">(.*?)</span>`)
	text := func(html string) string {
		return strings.Join(strings.Fields(regexp.MustCompile(`<[^>]+>`).ReplaceAllString(html, "")), " ")
	}

	if m := endsAt.FindStringSubmatch(me.get(studio).body); m == nil || !strings.Contains(text(m[1]), "(1 h 57 min planned)") {
		t.Fatalf("the scheduled show's end: %q %v", m, onairtest.GetShow(t, env, dj.token, id)["ends_at"])
	}
	svc := shows.From(env.Core)
	onairtest.PublishShow(t, env, id, shows.Media{})
	got := me.get(studio)
	m := endsAt.FindStringSubmatch(got.body)
	if m == nil {
		t.Fatalf("the live show's page has no end:\n%s", got.body)
	}
	// Live now with about 2 h 58 min to go: the time left, nothing planned.
	if note := text(m[1]); strings.Contains(note, "planned") || !regexp.MustCompile(`^ends at .* \(2 h (5[5-9]|60) min left\)$`).MatchString(note) {
		t.Errorf("the live show's end reads %q, want the time left to %s", note, end)
	}
	if pub := them(t, env).get(showURL(t, env, dj, id)); !strings.Contains(text(endsAt.FindString(pub.body)), "min left)") {
		t.Errorf("the public page of the live show: %q", text(endsAt.FindString(pub.body)))
	}

	// It ran 1:05 and stopped: the list says it ended 1:05 after its start.
	if _, err := svc.Stop(context.Background(), id, nil); err != nil {
		t.Fatal(err)
	}
	sh, err := svc.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.DB().NewUpdate().Model((*shows.Show)(nil)).Set("duration = ?", 3900).Where("id = ?", id).Exec(context.Background()); err != nil {
		t.Fatal(err)
	}
	ended := sh.Start.Add(3900 * time.Second).UTC()
	list := me.get("/studio").body
	row := regexp.MustCompile(`(?s)<li data-show="` + regexp.QuoteMeta(path("%d", id)) + `">.*?</li>`).FindString(list)
	if !strings.Contains(row, `to <time datetime="`+ended.Format(time.RFC3339)+`"`) || strings.Contains(row, end.Format(time.RFC3339)) || !strings.Contains(row, "1:05:00") {
		t.Errorf("the finished show's row should run from its start to %s (1:05:00 later):\n%s", ended, row)
	}
	if m := endsAt.FindStringSubmatch(me.get(studio).body); m == nil || !strings.HasPrefix(text(m[1]), "ended at") || strings.Contains(m[1], "planned") {
		t.Errorf("the finished show's page: %q", m)
	}
}

func them(t *testing.T, env *onairtest.Env) *browserless { return newVisitor(t, env) }

func showURL(t *testing.T, env *onairtest.Env, p person, id int64) string {
	t.Helper()
	u, _ := url.Parse(onairtest.GetShow(t, env, p.token, id)["url"].(string))
	return u.Path
}

// TestStudioNotes: what the studio says after a delete, and beside the
// fields a live show no longer lets change, in plain words.
func TestStudioNotes(t *testing.T) {
	t.Parallel()
	env := onairtest.New(t, onairtest.Options{})
	dj := newPerson(t, env, "Note Taker")
	id := onairtest.CreateShow(t, env, dj.token, map[string]any{"name": "Gone Soon"}).ID
	keep := onairtest.CreateShow(t, env, dj.token, map[string]any{"name": "Live Set"}).ID
	me := dj.signedIn(t, env)

	if before := me.get("/studio").body; strings.Contains(before, `id="deleted"`) {
		t.Error("the studio announces a delete nobody made")
	}
	r := me.post(path("/studio/shows/%d/delete", id), url.Values{"csrf": {me.csrf}})
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/studio?deleted=1" {
		t.Fatalf("delete: %d to %q", r.status, r.header.Get("Location"))
	}
	after := me.get(r.header.Get("Location")).body
	if !regexp.MustCompile(`<p class="saved" role="status" id="deleted">The show was deleted`).MatchString(after) || strings.Contains(after, "Gone Soon") {
		t.Errorf("/studio?deleted=1 does not say the show was deleted")
	}

	onairtest.PublishShow(t, env, keep, shows.Media{})
	page := me.get(path("/studio/shows/%d", keep)).body
	for _, want := range []string{
		"The show went live at this time, so its start can no longer change.",
		"The show has gone live, so whether it is audio only can no longer change.",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the live show's form lacks %q", want)
		}
	}
	for _, odd := range []string{"its start is when it did", "audio only is settled"} {
		if strings.Contains(page, odd) {
			t.Errorf("the live show's form still says %q", odd)
		}
	}
}

// TestSignInLink: the header's "Sign in" brings the visitor back to the
// page they were on, and on the sign-in and sign-up pages keeps where
// those lead instead of nesting next= inside next=.
func TestSignInLink(t *testing.T) {
	t.Parallel()
	env := onairtest.New(t, onairtest.Options{})
	anon := newVisitor(t, env)
	link := regexp.MustCompile(`<li><a href="([^"]*)">Sign in</a></li>`)
	for _, tc := range []struct{ page, want string }{
		{"/", "/signin"},
		{"/studio", "/signin?next=%2Fstudio"},
		{"/signin?next=%2Fstudio", "/signin?next=%2Fstudio"},
		{"/signin", "/signin"},
		{"/signup?next=%2Faccount", "/signin?next=%2Faccount"},
		{"/signin?next=https%3A%2F%2Fevil.example", "/signin"},
		{"/docs", "/signin?next=%2Fdocs"},
	} {
		p := anon.get(tc.page)
		m := link.FindStringSubmatch(p.body)
		if m == nil {
			t.Errorf("%s: no sign-in link (%d)", tc.page, p.status)
			continue
		}
		if got := strings.ReplaceAll(m[1], "&amp;", "&"); got != tc.want {
			t.Errorf("%s: the header's sign-in link is %q, want %q", tc.page, got, tc.want)
		}
	}
}

// TestAudioOnlyPage: an audio-only show's page plays one way, so it has
// no "Listen (audio only)" toggle standing alone, and, live, it counts
// its players as listening; a video show keeps the choice and
// "watching". The chat counts the people in it apart.
func TestAudioOnlyPage(t *testing.T) {
	t.Parallel()
	env := onairtest.New(t, onairtest.Options{})
	dj := newPerson(t, env, "Radio Head")
	audio := onairtest.CreateShow(t, env, dj.token, map[string]any{"name": "Talk Hour", "audio_only": true}).ID
	video := onairtest.CreateShow(t, env, dj.token, map[string]any{"name": "Visual Set"}).ID
	anon := newVisitor(t, env)
	for _, live := range []bool{false, true} {
		if live {
			for _, id := range []int64{audio, video} {
				onairtest.PublishShow(t, env, id, shows.Media{})
			}
		}
		a := anon.get(showURL(t, env, dj, audio)).body
		if strings.Contains(a, `aria-label="Player mode"`) || strings.Contains(a, "Listen (audio only)") {
			t.Errorf("live %v: the audio-only show's page has a mode toggle", live)
		}
		if live != regexp.MustCompile(`<span id="audience"><span id="viewers">\d+</span> listening</span>`).MatchString(a) {
			t.Errorf("live %v: the audio-only show's page does not count its listeners (only while live)", live)
		}
		if !regexp.MustCompile(`<span id="presence">\d+</span> in chat</span>`).MatchString(a) {
			t.Errorf("live %v: the audio-only show's chat does not count the people in it", live)
		}
		// The artwork beside the audio controls is no play button.
		art := regexp.MustCompile(`<div class="player audio"[^>]*>\s*<img src="([^"]+)"`).FindStringSubmatch(a)
		if art == nil {
			t.Fatalf("live %v: the audio-only show's player has no artwork", live)
		}
		u, _ := url.Parse(art[1])
		svg := env.Do("GET", u.RequestURI(), "", nil).Expect(t, http.StatusOK)
		if strings.Contains(string(svg.Body), "<path") {
			t.Errorf("live %v: the audio player's artwork %s has a play mark", live, art[1])
		}
		v := anon.get(showURL(t, env, dj, video)).body
		if poster := regexp.MustCompile(`poster="([^"]+placeholder\.svg)"`).FindStringSubmatch(v); poster == nil {
			t.Errorf("live %v: the video show's poster is not the placeholder", live)
		} else if u, _ := url.Parse(poster[1]); !strings.Contains(string(env.Do("GET", u.RequestURI(), "", nil).Expect(t, http.StatusOK).Body), "<path") {
			t.Errorf("live %v: the video placeholder lost its play mark", live)
		}
		if !strings.Contains(v, `aria-label="Player mode"`) || live != regexp.MustCompile(`<span id="audience"><span id="viewers">\d+</span> watching</span>`).MatchString(v) {
			t.Errorf("live %v: the video show's page lost its mode toggle or its watchers", live)
		}
	}
}
