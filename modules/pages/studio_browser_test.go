package pages_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/live"
)

// TestStudioBrowser is a new DJ running a show from the studio on a phone,
// in a real Chromium whose clock is in New York, on each database: sign
// up, create a show with a start in their own zone and an image uploaded
// through the form, see the image on their page, reveal the key,
// broadcast with ffmpeg, see it live, stop it, watch the recording and
// delete it, each from the page. Screenshots of every state of the show
// page, the studio and the console's user editor are saved per database.
func TestStudioBrowser(t *testing.T) {
	t.Parallel()
	onairtest.EachBackend(t, studioFlow)
}

func studioFlow(t *testing.T, backend string) {
	br := newBrowser(t)
	env := onairtest.New(t, onairtest.Options{Backend: backend})
	shot := func(tab context.Context, url, name string) { t.Helper(); screenshot(t, tab, url, backend+"-"+name) }
	dj := br.tab()
	ctx, cancel := context.WithTimeout(dj, testload.Patience)
	if _, err := chromedp.Call(ctx, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "America/New_York"}); err != nil {
		t.Fatal(err)
	}
	cancel()
	phone := chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile)
	noOverflow := func(what string) {
		t.Helper()
		if eval[bool](t, dj, `document.documentElement.scrollWidth > window.innerWidth + 1`) {
			t.Errorf("%s scrolls sideways at 390 px", what)
		}
	}

	do(t, dj, phone,
		chromedp.Navigate(env.URL+"/signup"),
		chromedp.SetValue(chromedp.ID("name"), "New Dee"),
		chromedp.SetValue(chromedp.ID("email"), "newdee@example.com"),
		chromedp.SetValue(chromedp.ID("password"), "a long secret"),
		chromedp.Click(chromedp.CSS(`form.stack button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`form[action="/account/tokens"]`)),
		chromedp.Navigate(env.URL+"/studio"),
		chromedp.WaitVisible(chromedp.ID("new-show")),
	)
	noOverflow("the empty studio")
	if !strings.Contains(eval[string](t, dj, `document.body.textContent`), "no shows yet") {
		t.Error("an empty studio does not say so")
	}

	// The start is typed in New York time; the API stores UTC.
	ny, _ := time.LoadLocation("America/New_York")
	start := time.Now().Add(72 * time.Hour).In(ny).Truncate(time.Minute)
	do(t, dj,
		chromedp.Click(chromedp.ID("new-show")),
		chromedp.WaitVisible(chromedp.ID("show-name")),
	)
	noOverflow("the new show form")
	if tz := eval[string](t, dj, `document.querySelector('input[name=tz]').value`); tz != "America/New_York" {
		t.Errorf("the form sends zone %q, want the browser's America/New_York", tz)
	}
	// First a mistake: no name (the description may stay empty). The
	// error is beside the field.
	do(t, dj,
		chromedp.SetValue(chromedp.ID("show-start"), start.Format("2006-01-02T15:04")),
		chromedp.Click(chromedp.CSS(`.studio-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.ID("err-name")),
	)
	if eval[bool](t, dj, `!!document.getElementById('err-description')`) {
		t.Error("the form refuses an empty description")
	}
	if got := eval[string](t, dj, `document.getElementById('show-start').value`); got != start.Format("2006-01-02T15:04") {
		t.Errorf("after a refused form the start reads %q, want %q in the browser's zone", got, start.Format("2006-01-02T15:04"))
	}
	// The image goes up with the form, as a file chosen in the browser.
	picture := filepath.Join(t.TempDir(), "rooftop.png")
	if err := os.WriteFile(picture, sunrisePNG(t, 1600, 1200), 0o644); err != nil {
		t.Fatal(err)
	}
	do(t, dj,
		chromedp.SetValue(chromedp.ID("show-name"), "Rooftop Sunrise"),
		chromedp.SetValue(chromedp.ID("show-description"), "Deep house as the sun comes up."),
		chromedp.SetValue(chromedp.ID("show-tags"), "Deep House, Sunrise"),
		chromedp.SetUploadFiles(chromedp.ID("show-image"), []string{picture}),
		chromedp.Click(chromedp.CSS(`.studio-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.ID("saved")),
	)
	var id int64
	loc := eval[string](t, dj, `location.pathname`)
	if _, err := fmt.Sscanf(loc, "/studio/shows/%d", &id); err != nil {
		t.Fatalf("after create the browser is at %q", loc)
	}
	sh, err := showService(env).Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if !sh.Start.Equal(start.UTC()) || sh.Name != "Rooftop Sunrise" || len(sh.Tags) != 2 {
		t.Errorf("created: start %s (want %s), name %q, %d tags", sh.Start.UTC(), start.UTC(), sh.Name, len(sh.Tags))
	}
	if sh.ImageKey == nil {
		t.Fatal("the show was created without the image uploaded with the form")
	}
	image := showService(env).View(sh, false).ImageURL
	// The studio shows the image beside the form, and the DJ's page on
	// the card of the show: loaded, a real picture.
	loaded := func(tab context.Context, what, selector string) {
		t.Helper()
		waitFor(t, tab, what, fmt.Sprintf(`(() => { const i = document.querySelector(%q); return !!i && i.complete && i.naturalWidth === 1280 && i.naturalHeight === 720; })()`, selector))
	}
	loaded(dj, "the image in the studio", fmt.Sprintf(`#show-image-preview[src=%q]`, image))
	do(t, dj, chromedp.Navigate(env.URL+"/"+sh.User.Slug))
	loaded(dj, "the image on the DJ's page", fmt.Sprintf(`.card img[src=%q]`, image))
	do(t, dj, chromedp.Navigate(env.URL+fmt.Sprintf("/studio/shows/%d", id)), chromedp.WaitVisible(chromedp.ID("show-start")))
	if got := eval[string](t, dj, `document.getElementById('show-start').value`); got != start.Format("2006-01-02T15:04") {
		t.Errorf("the edit form shows the start as %q, want %q (New York)", got, start.Format("2006-01-02T15:04"))
	}
	noOverflow("the studio show page")

	// The host moderates the chat from the show's page: a fan's message
	// arrives with its time and a safe link, "Delete" removes it in
	// place, "Ban" keeps the fan out.
	fan, fanToken := env.CreateUser("Chatty Fan")
	do(t, dj, chromedp.Navigate(env.URL+"/"+sh.User.Slug+"/"+sh.Slug))
	waitFor(t, dj, "the host's chat socket", `document.getElementById('chat').hasAttribute('data-connected')`)
	say := func(text string) {
		t.Helper()
		// One message a second per viewer: wait out the rate limit.
		testload.Poll(t, "posting "+text, func() error {
			if r := env.Do("POST", fmt.Sprintf("/v1/shows/%d/chats", id), fanToken, map[string]any{"message": text}); r.Status != 201 {
				return fmt.Errorf("%d %s", r.Status, r.Body)
			}
			return nil
		})
	}
	say("first! https://example.com/tracklist")
	waitFor(t, dj, "the fan's message with its link, time and moderation", `(() => { const li = [...document.querySelectorAll('#messages li')].find(l => l.textContent.includes('first!'));
		return li && li.querySelector('a[href="https://example.com/tracklist"][rel="nofollow ugc noopener"]') && li.querySelector('time').textContent === 'just now'
			&& li.querySelector('form[data-mod=delete]') && li.querySelector('form[data-mod=ban]'); })()`)
	do(t, dj, chromedp.Click(chromedp.CSS(`#messages li form[data-mod=delete] button`)))
	waitFor(t, dj, "the message removed", `![...document.querySelectorAll('#messages li')].some(l => l.textContent.includes('first!'))`)
	say("second")
	waitFor(t, dj, "the second message", `[...document.querySelectorAll('#messages li')].some(l => l.textContent.includes('second'))`)
	do(t, dj, chromedp.Evaluate[chromedp.Void](`window.confirm = () => true`), chromedp.Click(chromedp.CSS(`#messages li form[data-mod=ban] button`)))
	waitFor(t, dj, "the ban done", `[...document.querySelectorAll('#messages li')].some(l => l.textContent.includes('banned'))`)
	if r := env.Do("POST", fmt.Sprintf("/v1/shows/%d/chats", id), fanToken, map[string]any{"message": "still here?"}); r.Status != 403 {
		t.Errorf("%s posts after the host's ban: %d", fan.Name, r.Status)
	}
	do(t, dj, chromedp.Navigate(env.URL+fmt.Sprintf("/studio/shows/%d", id)), chromedp.WaitVisible(chromedp.ID("reveal-key")))

	// The key, on request.
	do(t, dj, chromedp.Click(chromedp.ID("reveal-key")), chromedp.WaitVisible(chromedp.ID("stream-key")))
	key := strings.TrimSpace(eval[string](t, dj, `document.getElementById('stream-key').textContent`))
	if key != sh.StreamKey {
		t.Fatalf("the page shows key %q, want the show's", key)
	}
	if eval[bool](t, dj, `document.querySelector('button[data-copy=stream-key]').hidden`) {
		t.Error("no copy button beside the key")
	}

	// A listener on the show's page before it goes live sees the show's
	// image and when it starts, not an empty video box.
	listener := br.tab()
	showURL := env.URL + "/" + sh.User.Slug + "/" + sh.Slug
	do(t, listener, chromedp.Navigate(showURL), chromedp.WaitVisible(chromedp.CSS(`#player .notice`)))
	if eval[bool](t, listener, `getComputedStyle(document.getElementById('media')).display !== 'none' || !document.querySelector('#player .poster')`) {
		t.Error("an upcoming show's page shows a video box, or no poster")
	}
	loaded(listener, "the show's image as the poster", fmt.Sprintf(`#player .poster[src=%q]`, image))
	if og := eval[string](t, listener, `(document.querySelector('meta[property="og:image"]') || {}).content || ''`); og != image {
		t.Errorf("the show page's og:image is %q, want the show's image %q", og, image)
	}
	shot(listener, showURL, "show-upcoming")

	// Broadcast; the studio sees the show live.
	if st := eval[string](t, dj, `document.getElementById('h-receiving').textContent`); st != "no" {
		t.Errorf("before broadcasting the studio says receiving %q", st)
	}
	do(t, dj, chromedp.Evaluate[chromedp.Void](`window.notReloaded = true`))
	lm, _ := onairtest.Module[*live.Module](env)
	publish(t, "rtmp://"+lm.RTMPAddr()+"/live/"+key, 900)
	// The studio page sees the stream arrive, without a reload.
	waitFor(t, dj, "the studio's health saying receiving, with a bitrate", `window.notReloaded === true && document.getElementById('h-receiving').textContent === 'yes' && /H\.264, [1-9]\d* kb\/s/.test(document.getElementById('h-video').textContent) && document.getElementById('h-size').textContent === '320×240'`)
	t.Logf("studio health: %s", eval[string](t, dj, `document.getElementById('health').innerText`))
	testload.Poll(t, "the show live", func() error {
		if s, err := showService(env).Get(context.Background(), id); err != nil || !s.Live {
			return fmt.Errorf("not live yet (%v)", err)
		}
		return nil
	})
	studio := env.URL + fmt.Sprintf("/studio/shows/%d", id)
	do(t, dj, chromedp.Navigate(studio), chromedp.WaitVisible(chromedp.ID("stop-show")))
	if st := eval[string](t, dj, `document.getElementById('studio-state').textContent`); st != "Live" {
		t.Errorf("the studio says %q of a live show", st)
	}
	do(t, dj, chromedp.Navigate(env.URL+"/studio"), chromedp.WaitVisible(chromedp.CSS(`#live-title`)))
	noOverflow("the studio with a live show")
	shot(dj, env.URL+"/studio", "studio")
	shot(listener, showURL, "show-live")
	shot(dj, studio, "studio-show-live")

	// Listen mode on the live show: play, pause and volume, no seek bar.
	do(t, listener, chromedp.Navigate(showURL+"?listen=1"))
	waitFor(t, listener, "live audio playing", `document.querySelector('audio#media') && document.querySelector('audio#media').currentTime > 1`)
	if eval[bool](t, listener, `document.getElementById('media').controls || !document.getElementById('play-pause') || document.getElementById('play-pause').textContent !== 'Pause'`) {
		t.Error("live listen mode has the browser's controls (a seek bar), or no play/pause button")
	}
	do(t, listener, chromedp.Click(chromedp.ID("play-pause")))
	waitFor(t, listener, "paused by the button", `document.getElementById('media').paused && document.getElementById('play-pause').getAttribute('aria-pressed') === 'false'`)
	waitFor(t, listener, "the listener's chat socket", `document.getElementById('chat').hasAttribute('data-connected')`)

	// Stop, from the page (the confirm dialog answered yes).
	do(t, dj, phone, chromedp.Navigate(studio), chromedp.WaitVisible(chromedp.ID("stop-show")),
		chromedp.Evaluate[chromedp.Void](`window.confirm = () => true`),
		chromedp.Click(chromedp.ID("stop-show")),
		// The form's answer loads before the tab goes anywhere else (a
		// navigation started over it is aborted: ERR_ABORTED).
		chromedp.WaitNotPresent(chromedp.ID("stop-show")),
		chromedp.WaitVisible(chromedp.ID("delete-show")),
	)
	testload.Poll(t, "the show stopped", func() error {
		if s, err := showService(env).Get(context.Background(), id); err != nil || !s.Complete {
			return fmt.Errorf("not stopped yet (%v)", err)
		}
		return nil
	})
	testload.Poll(t, "the studio page after stop", func() error {
		do(t, dj, chromedp.Navigate(studio), chromedp.WaitVisible(chromedp.ID("delete-show")))
		if eval[bool](t, dj, `!!document.getElementById('stop-show')`) {
			return fmt.Errorf("the page still offers to stop the show")
		}
		return nil
	})

	// Between the stop and the archive the page says the recording is
	// being prepared: caught when the archive has not won the race.
	if s, err := showService(env).Get(context.Background(), id); err == nil && !s.Archive {
		ended := br.tab()
		do(t, ended, chromedp.Navigate(showURL), chromedp.WaitReady(chromedp.ID("player")))
		if eval[bool](t, ended, `!document.getElementById('player').hasAttribute('data-recording')`) {
			shot(ended, showURL, "show-ended-preparing")
		}
	} else {
		t.Log("the recording was ready before the page could show it being prepared")
	}

	// The listener's page turns into the recording, without a reload.
	do(t, listener, chromedp.Evaluate[chromedp.Void](`window.notReloaded = true`))
	testload.Poll(t, "the show archived", func() error {
		if s, err := showService(env).Get(context.Background(), id); err != nil || !s.Archive {
			return fmt.Errorf("not archived yet (%v)", err)
		}
		return nil
	})
	waitFor(t, listener, "the player switched to the recording", `document.getElementById('player').hasAttribute('data-recording')`)
	archived, _ := showService(env).Get(context.Background(), id)
	want := *showService(env).View(archived, false).AudioURL
	if got := eval[string](t, listener, `window.notReloaded === true ? document.getElementById('player').dataset.src : 'reloaded'`); got != want {
		t.Errorf("after the archive the player plays %q, want the recording %q without a reload", got, want)
	}
	if !eval[bool](t, listener, `document.getElementById('media').controls && !document.getElementById('media').hidden`) {
		t.Error("the recording has no seek bar")
	}
	do(t, listener, chromedp.Evaluate[chromedp.Void](`document.getElementById('media').play()`))
	waitFor(t, listener, "the recording playing", `document.getElementById('media').currentTime > 0.5`)
	shot(listener, showURL, "show-archived")

	// Staff see the DJ in the console's user editor.
	adminUser, _ := env.CreateUser("Ad Min", onairtest.Role("admin"), onairtest.Password("an admin secret"))
	staff := br.tab()
	editor := fmt.Sprintf("/admin/users/%d", sh.UserID)
	do(t, staff,
		chromedp.Navigate(env.URL+"/signin?next="+editor),
		chromedp.SetValue(chromedp.ID("email"), adminUser.Email),
		chromedp.SetValue(chromedp.ID("password"), "an admin secret"),
		chromedp.Click(chromedp.CSS(`form.stack button[type=submit]`)),
		chromedp.WaitVisible(chromedp.ID("p-name")),
	)
	if got := eval[string](t, staff, `location.pathname + ' ' + document.getElementById('p-name').value`); got != editor+" New Dee" {
		t.Errorf("after signing in for the console's user editor: %q", got)
	}
	shot(staff, env.URL+editor, "admin-user-editor")

	// The embed with ?chat=1 shows the chat in a short frame and on a
	// phone, not below the fold.
	for _, vp := range []struct{ w, h int64 }{{800, 360}, {390, 844}, {400, 300}} {
		do(t, dj, chromedp.EmulateViewport(vp.w, vp.h), chromedp.Navigate(env.URL+fmt.Sprintf("/embed/%d?chat=1", id)), chromedp.WaitReady(chromedp.ID("chat")))
		if !eval[bool](t, dj, `(() => { const r = document.getElementById('chat').getBoundingClientRect(); return r.top < innerHeight - 80 && r.height >= 80 && r.left < innerWidth - 100; })()`) {
			t.Errorf("the embed's chat is out of sight at %dx%d: %s", vp.w, vp.h, eval[string](t, dj, `JSON.stringify(document.getElementById('chat').getBoundingClientRect())`))
		}
	}
	do(t, dj, phone, chromedp.Navigate(studio), chromedp.WaitVisible(chromedp.ID("delete-show")))

	// Delete, through the confirmation page.
	do(t, dj,
		chromedp.Click(chromedp.ID("delete-show")),
		chromedp.WaitVisible(chromedp.ID("confirm-delete")),
	)
	noOverflow("the delete confirmation")
	do(t, dj, chromedp.Click(chromedp.ID("confirm-delete")), chromedp.WaitVisible(chromedp.ID("new-show")))
	if _, err := showService(env).Get(context.Background(), id); err == nil {
		t.Error("the show is still there after delete")
	}
}

// sunrisePNG is a w×h PNG of a sunrise gradient, a picture that shows in
// the screenshots (testPNG is black).
func sunrisePNG(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{uint8(255 - 120*y/h), uint8(60 + 140*y/h), uint8(40 + 160*x/w), 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
