package pages_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/onair/onair/internal/browsertest"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/live"
)

// The browser suite runs the pages in real headless Chromium against a
// whole OnAir with a show that ffmpeg publishes. It is skipped only when
// Chromium is not on the PATH.

// browser is one Chromium process; each tab made with tab gets a fresh
// browser context (its own cookies), like a separate person.
type browser struct {
	t   *testing.T
	ctx context.Context
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	ctx := browsertest.Start(t, chromedp.Flag("autoplay-policy", "no-user-gesture-required"))
	return &browser{t: t, ctx: ctx}
}

// tab opens a tab in a new browser context.
func (b *browser) tab() context.Context {
	ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext())
	b.t.Cleanup(cancel)
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		b.t.Fatalf("new tab: %v", err)
	}
	return ctx
}

// do runs actions in a tab, the tab in front (Chromium defers video
// playback in background tabs); testload.Patience bounds a hang.
func do(t *testing.T, tab context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, testload.Patience)
	defer cancel()
	if _, err := chromedp.Call(ctx, cdppage.BringToFront, cdp.Empty{}); err != nil {
		t.Fatalf("browser: bring tab to front: %v", err)
	}
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("browser: %v", err)
	}
}

// eval evaluates a JavaScript expression in a tab.
func eval[T any](t *testing.T, tab context.Context, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, testload.Patience)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// waitFor polls a JavaScript predicate in a tab until it holds;
// testload.Patience bounds a hang.
func waitFor(t *testing.T, tab context.Context, what, predicate string) {
	t.Helper()
	within := testload.Patience
	ctx, cancel := context.WithTimeout(tab, within+30*time.Second)
	defer cancel()
	deadline := time.Now().Add(within)
	for replaced := 0; ; replaced++ {
		_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](predicate, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(time.Until(deadline))))
		// chromedp's poll runs in one JavaScript context and does not
		// survive its replacement: right after a navigation it can be
		// handed the previous document's, gone by the time it is called.
		// The predicate is about the page, so it is asked again in the
		// page's current context, within the same patience.
		if err != nil && contextGone(err) && replaced < 20 && time.Until(deadline) > time.Second {
			t.Logf("%s: the page's JavaScript context was replaced (%v); polling again", what, err)
			continue
		}
		if err == nil {
			return
		}
		state, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { const m = document.getElementById('media'); const p = document.getElementById('player');
			if (!m) return 'no player';
			const h = window.onairHls, b = [];
			for (let i = 0; i < m.buffered.length; i++) b.push([+m.buffered.start(i).toFixed(2), +m.buffered.end(i).toFixed(2)]);
			return JSON.stringify({engine: p.dataset.engine, src: p.dataset.src, t: m.currentTime, paused: m.paused, ready: m.readyState, net: m.networkState,
				err: m.error && m.error.message, rate: m.playbackRate, buffered: b, fastest: window.fastest,
				hls: h ? {level: h.currentLevel, loading: h.loadLevel, latency: h.latency, target: h.targetLatency, td: h.latestLevelDetails && h.latestLevelDetails.targetduration} : null}); })()`))
		t.Fatalf("%s: not within %s (%v); player: %s", what, within, err, state)
	}
}

// contextGone tells the DevTools protocol's answer for a JavaScript
// context that no longer exists (a document replaced mid-call).
func contextGone(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "Cannot find context with specified id") || strings.Contains(msg, "Execution context was destroyed")
}

// publish runs ffmpeg sending seconds of test video and tone to the show.
func publish(t *testing.T, rtmpURL string, seconds int) {
	t.Helper()
	testload.Heavy(t)
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Fatal("ffmpeg is not on PATH; the browser suite needs it to publish a show")
	}
	cmd := exec.Command("ffmpeg", "-hide_banner", "-loglevel", "error", "-re",
		"-f", "lavfi", "-i", fmt.Sprintf("testsrc=size=320x240:rate=25:duration=%d", seconds),
		"-f", "lavfi", "-i", fmt.Sprintf("sine=frequency=440:sample_rate=44100:duration=%d", seconds),
		"-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-pix_fmt", "yuv420p", "-g", "50",
		"-c:a", "aac", "-b:a", "96k", "-f", "flv", rtmpURL)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
}

// screenshot saves a full-page PNG of the tab's page at a desktop and a
// phone width, and checks nothing overflows sideways on the phone.
func screenshot(t *testing.T, tab context.Context, url, name string) {
	t.Helper()
	dir := browsertest.ArtifactDir(t, "pages")
	for _, vp := range []struct {
		label         string
		width, height int64
		mobile        bool
	}{{"desktop", 1280, 800, false}, {"phone", 390, 844, true}} {
		emulate := chromedp.EmulateViewport(vp.width, vp.height)
		if vp.mobile {
			emulate = chromedp.EmulateViewport(vp.width, vp.height, chromedp.EmulateScale(2), chromedp.EmulateMobile)
		}
		do(t, tab, emulate, chromedp.Navigate(url))
		firstFrame(t, tab)
		if vp.mobile {
			if over := eval[bool](t, tab, `document.documentElement.scrollWidth > window.innerWidth + 1`); over {
				t.Errorf("%s overflows sideways at %d px", name, vp.width)
			}
		}
		ctx, cancel := context.WithTimeout(tab, testload.Patience)
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		cancel()
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		file := filepath.Join(dir, name+"-"+vp.label+".png")
		if err := os.WriteFile(file, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	do(t, tab, chromedp.ResetViewport())
}

// firstFrame waits, for a screenshot's sake, until every visible player of
// the page shows a frame. A player that never does is no failure here (the
// playback tests say whether the pages play); the screenshot is taken
// anyway.
func firstFrame(t *testing.T, tab context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, 30*time.Second)
	defer cancel()
	const shown = `document.readyState === 'complete' && [...document.querySelectorAll('video, audio')].every(m => m.hidden || m.readyState >= 2)`
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](shown, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Logf("screenshot without a first frame: %v", err)
	}
}

// TestBrowser is what a listener and a broadcaster do in a real browser.
func TestBrowser(t *testing.T) {
	t.Parallel()
	br := newBrowser(t)
	env := onairtest.New(t, onairtest.Options{})
	dj := newPerson(t, env, "Dee Jay")
	created := onairtest.CreateShow(t, env, dj.token, map[string]any{
		"name": "Sunset Session", "description": "Two hours of deep house from the roof.\nBring a friend.", "tags": []string{"Deep House", "Live"},
	})
	id, showPath, key := created.ID, created.Path, created.Key
	env.Do("PUT", path("/v1/shows/%d", id), dj.token, map[string]any{"headline": true}).Expect(t, http.StatusOK)
	onairtest.CreateShow(t, env, dj.token, map[string]any{"name": "Next Week", "start": time.Now().UTC().Add(7 * 24 * time.Hour).Format("2006-01-02 15:04:05")})
	showURL := env.URL + showPath
	listener := br.tab() // anonymous
	fan := br.tab()      // signs up

	// The listener is on the page before the show goes live: the player
	// starts by itself when the chat socket says it went live.
	do(t, listener, chromedp.Navigate(showURL))
	waitFor(t, listener, "the listener's chat socket", `document.getElementById('chat').hasAttribute('data-connected')`)
	if !eval[bool](t, listener, `document.getElementById('media').hidden && !!document.querySelector('#player .notice')`) {
		t.Error("a show that is not live yet shows a player instead of a notice")
	}
	lm, _ := onairtest.Module[*live.Module](env)
	// Long enough to outlast every step on a slow machine; the archive
	// step stops the show.
	publish(t, "rtmp://"+lm.RTMPAddr()+"/live/"+key, 900)
	show := onairtest.AwaitShow(t, env, dj.token, id, "live", func(s map[string]any) bool { return s["live"] == true })

	t.Run("sign up, create a token, call the API with it", func(t *testing.T) {
		do(t, fan,
			chromedp.Navigate(env.URL+"/signup"),
			chromedp.SetValue(chromedp.ID("name"), "Fan Tastic"),
			chromedp.SetValue(chromedp.ID("email"), "fan@example.com"),
			chromedp.SetValue(chromedp.ID("password"), "a long secret"),
			chromedp.Click(chromedp.CSS(`form.stack button[type=submit]`)),
			chromedp.WaitVisible(chromedp.CSS(`form[action="/account/tokens"]`)),
			chromedp.SetValue(chromedp.ID("label"), "my script"),
			chromedp.Click(chromedp.CSS(`form[action="/account/tokens"] button`)),
			chromedp.WaitVisible(chromedp.ID("new-token")),
		)
		ctx, cancel := context.WithTimeout(fan, testload.Patience)
		token, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("new-token")))
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		me := env.Do("GET", "/v1/users/me", strings.TrimSpace(token), nil).Expect(t, http.StatusOK).JSON(t)
		if u := me["user"].(map[string]any); u["name"] != "Fan Tastic" {
			t.Fatalf("/v1/users/me with the new token: %v", me)
		}
	})

	t.Run("the show page plays the show once it is live", func(t *testing.T) {
		do(t, listener) // in front
		waitFor(t, listener, "video currentTime past 3 s", `document.querySelector('video#media') && document.querySelector('video#media').currentTime > 3`)
		// Chromium is not Apple's browser and has Media Source Extensions:
		// the page plays with hls.js whatever canPlayType says.
		if engine := eval[string](t, listener, `document.getElementById('player').dataset.engine`); engine != "hls.js" || !eval[bool](t, listener, `typeof Hls === 'function'`) {
			t.Errorf("the player used %q, want hls.js", engine)
		}
		// Low-latency HLS: hls.js in lowLatencyMode loads parts of the live
		// playlist with blocking reloads and plays near the live edge (the
		// playlist URLs carry the playback session first: ?vs=…&_HLS_msn=…).
		waitFor(t, listener, "hls.js to load an LL-HLS part and a blocking reload", `window.onairHls.config.lowLatencyMode === true &&
			performance.getEntriesByType('resource').some(r => /-p\d+\.ts$/.test(r.name)) &&
			performance.getEntriesByType('resource').some(r => /\.m3u8\?(?:[^#]*&)?_HLS_msn=\d+/.test(r.name))`)
		t.Logf("hls.js latency behind the live edge: %.2f s (target %.2f s)", eval[float64](t, listener, `window.onairHls.latency`), eval[float64](t, listener, `window.onairHls.targetLatency || 0`))
		// hls.js came after the page, and the page before it is light.
		type weight struct {
			Bytes, HlsStart, LoadEnd float64
			HlsLoaded                bool
		}
		w := eval[weight](t, listener, `(() => {
			const nav = performance.getEntriesByType('navigation')[0];
			let bytes = nav.decodedBodySize, hls = null;
			for (const r of performance.getEntriesByType('resource')) {
				if (r.name.includes('hls.light')) { hls = r; continue; }
				if (r.initiatorType === 'link' || r.initiatorType === 'script' || r.initiatorType === 'css') bytes += r.decodedBodySize;
			}
			return {Bytes: bytes, HlsStart: hls ? hls.startTime : -1, LoadEnd: nav.loadEventStart, HlsLoaded: !!hls};
		})()`)
		t.Logf("show page before the player: %.0f bytes of HTML, CSS and JS; hls.js requested at %.0f ms, page loaded at %.0f ms", w.Bytes, w.HlsStart, w.LoadEnd)
		if w.Bytes > 200<<10 {
			t.Errorf("the show page weighs %.0f bytes before the player starts", w.Bytes)
		}
		if w.HlsLoaded && w.HlsStart < w.LoadEnd {
			t.Errorf("hls.js was requested at %.0f ms, before the page finished loading at %.0f ms", w.HlsStart, w.LoadEnd)
		}
		// Behind its target by less than a target duration (a pause, a
		// stall), the player plays faster until it is back: hls.js's own
		// catch-up would not, with under a second buffered.
		const late = `(() => { const h = window.onairHls, d = h.latestLevelDetails, m = document.getElementById('media');
			return d.edge + d.age - m.currentTime - h.targetLatency; })()`
		// The pause, the wait and the play happen in the page, and the page
		// notes the fastest rate it played at: a round trip through DevTools
		// on a busy machine can outlast the catch-up's window (up to a
		// target duration behind) or the catch-up itself (under 2 s).
		ctx, cancel := context.WithTimeout(listener, testload.Patience)
		behind, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`new Promise(resolve => {
			const m = document.getElementById('media');
			window.fastest = 1;
			m.addEventListener('ratechange', () => { window.fastest = Math.max(window.fastest, m.playbackRate); });
			m.pause();
			const tick = setInterval(() => {
				const l = `+late+`;
				if (l <= 0.5) return;
				clearInterval(tick);
				// A page starved of the CPU sees the moment late: it seeks
				// to 0.6 s behind (within what hls.js buffered while paused)
				// rather than leave the player further behind than the
				// catch-up reaches (a target duration: one who rewound).
				if (l > 0.7) m.currentTime += l - 0.6;
				m.play();
				resolve(`+late+`);
			}, 20);
		})`, chromedp.EvalAwaitPromise))
		cancel()
		if err != nil {
			t.Fatalf("pause the player half a second behind its target: %v", err)
		}
		t.Logf("the player resumed %.2f s behind its target", behind)
		waitFor(t, listener, "the player to play faster", `window.fastest > 1`)
		waitFor(t, listener, "the player back within 0.3 s of its target at normal speed", `(() => { const m = document.getElementById('media');
			return !m.paused && m.playbackRate === 1 && `+late+` < 0.3; })()`)
	})

	t.Run("the anonymous viewer is listed in chat_users", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(listener, testload.Patience)
		res, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{env.URL}})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		viewer := ""
		for _, c := range res.Cookies {
			if c.Name == "onair_viewer" {
				viewer = c.Value
			}
		}
		if viewer == "" {
			t.Fatal("the show page did not give the browser an onair_viewer cookie")
		}
		// The room knows the viewer by an id of its own, not the cookie's.
		cookieID, _, _ := strings.Cut(viewer, ".")
		testload.Poll(t, "an anonymous viewer in chat_users", func() error {
			var body struct {
				Count     int `json:"count"`
				ChatUsers []struct {
					ID         any  `json:"id"`
					Registered bool `json:"registered"`
				} `json:"chat_users"`
			}
			env.Do("GET", path("/v1/shows/%d/chat_users", id), dj.token, nil).Expect(t, http.StatusOK).Decode(t, &body)
			for _, u := range body.ChatUsers {
				if u.ID == cookieID || u.ID == viewer {
					t.Fatalf("chat_users shows the cookie's own id: %+v", body)
				}
				if !u.Registered {
					return nil
				}
			}
			return fmt.Errorf("chat_users %+v", body)
		})
	})

	t.Run("a message posted in one browser appears in another", func(t *testing.T) {
		do(t, fan, chromedp.Navigate(showURL))
		waitFor(t, fan, "the fan's chat socket", `document.getElementById('chat').hasAttribute('data-connected')`)
		waitFor(t, listener, "the listener's chat socket", `document.getElementById('chat').hasAttribute('data-connected')`)
		waitFor(t, listener, "the presence count", `Number(document.getElementById('presence').textContent) >= 2`)
		text := "hello from the roof <b>" + fmt.Sprint(time.Now().UnixNano()%1000) + "</b>"
		do(t, fan,
			chromedp.SetValue(chromedp.ID("chat-message"), text),
			chromedp.Click(chromedp.CSS(`#chat-form button`)),
		)
		sent := time.Now()
		waitFor(t, listener, "the message in the other browser", fmt.Sprintf(`[...document.querySelectorAll('#messages li')].some(li => li.textContent.includes(%q))`, text))
		t.Logf("the message reached the other browser %s after the click", time.Since(sent).Round(time.Millisecond))
		if eval[bool](t, listener, `!!document.querySelector('#messages li b b')`) {
			t.Error("a chat message's HTML was rendered as markup")
		}
		waitFor(t, fan, "the chat input cleared after sending", `document.getElementById('chat-message').value === ''`)
	})

	t.Run("listen mode plays audio only", func(t *testing.T) {
		do(t, listener, chromedp.Navigate(showURL+"?listen=1"))
		waitFor(t, listener, "audio currentTime past 3 s", `document.querySelector('audio#media') && document.querySelector('audio#media').currentTime > 3`)
		if eval[bool](t, listener, `!!document.querySelector('video')`) {
			t.Error("listen mode has a video element")
		}
		src := eval[string](t, listener, `window.onairHls ? window.onairHls.url : document.getElementById('media').currentSrc`)
		// The page's playback session rides on the URL (?vs=).
		if want := show["audio_url"].(string); !strings.HasPrefix(src, want+"?vs=") {
			t.Errorf("listen mode plays %q, want audio_url %q with the page's session", src, want)
		}
	})

	t.Run("the embed plays in an iframe on another origin", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		host := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprintf(w, `<!DOCTYPE html><title>A blog</title><h1>My favourite DJ</h1>
<iframe src="%s/embed/%d?chat=1" width="800" height="360" allow="autoplay; fullscreen" allowfullscreen></iframe>
<script>
window.addEventListener('message', e => {
  if (e.data && e.data.source === 'onair') { window.onairTime = e.data.currentTime; window.onairFrom = e.origin; }
});
</script>`, env.URL, id)
		})}
		go host.Serve(ln)
		t.Cleanup(func() { host.Close() })
		page := "http://" + ln.Addr().String() + "/"
		do(t, listener, chromedp.Navigate(page))
		waitFor(t, listener, "the embedded player past 3 s", `window.onairTime > 3`)
		if from := eval[string](t, listener, `window.onairFrom`); from != env.URL {
			t.Errorf("player events came from %q, want %q", from, env.URL)
		}
		screenshot(t, listener, page, "embed-in-iframe")
	})

	t.Run("screenshots", func(t *testing.T) {
		for _, p := range []struct{ name, url string }{
			{"home", env.URL + "/"},
			{"show", showURL},
			{"user", env.URL + "/" + dj.user.Slug},
			{"embed", env.URL + path("/embed/%d?chat=1", id)},
			{"account", env.URL + "/account"},
		} {
			screenshot(t, fan, p.url, p.name)
		}
	})

	t.Run("an archive replays its chat in step with playback", func(t *testing.T) {
		env.Do("POST", path("/v1/shows/%d/stop", id), dj.token, nil).Expect(t, http.StatusOK)
		onairtest.AwaitShow(t, env, dj.token, id, "archived", func(s map[string]any) bool { return s["archive"] == true })
		var chats struct {
			Chats []struct {
				Message  string `json:"message"`
				Position string `json:"position"`
			} `json:"chats"`
		}
		env.Do("GET", path("/v1/shows/%d/chats", id), dj.token, nil).Expect(t, http.StatusOK).Decode(t, &chats)
		if len(chats.Chats) == 0 {
			t.Fatal("no chat message to replay")
		}
		var pos float64
		fmt.Sscan(chats.Chats[0].Position, &pos)
		if pos < 2 {
			t.Fatalf("the message was posted at %.2f s, too early to tell replay from showing everything", pos)
		}
		do(t, listener, chromedp.Navigate(showURL))
		waitFor(t, listener, "the replay loaded and playing", `document.querySelectorAll('#messages li[data-pos]').length > 0 && document.getElementById('media').currentTime > 0.2`)
		visible := `[...document.querySelectorAll('#messages li[data-pos]')].filter(li => !li.hidden).length`
		if n := eval[int](t, listener, fmt.Sprintf(`document.getElementById('media').currentTime < %f ? %s : -1`, pos-1, visible)); n > 0 {
			t.Errorf("%d messages shown before playback reached them", n)
		}
		do(t, listener, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.getElementById('media').currentTime = %f`, pos+0.5)))
		waitFor(t, listener, "the message once playback passes its position", visible+` > 0`)
		// Stamped with its time in the show, not "2 min ago".
		want := fmt.Sprintf("%d:%02d", int(pos)/60, int(pos)%60)
		if stamp := eval[string](t, listener, `document.querySelector('#messages li[data-pos]:not([hidden]) time').textContent`); stamp != want {
			t.Errorf("the replayed message is stamped %q, want %q, its time in the show", stamp, want)
		}
		do(t, listener, chromedp.Evaluate[chromedp.Void](`document.getElementById('media').currentTime = 0`))
		waitFor(t, listener, "the message hidden again after seeking back", visible+` === 0`)
	})
}
