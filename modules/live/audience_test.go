package live_test

import (
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
)

// trustLoopback makes the test client a trusted proxy, so X-Forwarded-For
// gives each request the viewer address it names.
func trustLoopback(c *app.Config) {
	_, loopback, _ := net.ParseCIDR("127.0.0.0/8")
	c.TrustedProxies = []*net.IPNet{loopback}
}

// watch fetches a live playlist as each viewer address.
func watch(t *testing.T, env *onairtest.Env, playlist string, addrs ...string) {
	t.Helper()
	for _, a := range addrs {
		env.DoWith("GET", playlist, "", nil, http.Header{"X-Forwarded-For": {a}}).Expect(t, http.StatusOK)
	}
}

// health is the show's health as token sees it.
func health(t *testing.T, env *onairtest.Env, id int64, token string) map[string]any {
	t.Helper()
	return env.Do("GET", fmt.Sprintf("/v1/shows/%d/health", id), token, nil).Expect(t, http.StatusOK).JSON(t)["health"].(map[string]any)
}

// awaitAudience polls the health until viewers and peak_viewers are as
// wanted.
func awaitAudience(t *testing.T, env *onairtest.Env, id int64, token string, viewers, peak float64) {
	t.Helper()
	testload.Poll(t, fmt.Sprintf("%g viewers, peak %g", viewers, peak), func() error {
		if h := health(t, env, id, token); h["viewers"] != viewers || h["peak_viewers"] != peak {
			return fmt.Errorf("health %v", h)
		}
		return nil
	})
}

// TestPeakViewers: players fetching a live show's playlists from distinct
// addresses are its viewers; the most at once is its peak, in the health
// at once and recorded on the show (peak_viewers, for the owner and staff
// only) while it is live and after it stopped.
func TestPeakViewers(t *testing.T) {
	requireTools(t, "ffmpeg")
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env := onairtest.New(t, onairtest.Options{Backend: backend, Configure: trustLoopback})
		_, owner := env.CreateUser("Peak Owner")
		_, other := env.CreateUser("Peak Other")
		_, staff := env.CreateUser("Peak Staff", onairtest.Role("moderator"))
		b := onairtest.CreateShow(t, env, owner, nil)
		if s := b.Get(t); s["peak_viewers"] != 0.0 {
			t.Errorf("peak_viewers of a new show: %v", s["peak_viewers"])
		}
		_, done := publish(t, b.RTMP+"/"+b.Key, 120, false)
		video := b.Await(t, "live", isLive)["video_url"].(string)

		watch(t, env, video, "10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.1")
		awaitAudience(t, env, b.ID, owner, 3, 3)
		watch(t, env, video, "10.0.0.4", "10.0.0.5")
		awaitAudience(t, env, b.ID, owner, 5, 5)
		b.Await(t, "with peak_viewers 5 recorded", func(s map[string]any) bool { return s["peak_viewers"] == 5.0 })

		path := fmt.Sprintf("/v1/shows/%d", b.ID)
		if s := env.Do("GET", path, other, nil).Expect(t, http.StatusOK).JSON(t)["show"].(map[string]any); s["peak_viewers"] != nil {
			t.Errorf("another user sees peak_viewers %v", s["peak_viewers"])
		}
		if s := env.Do("GET", path, staff, nil).Expect(t, http.StatusOK).JSON(t)["show"].(map[string]any); s["peak_viewers"] != 5.0 {
			t.Errorf("staff see peak_viewers %v", s["peak_viewers"])
		}

		env.Do("POST", path+"/stop", owner, nil).Expect(t, http.StatusOK)
		exited(t, "the publisher after the stop", done)
		if s := b.Get(t); s["peak_viewers"] != 5.0 {
			t.Errorf("peak_viewers after the stop: %v", s["peak_viewers"])
		}
		if h := health(t, env, b.ID, owner); h["receiving"] != false || h["peak_viewers"] != 5.0 {
			t.Errorf("health after the stop: %v", h)
		}
	})
}

// TestClusterPeakViewers: two nodes share their viewers through Redis.
// Node A ingests; players poll A and B (B forwards to A), one address on
// both; each node's health counts every viewer once (4), and the peak A
// records is the whole audience.
func TestClusterPeakViewers(t *testing.T) {
	requireTools(t, "ffmpeg")
	c := newCluster(t, trustLoopback)
	_, owner := c.a.CreateUser("Peak Cluster")
	b := onairtest.CreateShow(t, c.a, owner, nil)
	_, done := publish(t, b.RTMP+"/"+b.Key, 120, false)
	video := b.Await(t, "live", isLive)["video_url"].(string)
	awaitSegments(t, video, 1) // as 127.0.0.1, a viewer on A

	watch(t, c.a, video, "10.0.1.1")
	watch(t, c.b, c.onB(video), "10.0.1.1", "10.0.1.2", "10.0.1.3")
	if n := c.mb.Viewers(b.ID); n < 3 {
		t.Errorf("node B counts %d viewers, want its own 3", n)
	}
	awaitAudience(t, c.a, b.ID, owner, 4, 4)
	awaitAudience(t, c.b, b.ID, owner, 4, 4)
	b.Await(t, "with peak_viewers 4 recorded", func(s map[string]any) bool { return s["peak_viewers"] == 4.0 })

	c.b.Do("POST", fmt.Sprintf("/v1/shows/%d/stop", b.ID), owner, nil).Expect(t, http.StatusOK)
	exited(t, "the publisher after the stop", done)
	if s := b.Get(t); s["peak_viewers"] != 4.0 {
		t.Errorf("peak_viewers after the stop: %v", s["peak_viewers"])
	}
}

// TestLateMedia: three encoders publish at once. One in real time (-re)
// is on time; one throttled to half speed (-readrate 0.5) falls behind
// and is told, in words, that its upload or encoder can't keep up; one
// that drops 10 of every 25 frames (timestamps kept) shows the gaps.
func TestLateMedia(t *testing.T) {
	requireTools(t, "ffmpeg")
	env := onairtest.New(t, onairtest.Options{})
	_, owner := env.CreateUser("Late Owner")
	onTime, slow, gappy := onairtest.CreateShow(t, env, owner, nil), onairtest.CreateShow(t, env, owner, nil), onairtest.CreateShow(t, env, owner, nil)

	start := func(args []string) {
		cmd := exec.Command("ffmpeg", args...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	}
	start(ffmpegArgs(onTime.RTMP+"/"+onTime.Key, 120, false))
	var throttled []string
	args := ffmpegArgs(slow.RTMP+"/"+slow.Key, 120, false)
	for i, a := range args {
		switch {
		case a == "-re":
		case a == "-f" && args[i+1] == "lavfi":
			throttled = append(throttled, "-readrate", "0.5", a) // each input at half speed
		default:
			throttled = append(throttled, a)
		}
	}
	start(throttled)
	var dropping []string
	for _, a := range ffmpegArgs(gappy.RTMP+"/"+gappy.Key, 120, false) {
		if a == "-c:v" {
			dropping = append(dropping, "-vf", `select=not(between(mod(n\,25)\,5\,14))`, "-fps_mode", "passthrough")
		}
		dropping = append(dropping, a)
	}
	start(dropping)

	warned := func(h map[string]any, text string) bool {
		for _, w := range h["warnings"].([]any) {
			if strings.Contains(w.(string), text) {
				return true
			}
		}
		return false
	}
	var h map[string]any
	testload.Poll(t, "the throttled stream warned", func() error {
		if h = health(t, env, slow.ID, owner); !warned(h, "arriving slower than real time") {
			return fmt.Errorf("health %v", h)
		}
		return nil
	})
	if behind := h["behind_seconds"].(float64); behind < 3 {
		t.Errorf("throttled stream behind_seconds %v", behind)
	}
	testload.Poll(t, "the stream with dropped frames warned", func() error {
		if h = health(t, env, gappy.ID, owner); !warned(h, "gaps in the video") {
			return fmt.Errorf("health %v", h)
		}
		return nil
	})
	if h["timestamp_gaps"].(float64) < 3 {
		t.Errorf("timestamp_gaps %v", h["timestamp_gaps"])
	}
	h = health(t, env, onTime.ID, owner)
	if h["receiving"] != true || h["behind_seconds"].(float64) >= 3 || h["timestamp_gaps"] != 0.0 ||
		warned(h, "slower than real time") || warned(h, "gaps in the video") {
		t.Errorf("the real-time stream: %v", h)
	}
}
