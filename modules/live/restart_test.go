package live_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/onair/onair/internal/onairtest"
)

// setup creates a user, a token and a show on a real server, and returns
// the broadcast.
func setup(t *testing.T, p *onairtest.Process) *onairtest.Show {
	p.Run("users", "create", "--name", "Crash Test", "--email", "crash@example.com")
	token := strings.TrimSpace(p.Run("tokens", "create", "--user", "crash@example.com"))
	env := p.Client()
	r := env.Do("POST", "/v1/shows", token, map[string]any{"name": "Crash Set", "description": "restarts"})
	var body struct {
		Show struct {
			ID        int64  `json:"id"`
			StreamKey string `json:"stream_key"`
		} `json:"show"`
	}
	json.Unmarshal(r.Body, &body)
	return &onairtest.Show{Env: env, Token: token, ID: body.Show.ID, Key: body.Show.StreamKey, RTMP: "rtmp://" + p.RTMP + "/live"}
}

// TestRestartMidShowResumes kills the process in the middle of a live
// show: after the restart the show is still live and resumable, and the
// archive keeps every segment finished before the crash.
func TestRestartMidShowResumes(t *testing.T) {
	requireTools(t, "ffmpeg")
	p := onairtest.NewProcess(t)
	p.Start()
	b := setup(t, p)
	_, done := publish(t, b.RTMP+"/"+b.Key, 30, false)
	first := b.Await(t, "live", isLive)
	before := awaitSegments(t, first["video_url"].(string), 4)
	p.Kill()
	exited(t, "ffmpeg after the server was killed", done)

	p.Start()
	s := b.Get(t)
	if !isLive(s) || s["start"] != first["start"] {
		t.Fatalf("after the restart: live %v start %v, want live since %v", s["live"], s["start"], first["start"])
	}
	_, done = publish(t, b.RTMP+"/"+b.Key, 3, false)
	if err := exited(t, "ffmpeg resuming the show", done); err != nil {
		t.Fatalf("resume after restart: %v", err)
	}
	b.Env.Do("POST", fmt.Sprintf("/v1/shows/%d/stop", b.ID), b.Token, nil).Expect(t, http.StatusOK)
	s = b.Await(t, "archived", func(s map[string]any) bool { return s["archive"] == true })
	_, _, vod := fetch(t, s["video_url"].(string))
	// The segments finished before the crash (one more may have finished
	// between the look at the playlist and the kill) and the 3 s after.
	if d := playlistSeconds(vod); d < before+2 || d > before+2+3+1 {
		t.Errorf("archive lasts %.2f s, with %.2f s finished before the crash and 3 s after:\n%s", d, before, vod)
	}
	if !strings.Contains(vod, "#EXT-X-DISCONTINUITY") {
		t.Errorf("no discontinuity between before and after the crash:\n%s", vod)
	}
}

// TestRestartAfterWindowArchives: when nobody comes back within the
// reconnect window after a restart, the show completes and is archived.
func TestRestartAfterWindowArchives(t *testing.T) {
	requireTools(t, "ffmpeg")
	p := onairtest.NewProcess(t, "ONAIR_RECONNECT_WINDOW=2s")
	p.Start()
	b := setup(t, p)
	_, done := publish(t, b.RTMP+"/"+b.Key, 30, false)
	live := b.Await(t, "live", isLive)
	before := awaitSegments(t, live["video_url"].(string), 4)
	p.Kill()
	exited(t, "ffmpeg after the server was killed", done)
	p.Start()
	s := b.Await(t, "archived", func(s map[string]any) bool { return s["archive"] == true })
	if s["complete"] != true || s["duration"] == nil {
		t.Fatalf("show after the window: %v", s)
	}
	_, _, vod := fetch(t, s["video_url"].(string))
	if d := playlistSeconds(vod); d < before-0.5 {
		t.Errorf("archive lost the segments before the crash (%.2f s of %.2f s):\n%s", d, before, vod)
	}
}
