package live_test

import (
	"fmt"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/live"
)

var (
	targetTag = regexp.MustCompile(`(?m)^#EXT-X-TARGETDURATION:(\d+)$`)
	seqTag    = regexp.MustCompile(`(?m)^#EXT-X-MEDIA-SEQUENCE:(\d+)$`)
	pdtTag    = regexp.MustCompile(`(?m)^#EXT-X-PROGRAM-DATE-TIME:(\S+)$`)
)

// mediaSequence is a playlist's EXT-X-MEDIA-SEQUENCE (0 when absent).
func mediaSequence(text string) int {
	m := seqTag.FindStringSubmatch(text)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// checkLivePlaylist asserts what a player relies on: EXT-X-TARGETDURATION
// is want and the longest segment rounded up, no segment is longer, each
// has EXT-X-PROGRAM-DATE-TIME, and the window holds three targets.
func checkLivePlaylist(t *testing.T, name, text string, want int) {
	t.Helper()
	m := targetTag.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("%s: no EXT-X-TARGETDURATION\n%s", name, text)
	}
	target, _ := strconv.Atoi(m[1])
	longest, total := 0.0, 0.0
	durations := extinf.FindAllStringSubmatch(text, -1)
	for _, d := range durations {
		v, _ := strconv.ParseFloat(d[1], 64)
		longest, total = max(longest, v), total+v
	}
	if target != want || target != int(math.Ceil(longest)) {
		t.Errorf("%s: EXT-X-TARGETDURATION %d, want %d = longest segment %.3f s rounded up\n%s", name, target, want, longest, text)
	}
	if total < 3*float64(target) {
		t.Errorf("%s: window of %.3f s, under 3 × %d s\n%s", name, total, target, text)
	}
	if n := len(pdtTag.FindAllString(text, -1)); n != len(durations) {
		t.Errorf("%s: %d program date times for %d segments\n%s", name, n, len(durations), text)
	}
}

// TestTwentySecondsArchiveAsTwenty publishes 20 s with ffmpeg: both live
// playlists keep a true target duration (2 s, the segment length) and a
// window of at least three targets once it slides; the show starts at the
// first media sample, so a chat message's position is its time into the
// media; the archive lasts 20 s ± 1 s.
func TestTwentySecondsArchiveAsTwenty(t *testing.T) {
	requireTools(t, "ffmpeg", "ffprobe")
	// The short sliding window (DVR off) is what slides within 20 s.
	env := onairtest.New(t, onairtest.Options{Configure: func(c *app.Config) { c.Set(live.SettingDVRWindow, time.Duration(0)) }})
	_, token := env.CreateUser("Twenty Seconds")
	b := onairtest.CreateShow(t, env, token, nil)
	const seconds = 20
	_, done := publish(t, b.RTMP+"/"+b.Key, seconds, false)

	s := b.Await(t, "live", isLive)
	before := time.Now()
	posted := env.Do("POST", fmt.Sprintf("/v1/shows/%d/chats", b.ID), token, map[string]any{"message": "hello"}).
		Expect(t, http.StatusCreated).JSON(t)["chat"].(map[string]any)
	after := time.Now()
	position, _ := strconv.ParseFloat(posted["position"].(string), 64)

	videoURL, audioURL := s["video_url"].(string), s["audio_url"].(string)
	for _, url := range []string{videoURL, audioURL} {
		var text string
		testload.Poll(t, "the window of "+url+" to slide", func() error {
			_, _, text = fetch(t, url)
			if mediaSequence(text) == 0 {
				return fmt.Errorf("not yet:\n%s", text)
			}
			return nil
		})
		checkLivePlaylist(t, url, text, 2)
	}
	if got := ffprobe(t, audioURL); got != "aac" {
		t.Errorf("audio_url streams %q", got)
	}
	if err := exited(t, "ffmpeg", done); err != nil {
		t.Fatalf("ffmpeg: %v", err)
	}

	env.Do("POST", fmt.Sprintf("/v1/shows/%d/stop", b.ID), token, nil).Expect(t, http.StatusOK)
	s = b.Await(t, "archived", func(s map[string]any) bool { return s["archive"] == true })
	if d, _ := s["duration"].(float64); math.Abs(d-seconds) > 1 {
		t.Errorf("archived duration %v s, published %d s", s["duration"], seconds)
	}
	_, _, vod := fetch(t, s["audio_url"].(string))
	if d := playlistSeconds(vod); math.Abs(d-seconds) > 1 {
		t.Errorf("audio archive lasts %.2f s, published %d s", d, seconds)
	}
	m := pdtTag.FindStringSubmatch(vod)
	if m == nil {
		t.Fatalf("audio archive without program date time:\n%s", vod)
	}
	first, err := time.Parse(time.RFC3339Nano, m[1])
	if err != nil {
		t.Fatal(err)
	}
	if start := s["start"].(string); start != first.UTC().Format("2006-01-02 15:04:05") && start != first.UTC().Add(time.Second).Format("2006-01-02 15:04:05") {
		t.Errorf("show start %s, first sample at %s", start, first)
	}
	// The message was posted once a whole segment existed, so at least
	// that far into the media, and its position says how far exactly.
	lo, hi := before.Sub(first).Seconds()-0.5, after.Sub(first).Seconds()+0.5
	if position < 1.5 || position < lo || position > hi {
		t.Errorf("chat position %.3f s, want between %.3f and %.3f s after the first sample", position, lo, hi)
	}
	if !strings.Contains(vod, "#EXT-X-ENDLIST") {
		t.Errorf("audio archive not ended:\n%s", vod)
	}
}
