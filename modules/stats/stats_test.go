package stats_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/live"
	"github.com/onair/onair/modules/stats"
)

// statsOf reads GET /v1/shows/:id/stats as token.
type statsBody struct {
	Stats struct {
		Points []struct {
			T            string  `json:"t"`
			Seconds      float64 `json:"seconds"`
			Viewers      int     `json:"viewers"`
			VideoBitrate int     `json:"video_bitrate"`
			AudioBitrate int     `json:"audio_bitrate"`
			FPS          float64 `json:"fps"`
			Keyframe     float64 `json:"keyframe_interval"`
			ChatMessages int     `json:"chat_messages"`
		} `json:"points"`
		PeakViewers    int     `json:"peak_viewers"`
		AverageViewers float64 `json:"average_viewers"`
		WatchSeconds   int     `json:"watch_seconds"`
		ChatMessages   int     `json:"chat_messages"`
		NewFollowers   int     `json:"new_followers"`
	} `json:"stats"`
}

func statsOf(t *testing.T, env *onairtest.Env, token string, id int64) statsBody {
	t.Helper()
	var b statsBody
	env.Do("GET", fmt.Sprintf("/v1/shows/%d/stats", id), token, nil).Expect(t, http.StatusOK).Decode(t, &b)
	return b
}

// TestShowStatsOfAFiftySecondShow is the "done when", at the
// default 10 s interval (a point as the show goes live, then one at each
// tick of the clock, so 50 s of broadcast always give five): ffmpeg broadcasts for 50 s while three players
// (three client addresses behind a trusted proxy) fetch the live
// playlist, a fan chats three times and follows the host. The host then
// reads at least five points with bitrates, frame rate and the three
// viewers, and a summary that adds up. It runs on MySQL when the suite
// has it (the points' times are DATETIME there), else on SQLite.
func TestShowStatsOfAFiftySecondShow(t *testing.T) {
	testload.Heavy(t)
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		testload.Skip(t, "ffmpeg is not on PATH")
	}
	backends := onairtest.Backends()
	_, loopback, _ := net.ParseCIDR("127.0.0.0/8")
	env := onairtest.New(t, onairtest.Options{Backend: backends[len(backends)-1], Configure: func(c *app.Config) {
		c.TrustedProxies = []*net.IPNet{loopback}
	}})
	if every := stats.From(env.Core).Every(); every != 10*time.Second {
		t.Fatalf("the default interval is %s, want 10s", every)
	}
	host, hostToken := env.CreateUser("Stats Host")
	_, fanToken := env.CreateUser("Stats Fan")
	r := env.Do("POST", "/v1/shows", hostToken, map[string]any{"name": "Fifty Seconds", "description": "charted"}).Expect(t, http.StatusCreated).JSON(t)["show"].(map[string]any)
	id, key := onairtest.ID(r), r["stream_key"].(string)
	lm, _ := onairtest.Module[*live.Module](env)

	const seconds = 50
	ff := exec.Command("ffmpeg", "-hide_banner", "-loglevel", "error", "-re",
		"-f", "lavfi", "-i", fmt.Sprintf("testsrc=size=320x240:rate=25:duration=%d", seconds),
		"-f", "lavfi", "-i", fmt.Sprintf("sine=frequency=440:sample_rate=44100:duration=%d", seconds),
		"-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-pix_fmt", "yuv420p", "-g", "50", "-b:v", "600k",
		"-c:a", "aac", "-b:a", "96k", "-f", "flv", "rtmp://"+lm.RTMPAddr()+"/live/"+key)
	ff.Stderr = &strings.Builder{}
	if err := ff.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- ff.Wait() }()
	t.Cleanup(func() { ff.Process.Kill(); <-exited })

	testload.Poll(t, "the show live", func() error {
		if s := env.Do("GET", fmt.Sprintf("/v1/shows/%d", id), hostToken, nil).JSON(t)["show"].(map[string]any); s["live"] != true {
			return fmt.Errorf("live=%v", s["live"])
		}
		return nil
	})

	// Three players poll the live playlist every 2 s until the end.
	ctx, stopWatching := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, addr := range []string{"203.0.113.7", "198.51.100.9", "192.0.2.44"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("%s/media/shows/%d/index.m3u8", env.URL, id), nil)
				req.Header.Set("X-Forwarded-For", addr)
				if resp, err := env.Client.Do(req); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				select {
				case <-ctx.Done():
				case <-time.After(2 * time.Second):
				}
			}
		}()
	}
	defer func() { stopWatching(); wg.Wait() }()

	// The fan chats three times (one message a second at most) and
	// follows the host.
	for i := range 3 {
		testload.Poll(t, "a chat message", func() error {
			if r := env.Do("POST", fmt.Sprintf("/v1/shows/%d/chats", id), fanToken, map[string]any{"message": fmt.Sprintf("hello %d", i)}); r.Status != http.StatusCreated {
				return fmt.Errorf("%d %s", r.Status, r.Body)
			}
			return nil
		})
	}
	env.Do("POST", fmt.Sprintf("/v1/users/%d/follow", host.ID), fanToken, nil).Expect(t, http.StatusOK)

	// While live, the host already reads points.
	testload.Poll(t, "a first point while live", func() error {
		if b := statsOf(t, env, hostToken, id); len(b.Stats.Points) == 0 {
			return fmt.Errorf("no point yet")
		}
		return nil
	})

	select {
	case err := <-exited:
		exited <- err
		if err != nil {
			t.Fatalf("ffmpeg: %v: %s", err, ff.Stderr)
		}
	case <-time.After(seconds*time.Second + testload.Patience):
		t.Fatal("ffmpeg did not finish its 50 s")
	}
	stopWatching()
	env.Do("POST", fmt.Sprintf("/v1/shows/%d/stop", id), hostToken, nil).Expect(t, http.StatusOK)

	b := statsOf(t, env, hostToken, id).Stats
	t.Logf("%d points, peak %d, average %.1f, watch %d s, chat %d, followers %d",
		len(b.Points), b.PeakViewers, b.AverageViewers, b.WatchSeconds, b.ChatMessages, b.NewFollowers)
	if len(b.Points) < 5 {
		t.Fatalf("%d points for a %d s show at 10 s, want at least 5", len(b.Points), seconds)
	}
	var media, three, viewers, chats int
	var watch float64
	var prev time.Time
	for i, p := range b.Points {
		t.Logf("point %d: %+v", i, p)
		ts, err := time.Parse("2006-01-02 15:04:05", p.T)
		if err != nil {
			ts, err = time.Parse(time.RFC3339, p.T)
		}
		// The first point is taken when the show goes live, the next
		// ones at the clock's 10 s ticks.
		if err != nil || (i > 0 && (ts.Truncate(10*time.Second) != ts || !ts.After(prev))) {
			t.Errorf("point %d at %q: not a 10 s tick after %s (%v)", i, p.T, prev, err)
		}
		if want := min(ts.Sub(prev).Seconds(), 10); (i == 0 && p.Seconds != 0) || (i > 0 && p.Seconds != want) {
			t.Errorf("point %d stands for %v s, want %v", i, p.Seconds, want)
		}
		prev = ts
		if p.VideoBitrate > 100 && p.AudioBitrate > 30 && p.FPS > 20 && p.Keyframe > 0 {
			media++
		}
		if p.Viewers == 3 {
			three++
		}
		viewers += p.Viewers
		watch += float64(p.Viewers) * p.Seconds
		chats += p.ChatMessages
	}
	if media < 4 {
		t.Errorf("%d points with video and audio bitrates, fps and keyframes, want at least 4", media)
	}
	if three == 0 {
		t.Error("no point counted the three players")
	}
	if b.PeakViewers != 3 {
		t.Errorf("peak_viewers %d, want 3", b.PeakViewers)
	}
	if want := float64(viewers) / float64(len(b.Points)); b.AverageViewers < want-0.05 || b.AverageViewers > want+0.05 {
		t.Errorf("average_viewers %.1f, want %.2f", b.AverageViewers, want)
	}
	if want := int(watch + 0.5); b.WatchSeconds != want || want < 3*10*(len(b.Points)-2) {
		t.Errorf("watch_seconds %d, want %d (viewers × seconds of each point, three viewers most of the time)", b.WatchSeconds, want)
	}
	if b.ChatMessages != 3 || chats > 3 {
		t.Errorf("chat_messages %d (points %d), want 3", b.ChatMessages, chats)
	}
	if b.NewFollowers != 1 {
		t.Errorf("new_followers %d, want 1", b.NewFollowers)
	}

	// The points go with the show.
	env.Do("DELETE", fmt.Sprintf("/v1/shows/%d", id), hostToken, nil).Expect(t, http.StatusOK)
	n, err := env.Core.DB.NewSelect().Model((*stats.Point)(nil)).Where("show_id = ?", id).Count(context.Background())
	if err != nil || n != 0 {
		t.Errorf("after delete %d points remain (%v)", n, err)
	}
}

// TestShowStatsAccess: the owner and staff read a show's statistics
// (empty before it has run); anyone else who sees the show gets 403, a
// show they cannot see (private, missing, a malformed id) is 404, and no
// token is 401.
func TestShowStatsAccess(t *testing.T) {
	t.Parallel()
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env := onairtest.New(t, onairtest.Options{Backend: backend})
		_, hostToken := env.CreateUser("Access Host")
		_, otherToken := env.CreateUser("Someone Else")
		_, modToken := env.CreateUser("A Moderator", onairtest.Role("moderator"))
		_, adminToken := env.CreateUser("An Admin", onairtest.Role("admin"))
		create := func(private bool) int64 {
			r := env.Do("POST", "/v1/shows", hostToken, map[string]any{"name": "Access", "description": "x", "private": private}).Expect(t, http.StatusCreated)
			return onairtest.ID(r.JSON(t)["show"].(map[string]any))
		}
		public, private := create(false), create(true)
		tests := []struct {
			name, path, token string
			status            int
			code              string
		}{
			{"owner", fmt.Sprintf("/v1/shows/%d/stats", public), hostToken, 200, ""},
			{"moderator", fmt.Sprintf("/v1/shows/%d/stats", public), modToken, 200, ""},
			{"admin", fmt.Sprintf("/v1/shows/%d/stats", private), adminToken, 200, ""},
			{"owner of a private show", fmt.Sprintf("/v1/shows/%d/stats", private), hostToken, 200, ""},
			{"another user, public show", fmt.Sprintf("/v1/shows/%d/stats", public), otherToken, 403, "forbidden"},
			{"another user, private show", fmt.Sprintf("/v1/shows/%d/stats", private), otherToken, 404, "not_found"},
			{"no token", fmt.Sprintf("/v1/shows/%d/stats", public), "", 401, "unauthorized"},
			{"missing show", "/v1/shows/999999/stats", hostToken, 404, "not_found"},
			{"id zero", "/v1/shows/0/stats", hostToken, 404, "not_found"},
			{"id not a number", "/v1/shows/abc/stats", hostToken, 404, "not_found"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				r := env.Do("GET", tt.path, tt.token, nil).Expect(t, tt.status)
				if tt.code != "" {
					if got := r.ErrorCode(t); got != tt.code {
						t.Errorf("error code %q, want %q", got, tt.code)
					}
					return
				}
				var b statsBody
				r.Decode(t, &b)
				if len(b.Stats.Points) != 0 || b.Stats.PeakViewers != 0 || b.Stats.WatchSeconds != 0 || b.Stats.ChatMessages != 0 {
					t.Errorf("a show that never ran has statistics: %s", r.Body)
				}
				if !strings.Contains(string(r.Body), `"points":[]`) {
					t.Errorf("points is not an empty list: %s", r.Body)
				}
			})
		}
	})
}

// TestStatsIntervalBounds: a show's points are 1s to 1h apart, the
// process's samples 100ms to 1h; anything else stops the command naming
// the setting.
func TestStatsIntervalBounds(t *testing.T) {
	t.Parallel()
	type value struct {
		v  string
		ok bool
	}
	for env, values := range map[string][]value{
		stats.SettingInterval:        {{"10s", true}, {"1s", true}, {"1h", true}, {"999ms", false}, {"61m", false}, {"0", false}, {"-5s", false}, {"often", false}},
		stats.SettingProcessInterval: {{"1m", true}, {"100ms", true}, {"1h", true}, {"99ms", false}, {"61m", false}, {"0", false}, {"often", false}},
	} {
		for _, tt := range values {
			_, err := app.LoadConfig(flag.NewFlagSet("test", flag.ContinueOnError), nil, func(k string) string {
				if k == env {
					return tt.v
				}
				return ""
			})
			if tt.ok != (err == nil) {
				t.Errorf("%s=%s: %v", env, tt.v, err)
			}
			if err != nil && !strings.Contains(err.Error(), env) {
				t.Errorf("%s=%s: the error does not name the setting: %v", env, tt.v, err)
			}
		}
	}
}
