package pages_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/onair/onair/internal/browsertest"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
)

// TestPhoneBrowser is a DJ and a moderator on a 390 px phone in Chromium:
// the account page shows the stream url on whole lines and every button
// in full, the studio form's check boxes are all one size, and the
// console's wide tables show that they go on sideways.
func TestPhoneBrowser(t *testing.T) {
	t.Parallel()
	env := onairtest.New(t, onairtest.Options{})
	br := newBrowser(t)
	dj := newPerson(t, env, "Phone Dee")
	mod := newPerson(t, env, "Phone Mod", onairtest.Role("moderator"))
	for i := range 3 {
		onairtest.CreateShow(t, env, dj.token, map[string]any{"name": fmt.Sprintf("Pocket Set %d with a long name", i+1), "tags": []string{"Deep House", "Live"}})
	}
	env.Do("GET", "/v1/users/me", dj.token, nil).Expect(t, http.StatusOK) // the token has been used
	phone := chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile)
	dir := browsertest.ArtifactDir(t, "pages")
	shoot := func(tab context.Context, name string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(tab, testload.Patience)
		defer cancel()
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644)
	}
	signIn := func(tab context.Context, p person, form string) {
		t.Helper()
		do(t, tab, phone,
			chromedp.Navigate(env.URL+form),
			chromedp.SetValue(chromedp.ID("email"), p.user.Email),
			chromedp.SetValue(chromedp.ID("password"), p.password),
			chromedp.Submit(chromedp.ID("password")),
			chromedp.WaitNotPresent(chromedp.ID("password")),
		)
	}

	t.Run("the account page", func(t *testing.T) {
		tab := br.tab()
		signIn(tab, dj, "/signin")
		do(t, tab, chromedp.Navigate(env.URL+"/account"), chromedp.WaitVisible(chromedp.CSS(`table.cards`)))
		shoot(tab, "phone-account")
		if eval[bool](t, tab, `document.documentElement.scrollWidth > window.innerWidth + 1`) {
			t.Error("the account page scrolls sideways")
		}
		// rtmp://localhost:1935/live is 26 characters: on one line, or two
		// at most, never six characters a line.
		type box struct{ Width, Height, Line float64 }
		url := eval[box](t, tab, `(() => { const c = document.querySelector('td[data-label="Stream url"] code'); const r = c.getBoundingClientRect();
			return {Width: r.width, Height: r.height, Line: parseFloat(getComputedStyle(c).lineHeight) || 20}; })()`)
		if url.Height > 2.5*url.Line || url.Width < 150 {
			t.Errorf("the stream url is %.0f px wide and %.0f px tall (a line is %.0f px)", url.Width, url.Height, url.Line)
		}
		// Every button of the tables is within the screen and not cut by
		// an inner scroll.
		clipped := eval[[]string](t, tab, `[...document.querySelectorAll('table.cards button')].filter(b => {
			const r = b.getBoundingClientRect(), w = b.closest('.table-wrap').getBoundingClientRect();
			return r.width === 0 || r.left < 0 || r.right > window.innerWidth || r.right > w.right + 0.5 || r.left < w.left - 0.5;
		}).map(b => b.textContent.trim())`)
		if n := eval[int](t, tab, `document.querySelectorAll('table.cards button').length`); n < 4 {
			t.Fatalf("%d buttons in the account's tables, want the 3 Regenerate and a Revoke", n)
		}
		if len(clipped) > 0 {
			t.Errorf("buttons cut off on a phone: %q", clipped)
		}
	})

	t.Run("the studio form's check boxes", func(t *testing.T) {
		tab := br.tab()
		signIn(tab, dj, "/signin")
		do(t, tab, chromedp.Navigate(env.URL+"/studio/shows/new"), chromedp.WaitVisible(chromedp.ID("show-chat")))
		sizes := eval[[]string](t, tab, `[...document.querySelectorAll('.studio-form input[type=checkbox]')].map(i => {
			const r = i.getBoundingClientRect(); return i.id + ' ' + Math.round(r.width) + 'x' + Math.round(r.height); })`)
		if len(sizes) < 4 {
			t.Fatalf("check boxes: %q", sizes)
		}
		want := sizes[0][len("show-private "):]
		for _, s := range sizes {
			if _, size, _ := strings.Cut(s, " "); size != want {
				t.Errorf("check box %s, want every box %s: %q", s, want, sizes)
			}
		}
		if eval[bool](t, tab, `document.getElementById('show-description').required`) {
			t.Error("the description is required in the studio form")
		}
	})

	t.Run("the console's tables", func(t *testing.T) {
		tab := br.tab()
		signIn(tab, mod, "/admin/login")
		do(t, tab, chromedp.Navigate(env.URL+"/admin/shows"), chromedp.WaitVisible(chromedp.CSS(`.table-wrap table`)))
		shoot(tab, "phone-console-shows")
		type wrap struct {
			Scrolls    bool
			Attachment string
			Image      string
		}
		w := eval[wrap](t, tab, `(() => { const w = document.querySelector('.table-wrap'); const s = getComputedStyle(w);
			return {Scrolls: w.scrollWidth > w.clientWidth + 1, Attachment: s.backgroundAttachment, Image: s.backgroundImage}; })()`)
		if !w.Scrolls {
			t.Fatal("the console's shows table fits a phone: this test needs one that goes on sideways")
		}
		// The shadows stay on the edges, the bands covering them scroll
		// with the table: a shadow shows on the side with hidden columns.
		if !strings.HasPrefix(w.Attachment, "local, local, scroll, scroll") || !strings.Contains(w.Image, "linear-gradient") || !strings.Contains(w.Image, "radial-gradient") {
			t.Errorf("the console's sideways table has no cue: background %q attached %q", w.Image, w.Attachment)
		}
	})
}
