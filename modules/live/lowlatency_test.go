package live_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	neturl "net/url"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/live"
	"github.com/onair/onair/modules/shows"
)

var (
	lastSegURI = regexp.MustCompile(`(?m)^(seg|audio)-(\d+)\.ts$`)
	partURI    = regexp.MustCompile(`(?m)^#EXT-X-PART:DURATION=[0-9.]+,URI="(seg|audio)-(\d+)-p(\d+)\.ts"`)
	hintURI    = regexp.MustCompile(`(?m)^#EXT-X-PRELOAD-HINT:TYPE=PART,URI="([^"]+)"$`)
)

// newestOf is the media sequence number of a live playlist's last
// complete segment, and of its newest part and that part's index (-1 when
// it lists no part).
func newestOf(t *testing.T, text string) (seg, partSeg uint64, part int) {
	t.Helper()
	segs := lastSegURI.FindAllStringSubmatch(text, -1)
	if len(segs) == 0 {
		t.Fatalf("no segment:\n%s", text)
	}
	seg, _ = strconv.ParseUint(segs[len(segs)-1][2], 10, 64)
	parts := partURI.FindAllStringSubmatch(text, -1)
	if len(parts) == 0 {
		return seg, 0, -1
	}
	partSeg, _ = strconv.ParseUint(parts[len(parts)-1][2], 10, 64)
	part, _ = strconv.Atoi(parts[len(parts)-1][3])
	return seg, partSeg, part
}

func resolve(t *testing.T, base, ref string) string {
	t.Helper()
	b, err := neturl.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	r, err := neturl.Parse(ref)
	if err != nil {
		t.Fatal(err)
	}
	return b.ResolveReference(r).String()
}

// timedGet GETs url and reports how long the answer took.
func timedGet(t *testing.T, url string) (int, string, time.Duration) {
	t.Helper()
	began := time.Now()
	status, _, body := getText(t, url)
	return status, body, time.Since(began)
}

// gstPlays decodes the stream at url with GStreamer, through the
// hlsdemux of old (which ignores the LL-HLS tags) and through uridecodebin
// (hlsdemux2, what playbin picks), and asserts that 20 decoded buffers
// reach the sink. A live stream never ends: its pipeline runs until the
// sink has reported 20 buffers in gst-launch's verbose output (or the
// machine's patience runs out), then it is stopped.
func gstPlays(t *testing.T, url string, video, live bool) {
	t.Helper()
	decode, convert := "tsdemux ! aacparse ! avdec_aac", "audioconvert"
	if video {
		decode, convert = "tsdemux ! h264parse ! avdec_h264", "videoconvert"
	}
	sink := "identity eos-after=20 ! fakesink sync=false"
	if live {
		sink = "fakesink sync=false silent=false"
	}
	for _, pipeline := range []string{
		fmt.Sprintf("souphttpsrc location=%s ! hlsdemux ! %s ! %s", url, decode, sink),
		fmt.Sprintf("uridecodebin uri=%s ! %s ! %s", url, convert, sink),
	} {
		if !live {
			ctx, cancel := context.WithTimeout(context.Background(), testload.Patience)
			out, err := exec.CommandContext(ctx, "gst-launch-1.0", strings.Fields(pipeline)...).CombinedOutput()
			cancel()
			if err != nil {
				t.Errorf("GStreamer %q: %v\n%s", pipeline, err, tail(out))
			} else {
				t.Logf("GStreamer played %s: %s", url, pipeline)
			}
			continue
		}
		buffers, out, err := gstCount(pipeline, 20)
		if buffers < 20 {
			t.Errorf("GStreamer %q: %d buffers decoded in %s (%v)\n%s", pipeline, buffers, testload.Patience, err, tail(out))
		} else {
			t.Logf("GStreamer played %s: %s", url, pipeline)
		}
	}
}

// gstCount runs a live pipeline verbosely until its sink has reported
// want buffers or testload.Patience has passed, and returns how many it
// saw with the output's last lines.
func gstCount(pipeline string, want int) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), testload.Patience)
	defer cancel()
	cmd := exec.CommandContext(ctx, "gst-launch-1.0", append([]string{"-v"}, strings.Fields(pipeline)...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, nil, err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return 0, nil, err
	}
	var out []byte
	buffers := 0
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for buffers < want && sc.Scan() {
		line := sc.Bytes()
		if bytes.Contains(line, []byte("last-message = chain")) {
			buffers++
		}
		out = append(out[max(0, len(out)-4000):], append(line, '\n')...)
	}
	cancel() // enough buffers, or the pipeline ended: stop it
	err = cmd.Wait()
	return buffers, out, err
}

func tail(b []byte) string { return string(b[max(0, len(b)-2000):]) }

// TestLowLatencyHLS publishes with ffmpeg and plays the show as LL-HLS
// players and players of old do: video_url and audio_url are master
// playlists with codecs, bandwidth, resolution and frame rate; the live
// playlist announces server control, parts, the next part as a preload
// hint and the other rendition; a blocking reload for the next segment
// returns once it exists (not at once), one for the next part as soon as
// that is written, a hinted part is served when ready; requests too far
// ahead get 400, one that cannot be met in three target durations 503;
// ffprobe and GStreamer play the live show and its archive.
func TestLowLatencyHLS(t *testing.T) {
	requireTools(t, "ffmpeg", "ffprobe", "gst-launch-1.0")
	// One waiting request at a time: the cap is driven past below.
	env := onairtest.New(t, onairtest.Options{Configure: func(c *app.Config) {
		c.Set(live.SettingHLSMaxBlocking, 1)
		c.Set(shows.SettingReconnectWindow, 10*time.Minute) // the show outlives its publisher below
	}})
	_, token := env.CreateUser("Low Latency")
	b := onairtest.CreateShow(t, env, token, nil)
	const seconds = 120 // cut short below
	ffmpeg, done := publish(t, b.RTMP+"/"+b.Key, seconds, false)
	s := b.Await(t, "live", isLive)
	videoURL, audioURL := s["video_url"].(string), s["audio_url"].(string)
	if !strings.HasSuffix(videoURL, "/master.m3u8") || !strings.HasSuffix(audioURL, "/master_audio.m3u8") {
		t.Fatalf("video_url %s, audio_url %s: want the master playlists", videoURL, audioURL)
	}
	status, h, master := getText(t, videoURL)
	if status != http.StatusOK || h.Get("Content-Type") != "application/vnd.apple.mpegurl" || h.Get("Cache-Control") != "no-cache" {
		t.Fatalf("master: %d %v", status, h)
	}
	avInf := regexp.MustCompile(`#EXT-X-STREAM-INF:BANDWIDTH=\d+,AVERAGE-BANDWIDTH=\d+,CODECS="avc1\.[0-9a-f]{6},mp4a\.40\.2",RESOLUTION=320x240,FRAME-RATE=25\.000\nindex\.m3u8\n`)
	audioInf := regexp.MustCompile(`#EXT-X-STREAM-INF:BANDWIDTH=\d+,AVERAGE-BANDWIDTH=\d+,CODECS="mp4a\.40\.2"\naudio\.m3u8\n`)
	if !avInf.MatchString(master) || !audioInf.MatchString(master) {
		t.Errorf("video_url master playlist:\n%s", master)
	}
	if _, _, m := getText(t, audioURL); !audioInf.MatchString(m) || strings.Contains(m, "index.m3u8") {
		t.Errorf("audio_url master playlist:\n%s", m)
	}

	playlist := resolve(t, videoURL, "index.m3u8")
	awaitSegments(t, playlist, 2)
	_, _, text := getText(t, playlist)
	for _, tag := range []string{"#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK=0.660", "#EXT-X-PART-INF:PART-TARGET=0.22000",
		",INDEPENDENT=YES", "#EXT-X-PRELOAD-HINT:TYPE=PART,URI=", `#EXT-X-RENDITION-REPORT:URI="audio.m3u8",LAST-MSN=`} {
		if !strings.Contains(text, tag) {
			t.Errorf("live playlist without %s:\n%s", tag, text)
		}
	}

	// The next segment: the answer waits for it.
	_, _, text = getText(t, playlist)
	last, _, _ := newestOf(t, text)
	next := last + 1
	status, text, took := timedGet(t, fmt.Sprintf("%s?_HLS_msn=%d", playlist, next))
	if got, _, _ := newestOf(t, text); status != http.StatusOK || got < next {
		t.Fatalf("_HLS_msn=%d: %d after %s, last segment %d:\n%s", next, status, took, got, text)
	}
	t.Logf("_HLS_msn=%d (the next segment) answered after %s", next, took)
	// The one after: it does not exist for a whole segment duration yet.
	// Meanwhile that request holds the node's only waiting slot.
	type answer struct {
		status int
		text   string
		took   time.Duration
	}
	waited := make(chan answer, 1)
	go func() {
		status, text, took := timedGet(t, fmt.Sprintf("%s?_HLS_msn=%d&_HLS_other=x", playlist, next+1))
		waited <- answer{status, text, took}
	}()
	testload.Poll(t, "the blocking request to wait", func() error {
		if _, _, m := getText(t, env.URL+"/metrics"); !strings.Contains(m, "onair_hls_blocking_requests 1") {
			return fmt.Errorf("not waiting yet")
		}
		return nil
	})
	capped, err := http.Get(fmt.Sprintf("%s?_HLS_msn=%d", playlist, next+1))
	if err != nil {
		t.Fatal(err)
	}
	capped.Body.Close()
	if capped.StatusCode != http.StatusServiceUnavailable || capped.Header.Get("Retry-After") != "1" {
		t.Errorf("a blocking request past ONAIR_HLS_MAX_BLOCKING: %d, Retry-After %q", capped.StatusCode, capped.Header.Get("Retry-After"))
	}
	if _, _, m := getText(t, env.URL+"/metrics"); !strings.Contains(m, "onair_hls_blocking_refused_total 1") {
		t.Errorf("metrics: the refused blocking request is not counted")
	}
	a := <-waited
	status, text, took = a.status, a.text, a.took
	if got, _, _ := newestOf(t, text); status != http.StatusOK || got < next+1 || took < 1500*time.Millisecond || took > 6*time.Second {
		t.Errorf("_HLS_msn=%d: %d after %s (want the segment after ~2 s), last segment %d:\n%s", next+1, status, took, got, text)
	}
	t.Logf("_HLS_msn=%d (two segments on) answered after %s", next+1, took)

	// The next part, by blocking reload and by the preload hint.
	_, partSeg, part := newestOf(t, text)
	status, text, took = timedGet(t, fmt.Sprintf("%s?_HLS_msn=%d&_HLS_part=%d", playlist, partSeg, part+1))
	gotSeg, gotPart := uint64(0), 0
	if status == http.StatusOK {
		_, gotSeg, gotPart = newestOf(t, text)
	}
	if status != http.StatusOK || gotSeg == partSeg && gotPart <= part || took > 2*time.Second {
		t.Errorf("_HLS_part=%d of %d: %d after %s, newest part %d of %d", part+1, partSeg, status, took, gotPart, gotSeg)
	}
	t.Logf("_HLS_msn=%d&_HLS_part=%d answered after %s", partSeg, part+1, took)
	// The reloads held above were let go and counted.
	if _, _, m := getText(t, env.URL+"/metrics"); !regexp.MustCompile(`(?m)^onair_hls_blocking_wake_seconds_count [1-9]`).MatchString(m) {
		t.Errorf("no held reload in onair_hls_blocking_wake_seconds")
	}
	hint := hintURI.FindStringSubmatch(text)
	if hint == nil {
		t.Fatalf("no preload hint:\n%s", text)
	}
	status, body, took := timedGet(t, resolve(t, playlist, hint[1]))
	if status != http.StatusOK || len(body) == 0 || len(body)%188 != 0 || body[0] != 0x47 {
		t.Errorf("hinted part %s: %d, %d bytes after %s", hint[1], status, len(body), took)
	}
	t.Logf("hinted part %s served after %s", hint[1], took)
	if status, _, _ := getText(t, resolve(t, playlist, fmt.Sprintf("seg-%06d-p0.ts", next+5))); status != http.StatusNotFound {
		t.Errorf("a part far ahead: %d, want 404", status)
	}

	// Requests RFC 8216bis refuses at once.
	_, _, text = getText(t, playlist)
	_, partSeg, _ = newestOf(t, text)
	for _, q := range []string{"_HLS_msn=abc", "_HLS_part=1", "_HLS_msn=-1", "_HLS_msn=1&_HLS_part=x", fmt.Sprintf("_HLS_msn=%d", partSeg+10),
		fmt.Sprintf("_HLS_msn=%d&_HLS_part=40", partSeg+1)} {
		status, body, took := timedGet(t, playlist+"?"+q)
		if status != http.StatusBadRequest || !strings.Contains(body, `"error"`) || took > time.Second {
			t.Errorf("?%s: %d after %s: %s", q, status, took, body)
		}
	}

	// Players of old (GStreamer's hlsdemux ignores the LL tags) and of now
	// play the live show (while it is live: a live player waits for more).
	gstPlays(t, videoURL, true, true)
	gstPlays(t, audioURL, false, true)
	if got := ffprobe(t, videoURL); got != "aac,h264" {
		t.Errorf("ffprobe of the live video_url: %q", got)
	}

	// The publisher is gone: a segment that never comes gets 503 after
	// three target durations.
	ffmpeg.Process.Kill()
	exited(t, "ffmpeg", done)
	b.Await(t, "live without its publisher", isLive)
	// Once the packager has closed, the playlist hints no part any more.
	testload.Poll(t, "the playlist of the closed stream", func() error {
		if _, _, text = getText(t, playlist); hintURI.MatchString(text) {
			return fmt.Errorf("still hints a part:\n%s", text)
		}
		return nil
	})
	last, _, _ = newestOf(t, text)
	status, _, took = timedGet(t, fmt.Sprintf("%s?_HLS_msn=%d", playlist, last+1))
	if status != http.StatusServiceUnavailable || took < 5500*time.Millisecond || took > 8*time.Second {
		t.Errorf("_HLS_msn of a segment that never comes: %d after %s, want 503 after 6 s", status, took)
	}
	if _, _, metrics := getText(t, env.URL+"/metrics"); !strings.Contains(metrics, "onair_hls_blocking_timeouts_total 1") {
		t.Errorf("metrics: no blocking timeout counted")
	}

	env.Do("POST", fmt.Sprintf("/v1/shows/%d/stop", b.ID), token, nil).Expect(t, http.StatusOK)
	s = b.Await(t, "archived", func(s map[string]any) bool { return s["archive"] == true })
	videoURL, audioURL = s["video_url"].(string), s["audio_url"].(string)
	if !strings.HasSuffix(videoURL, "/archive_master.m3u8") || !strings.HasSuffix(audioURL, "/archive_master_audio.m3u8") {
		t.Fatalf("archived video_url %s, audio_url %s", videoURL, audioURL)
	}
	if _, _, vod := fetch(t, videoURL); !strings.Contains(vod, "#EXT-X-PLAYLIST-TYPE:VOD") || strings.Contains(vod, "#EXT-X-PART") {
		t.Errorf("archive:\n%s", vod)
	}
	if got := ffprobe(t, videoURL); got != "aac,h264" {
		t.Errorf("ffprobe of the archived video_url: %q", got)
	}
	gstPlays(t, videoURL, true, false)
	gstPlays(t, audioURL, false, false)
}
