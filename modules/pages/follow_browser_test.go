package pages_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/onair/onair/internal/browsertest"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/live"
)

// TestFollowBrowser: pages that follow the show, and its viewers, in
// Chromium, on each database. The studio page, the home page and the show
// page are open before the encoder starts: within 3 s of the show going
// live the studio shows LIVE and its Stop button, the home page lists the
// show under "Live now", and the show page plays it, all without a
// reload. Two players on one address (two tabs) are two viewers in the
// health, the studio and the console; after the stop there are none, the
// peak stays 2, the home page drops the show from "Live now" and the show
// page switches to the recording.
func TestFollowBrowser(t *testing.T) {
	t.Parallel()
	onairtest.EachBackend(t, followFlow)
}

func followFlow(t *testing.T, backend string) {
	// Two players play at once, one in a background tab: Chromium must
	// not hold that one back.
	br := &browser{t: t, ctx: browsertest.Start(t, chromedp.Flag("autoplay-policy", "no-user-gesture-required"),
		chromedp.Flag("disable-background-timer-throttling", true), chromedp.Flag("disable-renderer-backgrounding", true),
		chromedp.Flag("disable-backgrounding-occluded-windows", true))}
	env := onairtest.New(t, onairtest.Options{Backend: backend})
	dj := newPerson(t, env, "Follow Dee")
	staff := newPerson(t, env, "Follow Staff", onairtest.Role("admin"))
	start := time.Now().UTC().Add(2 * time.Hour).Format("2006-01-02 15:04:05")
	created := onairtest.CreateShow(t, env, dj.token, map[string]any{"name": "Followed Set", "start": start})
	id, showPath, key := created.ID, created.Path, created.Key

	studio, home, player, second := br.tab(), br.tab(), br.tab(), br.tab()
	do(t, studio,
		chromedp.Navigate(env.URL+"/signin"),
		chromedp.SetValue(chromedp.ID("email"), dj.user.Email),
		chromedp.SetValue(chromedp.ID("password"), dj.password),
		chromedp.Submit(chromedp.ID("password")),
		chromedp.WaitNotPresent(chromedp.ID("password")),
	)
	do(t, studio, chromedp.Navigate(env.URL+path("/studio/shows/%d", id)), chromedp.WaitVisible(chromedp.ID("studio-state")))
	if st := eval[string](t, studio, `document.getElementById('studio-state').dataset.state`); st != "scheduled" {
		t.Fatalf("the studio page says %q before the stream", st)
	}
	if eval[bool](t, studio, `!!document.getElementById('stop-show')`) {
		t.Fatal("a scheduled show's studio page has a Stop button")
	}
	do(t, home, chromedp.Navigate(env.URL+"/"), chromedp.WaitVisible(chromedp.ID("section-upcoming")))
	const inLive = `!!document.querySelector('#section-live') && [...document.querySelector('#section-live').parentElement.querySelectorAll('a')].some(a => a.textContent.includes('Followed Set'))`
	if eval[bool](t, home, inLive) {
		t.Fatal("the home page lists the show live before it is")
	}
	do(t, player, chromedp.Navigate(env.URL+showPath))
	waitFor(t, player, "the show page's chat socket", `document.getElementById('chat').hasAttribute('data-connected')`)
	// The pages' event streams are open before the encoder starts. A
	// mark on each window tells a page updated in place from one reloaded.
	waitFor(t, studio, "the studio's health stream", `document.getElementById('health').hasAttribute('data-updated')`)
	for _, tab := range []context.Context{studio, home, player} {
		do(t, tab, chromedp.Evaluate[chromedp.Void](`window.followMark = 1`))
	}

	lm, _ := onairtest.Module[*live.Module](env)
	publish(t, "rtmp://"+lm.RTMPAddr()+"/live/"+key, 600)
	onairtest.AwaitShow(t, env, dj.token, id, "live", func(s map[string]any) bool { return s["live"] == true })
	wentLive := time.Now()

	waitFor(t, studio, "the studio's Stop button", `!!document.getElementById('stop-show') && document.getElementById('studio-state').dataset.state === 'live'`)
	took := time.Since(wentLive)
	t.Logf("%s: the studio showed Stop %s after the API said live", backend, took.Round(time.Millisecond))
	if took > 3*time.Second {
		t.Errorf("the studio showed Stop %s after the show went live, want within 3 s", took)
	}
	if !eval[bool](t, studio, `window.followMark === 1`) {
		t.Error("the studio page reloaded")
	}
	do(t, home) // in front
	waitFor(t, home, "the home page's Live now", inLive)
	t.Logf("%s: the home page listed the show live %s after the API", backend, time.Since(wentLive).Round(time.Millisecond))

	// Two players, one address: two sessions, two viewers.
	do(t, player)
	waitFor(t, player, "the first player past 1 s", `document.getElementById('media').currentTime > 1`)
	if src := eval[string](t, player, `window.onairHls.url`); !strings.Contains(src, "?vs=") {
		t.Errorf("the player started by the show event plays %q, without the page's session", src)
	}
	do(t, second, chromedp.Navigate(env.URL+showPath))
	waitFor(t, second, "the second player past 1 s", `document.getElementById('media').currentTime > 1`)
	// Each media playlist reload carries the session the master gave it.
	waitFor(t, second, "media playlist reloads with the session", `performance.getEntriesByType('resource').some(r => /\/index\.m3u8\?vs=[\w-]{24}/.test(r.name))`)

	health := func() map[string]any {
		return env.Do("GET", path("/v1/shows/%d/health", id), dj.token, nil).Expect(t, http.StatusOK).JSON(t)["health"].(map[string]any)
	}
	testload.Poll(t, "2 viewers in the health", func() error {
		if h := health(); h["viewers"] != 2.0 {
			return fmt.Errorf("health %v", h)
		}
		return nil
	})
	waitFor(t, studio, "2 viewers in the studio", `document.getElementById('h-viewers').textContent === '2'`)
	// The show page, open since before the show went live, counts them
	// too, from its chat socket.
	do(t, player)
	waitFor(t, player, "2 watching on the show page", `!document.getElementById('audience').hidden && document.getElementById('viewers').textContent === '2'`)
	if p := staff.signedIn(t, env).get(path("/admin/shows/%d", id)); !strings.Contains(p.body, `<dd id="viewers">2</dd>`) {
		t.Errorf("the console does not count 2 viewers (%d)", p.status)
	}
	testload.Poll(t, "the peak of 2 recorded", func() error {
		if s := onairtest.GetShow(t, env, dj.token, id); s["peak_viewers"] != 2.0 {
			return fmt.Errorf("peak_viewers %v", s["peak_viewers"])
		}
		return nil
	})

	// The stop, from the studio page's button.
	do(t, studio, chromedp.Evaluate[chromedp.Void](`window.confirm = () => true`), chromedp.Click(chromedp.ID("stop-show")))
	onairtest.AwaitShow(t, env, dj.token, id, "archived", func(s map[string]any) bool { return s["archive"] == true })
	if h := health(); h["viewers"] != 0.0 || h["peak_viewers"] != 2.0 {
		t.Errorf("health after the stop: %v, want 0 viewers, peak 2", h)
	}
	if s := onairtest.GetShow(t, env, dj.token, id); s["peak_viewers"] != 2.0 {
		t.Errorf("peak_viewers after the stop: %v", s["peak_viewers"])
	}
	do(t, home)
	waitFor(t, home, "the show off the home page's Live now", `!(`+inLive+`)`)
	do(t, player)
	waitFor(t, player, "the show page on the recording", `document.getElementById('player').hasAttribute('data-recording') && /archive/.test(document.getElementById('player').dataset.src)`)
	if eval[bool](t, player, `!document.getElementById('audience').hidden`) {
		t.Error("the show page still counts viewers after the stop")
	}
	for name, tab := range map[string]context.Context{"show": player, "home": home} {
		if !eval[bool](t, tab, `window.followMark === 1`) {
			t.Errorf("the %s page reloaded", name)
		}
	}
}
