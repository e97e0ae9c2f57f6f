package live_test

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/live/hls"
)

// TestAudioOnlyShowIgnoresVideo: ffmpeg publishes H.264 and AAC, as OBS
// does by default, to an audio-only show (docs/show-options.md). The show
// goes live with audio_url and a null video_url, the audio playlist plays
// AAC alone, not one video segment nor A/V playlist is written, the health
// says the video is ignored, audio_only cannot change while live, and the
// archive is audio-only too. Run on SQLite and MySQL.
func TestAudioOnlyShowIgnoresVideo(t *testing.T) {
	requireTools(t, "ffmpeg", "ffprobe")
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env := onairtest.New(t, onairtest.Options{Backend: backend})
		_, token := env.CreateUser("Voice Only")
		b := onairtest.CreateShow(t, env, token, map[string]any{"audio_only": true})
		const seconds = 8
		_, done := publish(t, b.RTMP+"/"+b.Key, seconds, false)

		s := b.Await(t, "live", isLive)
		if s["video_url"] != nil || s["audio_url"] == nil || s["audio_only"] != true {
			t.Fatalf("live audio-only show: video_url %v audio_url %v audio_only %v", s["video_url"], s["audio_url"], s["audio_only"])
		}
		audioURL := s["audio_url"].(string)
		awaitSegments(t, audioURL, 1)
		if got := ffprobe(t, audioURL); got != "aac" {
			t.Errorf("audio_url streams %q, want aac", got)
		}
		// The health names the video sent for nothing, while it arrives.
		testload.Poll(t, "the health's audio-only warning", func() error {
			h := env.Do("GET", fmt.Sprintf("/v1/shows/%d/health", b.ID), token, nil).Expect(t, http.StatusOK).JSON(t)["health"].(map[string]any)
			for _, w := range h["warnings"].([]any) {
				if strings.Contains(w.(string), "audio only: the video you send") {
					return nil
				}
			}
			return fmt.Errorf("health %v", h)
		})
		r := env.Do("PUT", fmt.Sprintf("/v1/shows/%d", b.ID), token, map[string]any{"audio_only": false})
		if r.Status != http.StatusConflict {
			t.Errorf("audio_only changed while live: %d %s", r.Status, r.Body)
		}

		if err := exited(t, "ffmpeg", done); err != nil {
			t.Fatalf("ffmpeg: %v", err)
		}
		env.Do("POST", fmt.Sprintf("/v1/shows/%d/stop", b.ID), token, nil).Expect(t, http.StatusOK)
		s = b.Await(t, "archived", func(s map[string]any) bool { return s["archive"] == true })
		if s["video_url"] != nil || s["audio_url"] == nil || s["gif_url"] != nil {
			t.Fatalf("archived audio-only show: video_url %v audio_url %v gif_url %v", s["video_url"], s["audio_url"], s["gif_url"])
		}
		status, _, vod := fetch(t, s["audio_url"].(string))
		if status != 200 || !strings.Contains(vod, "#EXT-X-PLAYLIST-TYPE:VOD") {
			t.Fatalf("archive playlist %d:\n%s", status, vod)
		}
		if d := playlistSeconds(vod); d < seconds-1 || d > seconds+1 {
			t.Errorf("archive lasts %.2f s, published %d s", d, seconds)
		}
		if got := ffprobe(t, s["audio_url"].(string)); got != "aac" {
			t.Errorf("archived audio_url streams %q", got)
		}

		// On disk: the audio rendition and nothing of the A/V one.
		dir := filepath.Join(env.Core.Config.DataDir, "media", "shows", fmt.Sprint(b.ID))
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		audio := 0
		for _, e := range entries {
			name := e.Name()
			switch {
			case strings.HasPrefix(name, "seg-"), name == hls.PlaylistAV, name == hls.MasterAV, name == hls.ArchiveAV, name == hls.ArchiveMasterAV:
				t.Errorf("an audio-only show wrote %s", name)
			case strings.HasPrefix(name, "audio-") && strings.HasSuffix(name, ".ts"):
				audio++
			}
		}
		if audio < seconds/2-1 {
			t.Errorf("%d audio segments for %d s", audio, seconds)
		}
	})
}

// TestAudioOnlyShowWithoutAudio: a publisher that sends only video to an
// audio-only show is refused once ONAIR_RTMP_TRACK_WAIT of media passed
// without audio, and the show never goes live.
func TestAudioOnlyShowWithoutAudio(t *testing.T) {
	requireTools(t, "ffmpeg")
	env := onairtest.New(t, onairtest.Options{})
	_, token := env.CreateUser("Silent Picture")
	b := onairtest.CreateShow(t, env, token, map[string]any{"audio_only": true})
	testload.Heavy(t)
	cmd := exec.Command("ffmpeg", "-hide_banner", "-loglevel", "error", "-re",
		"-f", "lavfi", "-i", "testsrc=size=320x240:rate=25:duration=30",
		"-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-pix_fmt", "yuv420p", "-g", "50",
		"-an", "-f", "flv", b.RTMP+"/"+b.Key)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	if err := exited(t, "ffmpeg sending video alone", done); err == nil {
		t.Fatal("a publisher without audio ran to its end on an audio-only show")
	}
	if s := b.Get(t); s["live"] != false || s["audio_url"] != nil {
		t.Fatalf("show after the refusal: %v", s)
	}
	if !strings.Contains(env.Logs(), "audio-only show without audio") {
		t.Errorf("the refusal was not explained: %s", stderr.String())
	}
}
