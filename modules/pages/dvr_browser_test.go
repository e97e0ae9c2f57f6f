package pages_test

import (
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/live"
)

// TestDVRBrowser rewinds a live show in Chromium with hls.js: the show
// page's seek bar goes 20 s back (currentTime drops by about 20 s and
// playback goes on from there, through delta playlist updates), then Live
// returns to the live edge.
func TestDVRBrowser(t *testing.T) {
	t.Parallel()
	br := newBrowser(t)
	env := onairtest.New(t, onairtest.Options{})
	dj := newPerson(t, env, "Rewind Dee")
	created := onairtest.CreateShow(t, env, dj.token, map[string]any{"name": "Rewind Session"})
	id, showPath, key := created.ID, created.Path, created.Key
	lm, _ := onairtest.Module[*live.Module](env)
	publish(t, "rtmp://"+lm.RTMPAddr()+"/live/"+key, 900)
	onairtest.AwaitShow(t, env, dj.token, id, "live", func(s map[string]any) bool { return s["live"] == true })

	tab := br.tab()
	do(t, tab, chromedp.Navigate(env.URL+showPath))
	// 30 s and more of the show behind the edge: room to go 20 s back.
	waitFor(t, tab, "hls.js playing with 30 s of the show seekable", `(() => {
		const m = document.getElementById('media'), h = window.onairHls;
		return h && m.currentTime > 0 && !m.paused && m.seekable.length > 0 &&
			h.liveSyncPosition - m.seekable.start(0) > 30 && !document.getElementById('dvr').hidden;
	})()`)
	// hls.js starts a few seconds behind and catches up at 1.5x.
	waitFor(t, tab, "the bar to say Live at the live edge", `document.getElementById('behind').textContent === 'Live' &&
		window.onairHls.liveSyncPosition - document.getElementById('media').currentTime < 5`)
	before := eval[float64](t, tab, `document.getElementById('media').currentTime`)
	do(t, tab) // in front
	eval[bool](t, tab, `(() => {
		const s = document.getElementById('seek');
		window.dvrFrom = document.getElementById('media').currentTime;
		s.value = String(Number(s.value) - 20);
		s.dispatchEvent(new Event('input'));
		s.dispatchEvent(new Event('change'));
		return true;
	})()`)
	waitFor(t, tab, "the seek 20 s back to be done", `(() => { const m = document.getElementById('media'); return !m.seeking && m.currentTime < window.dvrFrom - 15; })()`)
	after := eval[float64](t, tab, `document.getElementById('media').currentTime`)
	if d := before - after; d < 16 || d > 24 {
		t.Errorf("seeking 20 s back moved currentTime from %.1f to %.1f (%.1f s)", before, after, d)
	}
	// Playback goes on from there, behind the edge, which the bar shows.
	waitFor(t, tab, "playback to go on 3 s from the rewound position", `(() => { const m = document.getElementById('media');
		return !m.paused && m.currentTime > `+strconv.FormatFloat(after+3, 'f', 3, 64)+` && window.onairHls.liveSyncPosition - m.currentTime > 12; })()`)
	if got := eval[string](t, tab, `document.getElementById('behind').textContent + ' ' + document.getElementById('go-live').getAttribute('aria-pressed')`); got == "Live true" {
		t.Errorf("20 s behind the edge the player still says Live")
	}
	t.Logf("rewound: %.1f s behind the live edge", eval[float64](t, tab, `window.onairHls.liveSyncPosition - document.getElementById('media').currentTime`))

	do(t, tab, chromedp.Click(chromedp.ID("go-live")))
	waitFor(t, tab, "Live to return to the live edge", `(() => { const m = document.getElementById('media'), h = window.onairHls;
		return !m.paused && !m.seeking && h.liveSyncPosition - m.currentTime < 4 && document.getElementById('go-live').getAttribute('aria-pressed') === 'true'; })()`)
	t.Logf("back at the edge: %.2f s behind (hls.js latency %.2f s)", eval[float64](t, tab, `window.onairHls.liveSyncPosition - document.getElementById('media').currentTime`), eval[float64](t, tab, `window.onairHls.latency`))
	// The player asked for delta updates of the long playlist.
	if !eval[bool](t, tab, `performance.getEntriesByType('resource').some(r => /\.m3u8\?.*_HLS_skip=YES/.test(r.name))`) {
		t.Error("hls.js asked for no delta update (_HLS_skip=YES) of the long playlists")
	}
}
