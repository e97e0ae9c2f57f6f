package restream_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/live"
	"github.com/onair/onair/modules/restream"
	"github.com/onair/onair/modules/webhooks"
)

func requireTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			testload.Skip(t, "%s not on PATH", tool)
		}
	}
	testload.Heavy(t)
}

// publish runs ffmpeg sending test video and tone to target until the
// test ends (or it is killed).
func publish(t *testing.T, target string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("ffmpeg", "-hide_banner", "-loglevel", "error", "-re",
		"-f", "lavfi", "-i", "testsrc=size=320x240:rate=25",
		"-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100",
		"-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-pix_fmt", "yuv420p", "-g", "50",
		"-c:a", "aac", "-b:a", "96k", "-f", "flv", target)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

// health reads a show's health through env.
func health(t *testing.T, env *onairtest.Env, token string, id int64) map[string]any {
	t.Helper()
	return env.Do("GET", fmt.Sprintf("/v1/shows/%d/health", id), token, nil).Expect(t, http.StatusOK).JSON(t)["health"].(map[string]any)
}

// destination is the one destination a health lists.
func destination(h map[string]any) map[string]any {
	list, _ := h["destinations"].([]any)
	if len(list) != 1 {
		return nil
	}
	d, _ := list[0].(map[string]any)
	return d
}

// probe is the codecs ffprobe finds in url, sorted and joined.
func probe(t *testing.T, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testload.Patience)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ffprobe", "-v", "error", "-show_entries", "stream=codec_name,height", "-of", "json", url).Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v", url, err)
	}
	var res struct {
		Streams []struct {
			CodecName string `json:"codec_name"`
			Height    int    `json:"height"`
		}
	}
	json.Unmarshal(out, &res)
	seen := map[string]bool{}
	var names []string
	for _, s := range res.Streams {
		n := s.CodecName
		if s.Height > 0 {
			n = fmt.Sprintf("%s %dp", n, s.Height)
		}
		if !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	return strings.Join(names, ",")
}

// TestRestreamToAnotherOnAir: a show published to node A is pushed to a
// second OnAir (a real `onair serve`, B) through a destination; B's show
// goes live within 10 s of A's, and its HLS decodes. B restarting
// mid-show makes the destination retrying, then connected again, and B
// live again. Stopping A's show stops the push. The key is never in A's
// log, nor in the studio page.
func TestRestreamToAnotherOnAir(t *testing.T) {
	requireTools(t, "ffmpeg", "ffprobe")
	b := onairtest.NewProcess(t, "ONAIR_RECONNECT_WINDOW=120s")
	b.Start()
	b.Run("users", "create", "--name", "Relay Target", "--email", "target@example.com")
	btok := strings.TrimSpace(b.Run("tokens", "create", "--user", "target@example.com"))
	benv := b.Client()
	relayed := onairtest.CreateShow(t, benv, btok, map[string]any{"name": "Relayed Set", "description": "restream"})
	bShow, bKey := relayed.ID, relayed.Key

	a := onairtest.New(t, onairtest.Options{Configure: func(c *app.Config) { c.Set(webhooks.SettingAllowPrivate, true) }})
	rm, _ := onairtest.Module[*restream.Module](a)
	rm.SetBackoff(100 * time.Millisecond)
	_, atok := a.CreateUser("Dee Jay")
	d := a.Do("POST", "/v1/destinations", atok, map[string]any{"name": "Second OnAir", "url": "rtmp://" + b.RTMP + "/live/" + bKey}).
		Expect(t, http.StatusCreated).JSON(t)["destination"].(map[string]any)
	if strings.Contains(fmt.Sprint(d), bKey) {
		t.Fatalf("the key in clear: %v", d)
	}
	source := onairtest.CreateShow(t, a, atok, map[string]any{"name": "Source Set", "description": "restream"})
	aShow, aKey := source.ID, source.Key
	lm, _ := onairtest.Module[*live.Module](a)
	publish(t, "rtmp://"+lm.RTMPAddr()+"/live/"+aKey)

	var liveAt time.Time
	testload.Poll(t, "A live", func() error {
		if onairtest.GetShow(t, a, atok, aShow)["live"] != true {
			return fmt.Errorf("not live")
		}
		liveAt = time.Now()
		return nil
	})
	var bs map[string]any
	testload.Poll(t, "B live through the destination", func() error {
		if bs = onairtest.GetShow(t, benv, btok, bShow); bs["live"] != true {
			return fmt.Errorf("B's show: %v", bs)
		}
		return nil
	})
	took := time.Since(liveAt)
	t.Logf("B live %.2f s after A", took.Seconds())
	if took > 10*time.Second {
		t.Errorf("B went live %.1f s after A, want ≤ 10 s", took.Seconds())
	}
	if got := probe(t, bs["video_url"].(string)); !strings.Contains(got, "h264 240p") || !strings.Contains(got, "aac") {
		t.Fatalf("B's HLS: %q", got)
	}
	testload.Poll(t, "the destination connected, with a bitrate", func() error {
		dh := destination(health(t, a, atok, aShow))
		if dh == nil || dh["state"] != restream.StateConnected || dh["bitrate"].(float64) <= 0 || dh["name"] != "Second OnAir" {
			return fmt.Errorf("destination health %v", dh)
		}
		return nil
	})
	if m := metrics(t, a); !strings.Contains(m, `onair_restream_destinations{state="connected"} 1`) {
		t.Errorf("metrics:\n%s", m)
	}
	if bh := health(t, benv, btok, bShow); bh["receiving"] != true || bh["protocol"] != "rtmp" {
		t.Fatalf("B's health %v", bh)
	}

	// B restarts: retrying, then connected and B live again.
	b.Kill()
	testload.Poll(t, "the destination retrying", func() error {
		dh := destination(health(t, a, atok, aShow))
		if dh == nil || dh["state"] != restream.StateRetrying || dh["error"] == nil {
			return fmt.Errorf("destination health %v", dh)
		}
		return nil
	})
	b.Start()
	restarted := time.Now()
	testload.Poll(t, "the destination connected again", func() error {
		dh := destination(health(t, a, atok, aShow))
		if dh == nil || dh["state"] != restream.StateConnected || dh["error"] != nil {
			return fmt.Errorf("destination health %v", dh)
		}
		return nil
	})
	testload.Poll(t, "B receiving again", func() error {
		bh := health(t, benv, btok, bShow)
		if bh["receiving"] != true || onairtest.GetShow(t, benv, btok, bShow)["live"] != true {
			return fmt.Errorf("B's health %v", bh)
		}
		return nil
	})
	t.Logf("B receiving again %.2f s after its restart", time.Since(restarted).Seconds())

	// The show ends: the push stops.
	a.Do("POST", fmt.Sprintf("/v1/shows/%d/stop", aShow), atok, nil).Expect(t, http.StatusOK)
	testload.Poll(t, "B no longer receiving", func() error {
		if bh := health(t, benv, btok, bShow); bh["receiving"] != false {
			return fmt.Errorf("B's health %v", bh)
		}
		return nil
	})
	if dl := health(t, a, atok, aShow)["destinations"].([]any); len(dl) != 0 {
		t.Errorf("destinations after the show ended: %v", dl)
	}
	if strings.Contains(a.Logs(), bKey) {
		t.Errorf("the destination's key is in the log")
	}
	if !strings.Contains(a.Logs(), "restream connected") {
		t.Errorf("no connection logged")
	}
}

// metrics is env's /metrics.
func metrics(t *testing.T, env *onairtest.Env) string {
	t.Helper()
	resp, err := env.Client.Get(env.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}
