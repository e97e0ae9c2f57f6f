package live_test

import (
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
)

// TestStreamHealth: while ffmpeg publishes 320×240 at 25 fps with a
// keyframe every 5 s, GET /v1/shows/:id/health tells its owner and staff
// that OnAir receives it, with the codecs, size, frame rate, bitrates and
// keyframe interval, and warns in words about the interval; anyone else
// gets a 404, and a show nobody publishes is not receiving.
func TestStreamHealth(t *testing.T) {
	requireTools(t, "ffmpeg")
	env := onairtest.New(t, onairtest.Options{})
	_, owner := env.CreateUser("Health Owner")
	_, other := env.CreateUser("Health Other")
	_, staff := env.CreateUser("Health Staff", onairtest.Role("moderator"))
	b := onairtest.CreateShow(t, env, owner, nil)
	path := fmt.Sprintf("/v1/shows/%d/health", b.ID)

	idle := env.Do("GET", path, owner, nil).Expect(t, http.StatusOK).JSON(t)["health"].(map[string]any)
	if idle["receiving"] != false || idle["since"] != nil {
		t.Errorf("health of a show nobody publishes: %v", idle)
	}
	env.Do("GET", path, other, nil).Expect(t, http.StatusNotFound)
	env.Do("GET", path, "", nil).Expect(t, http.StatusUnauthorized)
	env.Do("GET", "/v1/shows/999999/health", owner, nil).Expect(t, http.StatusNotFound)

	args := ffmpegArgs(b.RTMP+"/"+b.Key, 120, false)
	for i, a := range args {
		if a == "-g" {
			args[i+1] = "125" // 5 s at 25 fps
		}
	}
	cmd := exec.Command("ffmpeg", args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })

	var h map[string]any
	testload.Poll(t, "a health with a keyframe interval", func() error {
		h = env.Do("GET", path, owner, nil).Expect(t, http.StatusOK).JSON(t)["health"].(map[string]any)
		if h["receiving"] != true || h["keyframe_interval"].(float64) == 0 || h["video_bitrate"].(float64) == 0 {
			return fmt.Errorf("health %v", h)
		}
		return nil
	})
	if h["video_codec"] != "H.264" || h["audio_codec"] != "AAC" || h["width"] != 320.0 || h["height"] != 240.0 || h["since"] == nil {
		t.Errorf("health: %v", h)
	}
	if fps := h["fps"].(float64); fps < 20 || fps > 30 {
		t.Errorf("fps %v, want about 25", fps)
	}
	if k := h["keyframe_interval"].(float64); k < 4.5 || k > 5.5 {
		t.Errorf("keyframe_interval %v, want 5", k)
	}
	if a := h["audio_bitrate"].(float64); a < 40 || a > 200 {
		t.Errorf("audio_bitrate %v, want about 96", a)
	}
	warned := false
	for _, w := range h["warnings"].([]any) {
		warned = warned || strings.Contains(w.(string), "keyframe interval is 5 s; set 2 s in OBS")
	}
	if !warned {
		t.Errorf("no keyframe warning: %v", h["warnings"])
	}
	staffView := env.Do("GET", path, staff, nil).Expect(t, http.StatusOK).JSON(t)["health"].(map[string]any)
	if staffView["receiving"] != true {
		t.Errorf("staff see %v", staffView)
	}
	env.Do("GET", path, other, nil).Expect(t, http.StatusNotFound)
}
