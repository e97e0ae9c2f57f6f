package live_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/onair/onair/internal/broadcasttest"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/live"
)

// requireTools skips a test only when one of the real clients is missing,
// then waits for the machine's turn of the heavy tests: encoders publish in
// real time and must not share the CPU with another media or browser suite.
func requireTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			testload.Skip(t, "%s not on PATH", tool)
		}
	}
	testload.Heavy(t)
}

// ffmpegArgs publishes seconds of test video (unless audioOnly) and tone.
func ffmpegArgs(target string, seconds int, audioOnly bool) []string {
	return broadcasttest.FFmpegArgs(target, seconds, audioOnly)
}

// publish starts ffmpeg, in the machine's turn of the heavy tests, and
// returns it with a channel of its exit error.
func publish(t *testing.T, target string, seconds int, audioOnly bool) (*exec.Cmd, <-chan error) {
	t.Helper()
	testload.Heavy(t)
	return broadcasttest.Start(t, target, seconds, audioOnly)
}

// exited waits for a publisher's exit error; testload.Patience bounds a
// hang.
func exited(t *testing.T, what string, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(testload.Patience):
		t.Fatalf("%s: still running after %s", what, testload.Patience)
		return nil
	}
}

type probed struct {
	CodecType string `json:"codec_type"`
	CodecName string `json:"codec_name"`
}

// ffprobe lists the codecs of a media URL, sorted ("aac,h264").
func ffprobe(t *testing.T, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testload.Patience)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ffprobe", "-v", "error", "-show_streams", "-of", "json", url).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("ffprobe %s: %v\n%s", url, err, stderr)
	}
	var res struct{ Streams []probed }
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	// A master playlist's variants each list their streams: the A/V
	// variant's audio is the audio-only one's too. Each codec counts once.
	var names []string
	for _, s := range res.Streams {
		if !slices.Contains(names, s.CodecName) {
			names = append(names, s.CodecName)
		}
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

// fetch GETs url. A master playlist (what video_url and audio_url name)
// is followed to its first variant, the media playlist a player loads.
func fetch(t *testing.T, url string) (int, http.Header, string) {
	t.Helper()
	status, h, body := getText(t, url)
	if status == http.StatusOK && strings.Contains(body, "#EXT-X-STREAM-INF:") {
		return getText(t, firstVariant(t, url, body))
	}
	return status, h, body
}

func getText(t *testing.T, url string) (int, http.Header, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(body)
}

// firstVariant is the absolute URL of a master playlist's first variant.
func firstVariant(t *testing.T, master, body string) string {
	t.Helper()
	lines := strings.Split(body, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "#EXT-X-STREAM-INF:") && i+1 < len(lines) {
			base, err := neturl.Parse(master)
			if err != nil {
				t.Fatal(err)
			}
			ref, err := neturl.Parse(strings.TrimSpace(lines[i+1]))
			if err != nil {
				t.Fatal(err)
			}
			return base.ResolveReference(ref).String()
		}
	}
	t.Fatalf("master playlist %s without a variant:\n%s", master, body)
	return ""
}

// awaitSegments waits until a live playlist lists at least seconds of
// finished segments and returns how many seconds it lists. A show is live
// as soon as its publisher is; its playlists appear with the first segment
// a moment later (later still on a loaded machine), so a test that reads
// them waits for that first.
func awaitSegments(t *testing.T, playlist string, seconds float64) float64 {
	t.Helper()
	var got float64
	testload.Poll(t, fmt.Sprintf("%g s of segments in %s", seconds, playlist), func() error {
		status, _, text := fetch(t, playlist)
		if got = playlistSeconds(text); status != http.StatusOK || got < seconds {
			return fmt.Errorf("status %d, %.2f s listed:\n%s", status, got, text)
		}
		return nil
	})
	return got
}

var extinf = regexp.MustCompile(`#EXTINF:([0-9.]+),`)

func playlistSeconds(text string) float64 {
	total := 0.0
	for _, m := range extinf.FindAllStringSubmatch(text, -1) {
		v, _ := strconv.ParseFloat(m[1], 64)
		total += v
	}
	return total
}

func isLive(s map[string]any) bool { return s["live"] == true }

// TestBroadcast is the whole path a DJ and a listener take: ffmpeg
// publishes H.264+AAC, the show goes live, ffprobe plays video_url (h264 +
// aac) and audio_url (aac only), stop, and the archive is a VOD playlist
// whose duration matches what was published.
func TestBroadcast(t *testing.T) {
	requireTools(t, "ffmpeg", "ffprobe")
	env := onairtest.New(t, onairtest.Options{})
	_, token := env.CreateUser("Dee Jay")
	b := onairtest.CreateShow(t, env, token, nil)
	before := b.Get(t)
	const seconds = 8
	_, done := publish(t, b.RTMP+"/"+b.Key, seconds, false)

	s := b.Await(t, "live", isLive)
	if s["thumbnail_label"] != "Live" || s["video_url"] == nil || s["audio_url"] == nil {
		t.Fatalf("live show: %v", s)
	}
	if s["start"] == before["start"] && before["start"] != s["created_at"] {
		t.Errorf("start did not become the actual start: %v", s["start"])
	}
	videoURL, audioURL := s["video_url"].(string), s["audio_url"].(string)
	awaitSegments(t, videoURL, 1)
	awaitSegments(t, audioURL, 1)
	if got := ffprobe(t, videoURL); got != "aac,h264" {
		t.Errorf("video_url streams %q, want aac,h264", got)
	}
	if got := ffprobe(t, audioURL); got != "aac" {
		t.Errorf("audio_url streams %q, want only aac", got)
	}
	status, h, text := fetch(t, videoURL)
	if status != 200 || h.Get("Content-Type") != "application/vnd.apple.mpegurl" || h.Get("Access-Control-Allow-Origin") != "*" ||
		h.Get("Cache-Control") != "no-cache" || !strings.Contains(text, "#EXT-X-PROGRAM-DATE-TIME") {
		t.Errorf("live playlist: %d %v\n%s", status, h, text)
	}

	if err := exited(t, "ffmpeg", done); err != nil {
		t.Fatalf("ffmpeg: %v", err)
	}
	if s := b.Get(t); !isLive(s) {
		t.Fatalf("show is not live inside the reconnect window after the publisher left: %v", s)
	}
	stopped := env.Do("POST", fmt.Sprintf("/v1/shows/%d/stop", b.ID), token, nil).Expect(t, http.StatusOK).JSON(t)["show"].(map[string]any)
	if stopped["complete"] != true || stopped["live"] != false || stopped["thumbnail_label"] != "Finished" || stopped["duration"] == nil {
		t.Fatalf("stopped show: %v", stopped)
	}

	s = b.Await(t, "archived", func(s map[string]any) bool { return s["archive"] == true })
	if !regexp.MustCompile(`^00:00:\d\d$`).MatchString(s["thumbnail_label"].(string)) {
		t.Errorf("archived label %v, want HH:MM:SS", s["thumbnail_label"])
	}
	status, _, vod := fetch(t, s["video_url"].(string))
	if status != 200 || !strings.Contains(vod, "#EXT-X-PLAYLIST-TYPE:VOD") || !strings.Contains(vod, "#EXT-X-ENDLIST") {
		t.Fatalf("archive playlist %d:\n%s", status, vod)
	}
	if d := playlistSeconds(vod); d < seconds-1 || d > seconds+1 {
		t.Errorf("archive lasts %.2f s, published %d s", d, seconds)
	}
	if got := ffprobe(t, s["audio_url"].(string)); got != "aac" {
		t.Errorf("archived audio_url streams %q", got)
	}
	// ffmpeg made a real thumbnail and preview from a keyframe.
	s = b.Await(t, "thumbnailed", func(s map[string]any) bool { return s["gif_url"] != nil })
	if status, h, _ := fetch(t, s["image_url"].(string)); status != 200 || h.Get("Content-Type") != "image/jpeg" {
		t.Errorf("image_url %v: %d %s", s["image_url"], status, h.Get("Content-Type"))
	}
	if status, h, _ := fetch(t, s["gif_url"].(string)); status != 200 || h.Get("Content-Type") != "image/gif" {
		t.Errorf("gif_url %v: %d %s", s["gif_url"], status, h.Get("Content-Type"))
	}
}

// TestReconnectContinuesTheShow publishes twice with the same key inside
// the reconnect window: one show, one start, one archive of both parts.
func TestReconnectContinuesTheShow(t *testing.T) {
	requireTools(t, "ffmpeg")
	env := onairtest.New(t, onairtest.Options{})
	_, token := env.CreateUser("Re Connect")
	b := onairtest.CreateShow(t, env, token, nil)
	_, done := publish(t, b.RTMP+"/"+b.Key, 4, false)
	first := b.Await(t, "live", isLive)
	if err := exited(t, "the first publisher", done); err != nil {
		t.Fatal(err)
	}
	_, done = publish(t, b.RTMP+"/"+b.Key, 4, false)
	if err := exited(t, "the second publisher", done); err != nil {
		t.Fatal(err)
	}
	s := b.Get(t)
	if !isLive(s) || s["start"] != first["start"] {
		t.Fatalf("after reconnect: live %v start %v (first start %v)", s["live"], s["start"], first["start"])
	}
	env.Do("POST", fmt.Sprintf("/v1/shows/%d/stop", b.ID), token, nil).Expect(t, http.StatusOK)
	s = b.Await(t, "archived", func(s map[string]any) bool { return s["archive"] == true })
	_, _, vod := fetch(t, s["video_url"].(string))
	if !strings.Contains(vod, "#EXT-X-DISCONTINUITY") {
		t.Errorf("archive of a reconnected show has no discontinuity:\n%s", vod)
	}
	if d := playlistSeconds(vod); d < 7 || d > 9 {
		t.Errorf("archive of two 4 s parts lasts %.2f s", d)
	}
}

// TestStopDisconnectsPublisher: stopping through the API cuts the
// publisher off, and its key is refused from then on.
func TestStopDisconnectsPublisher(t *testing.T) {
	requireTools(t, "ffmpeg")
	env := onairtest.New(t, onairtest.Options{})
	_, token := env.CreateUser("Cut Off")
	b := onairtest.CreateShow(t, env, token, nil)
	_, done := publish(t, b.RTMP+"/"+b.Key, 60, false)
	b.Await(t, "live", isLive)
	env.Do("POST", fmt.Sprintf("/v1/shows/%d/stop", b.ID), token, nil).Expect(t, http.StatusOK)
	exited(t, "ffmpeg after the stop", done)
	_, done = publish(t, b.RTMP+"/"+b.Key, 2, false)
	if err := exited(t, "ffmpeg with the key of a complete show", done); err == nil {
		t.Fatal("the key of a complete show was accepted")
	}
}

// TestWrongKeyRefused: a wrong key never goes live.
func TestWrongKeyRefused(t *testing.T) {
	requireTools(t, "ffmpeg")
	env := onairtest.New(t, onairtest.Options{})
	_, token := env.CreateUser("Wrong Key")
	b := onairtest.CreateShow(t, env, token, nil)
	for _, key := range []string{b.Key + "x", "sk_" + strconv.FormatInt(b.ID, 10) + "_guess", "nonsense"} {
		_, done := publish(t, b.RTMP+"/"+key, 2, false)
		if err := exited(t, "ffmpeg with a wrong key", done); err == nil {
			t.Errorf("key %q accepted", key)
		}
	}
	if s := b.Get(t); isLive(s) {
		t.Fatal("show went live on a wrong key")
	}
}

// TestAudioOnly: a publisher without video gets audio_url and a null
// video_url.
func TestAudioOnly(t *testing.T) {
	requireTools(t, "ffmpeg", "ffprobe")
	env := onairtest.New(t, onairtest.Options{})
	_, token := env.CreateUser("Radio Voice")
	b := onairtest.CreateShow(t, env, token, nil)
	_, done := publish(t, b.RTMP+"/"+b.Key, 6, true)
	s := b.Await(t, "live", isLive)
	if s["video_url"] != nil || s["audio_url"] == nil {
		t.Fatalf("audio-only show: video_url %v audio_url %v", s["video_url"], s["audio_url"])
	}
	awaitSegments(t, s["audio_url"].(string), 1)
	if got := ffprobe(t, s["audio_url"].(string)); got != "aac" {
		t.Errorf("audio_url streams %q", got)
	}
	exited(t, "ffmpeg", done)
}

// TestGStreamerShowGoesLive: GStreamer's rtmp2sink is a publisher too.
func TestGStreamerShowGoesLive(t *testing.T) {
	requireTools(t, "gst-launch-1.0", "ffprobe")
	env := onairtest.New(t, onairtest.Options{})
	_, token := env.CreateUser("Gee Streamer")
	b := onairtest.CreateShow(t, env, token, nil)
	pipeline := fmt.Sprintf("videotestsrc is-live=true num-buffers=150 ! video/x-raw,width=320,height=240,framerate=25/1 ! "+
		"x264enc key-int-max=50 tune=zerolatency speed-preset=ultrafast ! h264parse ! flvmux name=m streamable=true ! "+
		"rtmp2sink location=%s/%s audiotestsrc is-live=true num-buffers=260 ! audioconvert ! avenc_aac ! aacparse ! m.", b.RTMP, b.Key)
	cmd := exec.Command("gst-launch-1.0", append([]string{"-q"}, strings.Fields(pipeline)...)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	s := b.Await(t, "live", isLive)
	awaitSegments(t, s["video_url"].(string), 1)
	if got := ffprobe(t, s["video_url"].(string)); got != "aac,h264" {
		t.Errorf("video_url streams %q", got)
	}
}

// TestPrivateMedia: a private show's media is served only through the
// signed URLs its owner gets.
func TestPrivateMedia(t *testing.T) {
	requireTools(t, "ffmpeg")
	env := onairtest.New(t, onairtest.Options{})
	_, token := env.CreateUser("Pri Vate")
	b := onairtest.CreateShow(t, env, token, map[string]any{"private": true})
	_, done := publish(t, b.RTMP+"/"+b.Key, 5, false)
	s := b.Await(t, "live", isLive)
	signed := s["video_url"].(string)
	if !strings.Contains(signed, "/t/") {
		t.Fatalf("private video_url is not signed: %s", signed)
	}
	awaitSegments(t, signed, 1)
	if status, _, _ := fetch(t, signed); status != 200 {
		t.Errorf("signed URL: %d", status)
	}
	unsigned := fmt.Sprintf("%s/media/shows/%d/index.m3u8", env.URL, b.ID)
	if status, _, _ := fetch(t, unsigned); status != 404 {
		t.Errorf("unsigned URL of a private show: %d", status)
	}
	tampered := regexp.MustCompile(`/t/(\d+)\.[0-9a-f]+/`).ReplaceAllString(signed, "/t/${1}.00000000000000000000000000000000/")
	if status, _, _ := fetch(t, tampered); status != 403 {
		t.Errorf("tampered token: %d", status)
	}
	exited(t, "ffmpeg", done)
}

// TestDeleteLiveShow: deleting a live show cuts the publisher off and
// removes its media; nothing is archived for it.
func TestDeleteLiveShow(t *testing.T) {
	requireTools(t, "ffmpeg")
	env := onairtest.New(t, onairtest.Options{})
	_, token := env.CreateUser("Del Ete")
	b := onairtest.CreateShow(t, env, token, nil)
	_, done := publish(t, b.RTMP+"/"+b.Key, 60, false)
	s := b.Await(t, "live", isLive)
	env.Do("DELETE", fmt.Sprintf("/v1/shows/%d", b.ID), token, nil).Expect(t, http.StatusOK)
	exited(t, "ffmpeg after the show was deleted", done)
	m, _ := onairtest.Module[*live.Module](env)
	m.Wait()
	if status, _, _ := fetch(t, s["video_url"].(string)); status != http.StatusNotFound {
		t.Errorf("media of a deleted show answers %d", status)
	}
	if _, err := os.Stat(filepath.Join(env.Core.Config.DataDir, "media", "shows", strconv.FormatInt(b.ID, 10))); !os.IsNotExist(err) {
		t.Errorf("media directory of a deleted show remains (%v)", err)
	}
}

// TestRacingPublishers: two publishers with one key at the same moment
// never both stream; after stop neither is left publishing.
func TestRacingPublishers(t *testing.T) {
	requireTools(t, "ffmpeg")
	env := onairtest.New(t, onairtest.Options{})
	_, token := env.CreateUser("Race Condition")
	b := onairtest.CreateShow(t, env, token, nil)
	_, doneA := publish(t, b.RTMP+"/"+b.Key, 60, false)
	_, doneB := publish(t, b.RTMP+"/"+b.Key, 60, false)
	b.Await(t, "live", isLive)
	env.Do("POST", fmt.Sprintf("/v1/shows/%d/stop", b.ID), token, nil).Expect(t, http.StatusOK)
	for name, done := range map[string]<-chan error{"first": doneA, "second": doneB} {
		exited(t, "the "+name+" publisher after stop", done)
	}
	// The ingest lets go of a stream just after its publisher's
	// connection ends: wait for that, not for the publishers alone.
	m, _ := onairtest.Module[*live.Module](env)
	testload.Poll(t, "no stream registered after stop", func() error {
		if n := m.Streams(); n != 0 {
			return fmt.Errorf("%d streams still registered", n)
		}
		return nil
	})
}
