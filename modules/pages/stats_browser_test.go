package pages_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/live"
	"github.com/onair/onair/modules/stats"
)

// TestStatsChartsBrowser: a DJ on a phone watches their live show's
// charts fill in the studio without a reload, and finds them with the
// summary after the show; staff find the instance's charts on the
// console's dashboard. Each chart's polyline is counted in Chromium. The
// sampling intervals are shortened (1 s for shows, 200 ms for the
// process) so a 20 s broadcast draws enough points; on each database.
func TestStatsChartsBrowser(t *testing.T) {
	t.Parallel()
	onairtest.EachBackend(t, statsChartsFlow)
}

func statsChartsFlow(t *testing.T, backend string) {
	br := newBrowser(t)
	env := onairtest.New(t, onairtest.Options{Backend: backend, Configure: func(c *app.Config) {
		c.Set(stats.SettingInterval, time.Second)
		c.Set(stats.SettingProcessInterval, 200*time.Millisecond)
	}})
	dj, djToken := env.CreateUser("Chart Dee", onairtest.Password("a long secret"))
	_, fanToken := env.CreateUser("Chart Fan")
	r := env.Do("POST", "/v1/shows", djToken, map[string]any{"name": "Charted Live", "description": "numbers over time"}).Expect(t, http.StatusCreated).JSON(t)["show"].(map[string]any)
	id, key := onairtest.ID(r), r["stream_key"].(string)

	tab := br.tab()
	phone := chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile)
	studio := env.URL + fmt.Sprintf("/studio/shows/%d", id)
	do(t, tab, phone,
		chromedp.Navigate(env.URL+"/signin?next="+fmt.Sprintf("/studio/shows/%d", id)),
		chromedp.SetValue(chromedp.ID("email"), dj.Email),
		chromedp.SetValue(chromedp.ID("password"), "a long secret"),
		chromedp.Click(chromedp.CSS(`form.stack button[type=submit]`)),
		chromedp.WaitVisible(chromedp.ID("reveal-key")),
	)
	if eval[bool](t, tab, `!!document.getElementById('stats')`) {
		t.Error("a show that never ran has a statistics panel")
	}

	lm, _ := onairtest.Module[*live.Module](env)
	publish(t, "rtmp://"+lm.RTMPAddr()+"/live/"+key, 20)
	testload.Poll(t, "the show live", func() error {
		if s, err := showService(env).Get(context.Background(), id); err != nil || !s.Live {
			return fmt.Errorf("not live yet (%v)", err)
		}
		return nil
	})
	// A player fetches the playlist, so the viewers chart has one; the
	// fan chats.
	ctx, stopWatching := context.WithCancel(context.Background())
	defer stopWatching()
	go func() {
		for ctx.Err() == nil {
			if resp, err := env.Client.Get(fmt.Sprintf("%s/media/shows/%d/index.m3u8", env.URL, id)); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	testload.Poll(t, "a chat message", func() error {
		if r := env.Do("POST", fmt.Sprintf("/v1/shows/%d/chats", id), fanToken, map[string]any{"message": "love the charts"}); r.Status != http.StatusCreated {
			return fmt.Errorf("%d", r.Status)
		}
		return nil
	})

	// points is a JavaScript expression: the number of points a chart's
	// series draws (0 when it draws none).
	points := func(chart, series string) string {
		return fmt.Sprintf(`(() => { const p = document.querySelector(%q); return p ? +p.getAttribute('data-points') : 0; })()`,
			fmt.Sprintf(`#chart-%s polyline[data-series="%s"]`, chart, series))
	}
	do(t, tab, chromedp.Navigate(studio), chromedp.WaitVisible(chromedp.ID("stats")))
	do(t, tab, chromedp.Evaluate[chromedp.Void](`window.notReloaded = true`))
	first := eval[float64](t, tab, points("bitrate", "Video"))
	// The live panel refreshes itself: more points arrive without a reload.
	waitFor(t, tab, "the live charts growing without a reload", fmt.Sprintf(`window.notReloaded === true && %s >= %v + 3 && %s >= 3 && %s >= 3`,
		points("bitrate", "Video"), first, points("fps", "Frames a second"), points("viewers", "Viewers")))
	waitFor(t, tab, "a viewer on the viewers chart", `/Viewers: 1/.test(document.querySelector('#chart-viewers .legend').textContent)`)
	// Enough points before the stop for the summary's charts and the
	// dashboard's viewers (5 each, asked below), however fast the waits
	// above passed.
	waitFor(t, tab, "six points of audio bitrate and viewers", fmt.Sprintf(`%s >= 6 && %s >= 6`,
		points("bitrate", "Audio"), points("viewers", "Viewers")))
	if eval[bool](t, tab, `document.documentElement.scrollWidth > window.innerWidth + 1`) {
		t.Error("the studio with charts scrolls sideways at 390 px")
	}
	if w := eval[float64](t, tab, `document.querySelector('#chart-bitrate svg').getBoundingClientRect().width`); w < 250 || w > 390 {
		t.Errorf("the bitrate chart is %v px wide on a 390 px phone", w)
	}
	screenshot(t, tab, studio, backend+"-studio-stats-live")

	if _, err := showService(env).Stop(context.Background(), id, nil); err != nil {
		t.Fatal(err)
	}
	stopWatching()
	do(t, tab, chromedp.Navigate(studio), chromedp.WaitVisible(chromedp.ID("stats")))
	if eval[bool](t, tab, `document.getElementById('stats').hasAttribute('data-refresh')`) {
		t.Error("an ended show's panel still refreshes itself")
	}
	if n := eval[float64](t, tab, points("bitrate", "Audio")); n < 5 {
		t.Errorf("after the show the audio bitrate chart has %v points, want 5 or more", n)
	}
	summary := eval[map[string]string](t, tab, `Object.fromEntries(['peak', 'average', 'watch', 'chat', 'follows'].map(k => [k, document.getElementById('s-' + k).textContent]))`)
	if summary["peak"] != "1" || summary["chat"] != "1" || summary["follows"] != "0" || summary["watch"] == "0 s" || summary["average"] == "0.0" {
		t.Errorf("the summary reads %v", summary)
	}
	screenshot(t, tab, studio, backend+"-studio-stats-ended")

	// The console's dashboard, on a phone too.
	admin, _ := env.CreateUser("Chart Admin", onairtest.Role("admin"), onairtest.Password("an admin secret"))
	staff := br.tab()
	do(t, staff, phone,
		chromedp.Navigate(env.URL+"/signin?next=/admin"),
		chromedp.SetValue(chromedp.ID("email"), admin.Email),
		chromedp.SetValue(chromedp.ID("password"), "an admin secret"),
		chromedp.Click(chromedp.CSS(`form.stack button[type=submit]`)),
		chromedp.WaitVisible(chromedp.ID("chart-viewers")),
	)
	testload.Poll(t, "the dashboard's charts", func() error {
		do(t, staff, chromedp.Navigate(env.URL+"/admin"), chromedp.WaitVisible(chromedp.ID("chart-cpu")))
		got := eval[map[string]float64](t, staff, fmt.Sprintf(`({viewers: %s, shows: %s, signups: %s, cpu: %s, memory: %s})`,
			points("viewers", "Viewers"), points("daily", "Shows created"), points("daily", "Sign-ups"), points("cpu", "CPU"), points("memory", "Memory")))
		if got["viewers"] < 5 || got["shows"] != 30 || got["signups"] != 30 || got["cpu"] < 3 || got["memory"] < 3 {
			return fmt.Errorf("points %v", got)
		}
		return nil
	})
	if legend := eval[string](t, staff, `document.querySelector('#chart-daily .legend').textContent`); !strings.Contains(legend, "Shows created: 1") || !strings.Contains(legend, "Sign-ups: 3") {
		t.Errorf("today's shows and sign-ups read %q", legend)
	}
	if eval[bool](t, staff, `document.documentElement.scrollWidth > window.innerWidth + 1`) {
		t.Error("the dashboard with charts scrolls sideways at 390 px")
	}
	screenshot(t, staff, env.URL+"/admin", backend+"-admin-dashboard")
}
