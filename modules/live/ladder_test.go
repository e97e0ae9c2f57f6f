package live_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/live"
)

// masterVariant is one EXT-X-STREAM-INF of a master playlist.
type masterVariant struct {
	uri        string
	bandwidth  int64
	average    int64
	codecs     string
	resolution string
	height     int
	frameRate  float64
}

var (
	streamInf       = regexp.MustCompile(`([A-Z-]+)=("[^"]*"|[^,]*)`)
	renditionReport = regexp.MustCompile(`(?m)^#EXT-X-RENDITION-REPORT:URI="([^"]+)",LAST-MSN=\d+,LAST-PART=\d+$`)
)

func parseMaster(t *testing.T, text string) []masterVariant {
	t.Helper()
	var out []masterVariant
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		attrs, ok := strings.CutPrefix(l, "#EXT-X-STREAM-INF:")
		if !ok || i+1 >= len(lines) {
			continue
		}
		v := masterVariant{uri: strings.TrimSpace(lines[i+1])}
		for _, m := range streamInf.FindAllStringSubmatch(attrs, -1) {
			val := strings.Trim(m[2], `"`)
			switch m[1] {
			case "BANDWIDTH":
				v.bandwidth, _ = strconv.ParseInt(val, 10, 64)
			case "AVERAGE-BANDWIDTH":
				v.average, _ = strconv.ParseInt(val, 10, 64)
			case "CODECS":
				v.codecs = val
			case "RESOLUTION":
				v.resolution = val
				_, h, _ := strings.Cut(val, "x")
				v.height, _ = strconv.Atoi(h)
			case "FRAME-RATE":
				v.frameRate, _ = strconv.ParseFloat(val, 64)
			}
		}
		out = append(out, v)
	}
	return out
}

// mediaSegment is a segment of a media playlist with its number.
type mediaSegment struct {
	seq      uint64
	duration string
	pdt      string
	uri      string
	gap      bool // EXT-X-GAP
	later    bool // after an EXT-X-DISCONTINUITY
}

func parseMedia(text string) map[uint64]mediaSegment {
	out := map[uint64]mediaSegment{}
	var seq uint64
	var cur mediaSegment
	later := false
	for _, l := range strings.Split(text, "\n") {
		switch {
		case l == "#EXT-X-GAP":
			cur.gap = true
		case l == "#EXT-X-DISCONTINUITY":
			later = true
		case strings.HasPrefix(l, "#EXT-X-MEDIA-SEQUENCE:"):
			seq, _ = strconv.ParseUint(strings.TrimPrefix(l, "#EXT-X-MEDIA-SEQUENCE:"), 10, 64)
		case strings.HasPrefix(l, "#EXT-X-PROGRAM-DATE-TIME:"):
			cur.pdt = strings.TrimPrefix(l, "#EXT-X-PROGRAM-DATE-TIME:")
		case strings.HasPrefix(l, "#EXTINF:"):
			cur.duration = strings.TrimSuffix(strings.TrimPrefix(l, "#EXTINF:"), ",")
		case l != "" && !strings.HasPrefix(l, "#"):
			cur.seq, cur.uri, cur.later = seq, l, later
			out[seq] = cur
			seq++
			cur = mediaSegment{}
		}
	}
	return out
}

// probeHeight is the height ffprobe decodes from a video URL.
func probeHeight(t *testing.T, url string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testload.Patience)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ffprobe", "-v", "error", "-select_streams", "v:0",
		"-show_entries", "stream=height", "-of", "csv=p=0", url).Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v", url, err)
	}
	// A transport stream lists its program's streams too: the first
	// line is enough.
	first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	h, _ := strconv.Atoi(strings.TrimSpace(first))
	return h
}

// probeCodecs is the codecs of a media URL as ffprobe names them,
// sorted and joined ("aac,h264").
func probeCodecs(t *testing.T, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testload.Patience)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ffprobe", "-v", "error", "-show_entries", "stream=codec_name",
		"-of", "csv=p=0", url).Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v", url, err)
	}
	var names []string
	for _, f := range strings.Fields(string(out)) {
		if f = strings.Trim(f, ","); f != "" && !slices.Contains(names, f) {
			names = append(names, f)
		}
	}
	slices.Sort(names)
	return strings.Join(names, ",")
}

// probeAudio is the presentation times (s) of the audio frames of a
// segment, in order, as ffprobe reads them.
func probeAudio(t *testing.T, url string) []float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testload.Patience)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ffprobe", "-v", "error", "-select_streams", "a:0",
		"-show_entries", "packet=pts_time", "-of", "csv=p=0", url).Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v", url, err)
	}
	var pts []float64
	for _, line := range strings.Fields(string(out)) {
		if v, err := strconv.ParseFloat(strings.Trim(line, ","), 64); err == nil {
			pts = append(pts, v)
		}
	}
	return pts
}

func first(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	return v[0]
}

func final(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	return v[len(v)-1]
}

// publish720 publishes seconds of 720p30 test video (a keyframe every
// 2 s) with a tone.
func publish720(t *testing.T, target string, seconds int) (*exec.Cmd, <-chan error) {
	t.Helper()
	cmd := exec.Command("ffmpeg", "-hide_banner", "-loglevel", "error", "-re",
		"-f", "lavfi", "-i", fmt.Sprintf("testsrc2=size=1280x720:rate=30:duration=%d", seconds),
		"-f", "lavfi", "-i", fmt.Sprintf("sine=frequency=440:sample_rate=44100:duration=%d", seconds),
		"-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-pix_fmt", "yuv420p", "-g", "60",
		"-b:v", "2500k", "-c:a", "aac", "-b:a", "96k", "-f", "flv", target)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		if err != nil {
			err = fmt.Errorf("%w: %s", err, stderr.String())
		}
		done <- err
	}()
	t.Cleanup(func() { cmd.Process.Kill() })
	return cmd, done
}

// TestLadder publishes a 720p show to an OnAir with ONAIR_TRANSCODE=
// 360p,240p: the live master lists the source, both rungs and the
// audio-only alternative; every variant is LL-HLS, cut at the same
// boundaries, and decodes at its height; the health reports the
// transcoder; ffmpeg killed mid-show starts again while the source plays
// on; every variant slides with the DVR window and answers delta updates
// (_HLS_skip); the archive keeps the ladder.
func TestLadder(t *testing.T) {
	requireTools(t, "ffmpeg", "ffprobe")
	env := onairtest.New(t, onairtest.Options{Configure: func(c *app.Config) {
		v, err := live.ParseTranscode("360p,240p")
		if err != nil {
			t.Fatal(err)
		}
		c.Set(live.SettingTranscode, v)
		c.Set(live.SettingDVRWindow, 30*time.Second)
	}})
	_, token := env.CreateUser("Ladder DJ")
	b := onairtest.CreateShow(t, env, token, nil)
	m, _ := onairtest.Module[*live.Module](env)
	// Long enough to outlast every step on a slow machine; the last step
	// stops it.
	cmd, done := publish720(t, b.RTMP+"/"+b.Key, 900)
	s := b.Await(t, "live", isLive)
	master := s["video_url"].(string)

	// The master lists the source, the rungs and the audio alternative.
	var vs []masterVariant
	testload.Poll(t, "a master with the ladder", func() error {
		status, _, text := getText(t, master)
		if vs = parseMaster(t, text); status != http.StatusOK || len(vs) != 4 {
			return fmt.Errorf("status %d:\n%s", status, text)
		}
		return nil
	})
	wantHeights := []int{720, 360, 240, 0}
	for i, v := range vs {
		if v.height != wantHeights[i] {
			t.Fatalf("variant %d is %q (%s), want height %d: %+v", i, v.resolution, v.uri, wantHeights[i], vs)
		}
		if v.bandwidth <= 0 || v.average <= 0 || v.codecs == "" {
			t.Errorf("variant %s lacks figures: %+v", v.uri, v)
		}
		if i < 3 && (v.frameRate < 29 || v.frameRate > 31 || !strings.Contains(v.codecs, "avc1") || !strings.Contains(v.codecs, "mp4a")) {
			t.Errorf("video variant %s: %+v", v.uri, v)
		}
		if i > 0 && i < 3 && v.bandwidth >= vs[i-1].bandwidth {
			t.Errorf("BANDWIDTH does not grow with height: %+v", vs)
		}
	}
	if vs[2].bandwidth >= 800_000 {
		t.Errorf("the lowest rung's BANDWIDTH is %d, want under 800 kb/s", vs[2].bandwidth)
	}
	if vs[3].uri != "audio.m3u8" || vs[3].codecs != "mp4a.40.2" {
		t.Errorf("audio-only alternative: %+v", vs[3])
	}
	t.Logf("master:\n%+v", vs)

	// Every video variant is LL-HLS, and their last segments line up.
	var lists [3]map[uint64]mediaSegment
	testload.Poll(t, "two segments common to every variant", func() error {
		common := 0
		for i := range 3 {
			_, _, text := getText(t, resolve(t, master, vs[i].uri))
			for _, tag := range []string{"#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES", "#EXT-X-PART-INF:", "#EXT-X-PART:", "#EXT-X-PRELOAD-HINT:"} {
				if !strings.Contains(text, tag) {
					return fmt.Errorf("%s without %s:\n%s", vs[i].uri, tag, text)
				}
			}
			lists[i] = parseMedia(text)
		}
		for seq := range lists[0] {
			if _, ok := lists[1][seq]; ok {
				if _, ok := lists[2][seq]; ok {
					common++
				}
			}
		}
		if common < 2 {
			return fmt.Errorf("%d segments in common", common)
		}
		return nil
	})
	// The ladder's figures reach /metrics (the transcode collector), each
	// rung by its height.
	show := strconv.FormatInt(b.ID, 10)
	testload.Poll(t, "the ladder in /metrics", func() error {
		body := string(env.Do("GET", "/metrics", "", nil).Body)
		for _, want := range []string{`onair_transcode_speed{show="` + show + `"}`,
			`onair_transcode_rung_fps{height="360",show="` + show + `"}`, `onair_transcode_rung_bitrate_bits{height="240",show="` + show + `"}`} {
			if !strings.Contains(body, want) {
				return fmt.Errorf("/metrics has no %s", want)
			}
		}
		return nil
	})
	// Each live playlist reports the newest part of every other variant
	// (EXT-X-RENDITION-REPORT), in the master's order, rungs included.
	testload.Poll(t, "every live playlist reporting the other variants", func() error {
		for _, self := range vs {
			_, _, text := getText(t, resolve(t, master, self.uri))
			var got, want []string
			for _, m := range renditionReport.FindAllStringSubmatch(text, -1) {
				got = append(got, m[1])
			}
			for _, o := range vs {
				if o.uri != self.uri {
					want = append(want, o.uri)
				}
			}
			if !slices.Equal(got, want) {
				return fmt.Errorf("%s reports %v, want %v:\n%s", self.uri, got, want, text)
			}
		}
		return nil
	})
	var last uint64
	for seq, src := range lists[0] {
		r1, ok1 := lists[1][seq]
		r2, ok2 := lists[2][seq]
		if !ok1 || !ok2 {
			continue
		}
		last = max(last, seq)
		if r1.duration != src.duration || r2.duration != src.duration || r1.pdt != src.pdt || r2.pdt != src.pdt {
			t.Errorf("segment %d differs across variants: %+v %+v %+v", seq, src, r1, r2)
		}
	}
	var srcAudio []float64
	for i, want := range []int{720, 360, 240} {
		seg := resolve(t, resolve(t, master, vs[i].uri), lists[i][last].uri)
		if h := probeHeight(t, seg); h != want {
			t.Errorf("%s decodes at height %d, want %d", seg, h, want)
		}
		// Each segment decodes on its own, video and audio, without an
		// error: a rung's keyframes carry the SPS and PPS that ffmpeg's
		// FLV gave in its sequence header only.
		if codecs, errs := probeCodecs(t, seg), decodeErrors(t, seg); codecs != "aac,h264" || errs != "" {
			t.Errorf("%s: codecs %q, decoding:\n%s", seg, codecs, errs)
		}
		// Each rung's segment carries the source's audio frames, those
		// of its own time: none of the segment before (nor one short at
		// the end, which made hls.js load a rung's segment again and
		// again, issue #32). The rungs' times are the FLV's milliseconds,
		// as they came back from ffmpeg.
		audio := probeAudio(t, seg)
		if i == 0 {
			srcAudio = audio
			continue
		}
		if len(audio) != len(srcAudio) || len(audio) == 0 ||
			math.Abs(audio[0]-srcAudio[0]) > 0.002 || math.Abs(audio[len(audio)-1]-srcAudio[len(srcAudio)-1]) > 0.002 {
			t.Errorf("%s: %d audio frames from %v to %v; the source's segment %d: %d from %v to %v", seg,
				len(audio), first(audio), final(audio), last, len(srcAudio), first(srcAudio), final(srcAudio))
		}
	}

	// Health shows the transcoder's speed and rungs.
	health := fmt.Sprintf("/v1/shows/%d/health", b.ID)
	testload.Poll(t, "the transcoder in health", func() error {
		h := env.Do("GET", health, token, nil).Expect(t, http.StatusOK).JSON(t)["health"].(map[string]any)
		tc, _ := h["transcode"].(map[string]any)
		if tc == nil || tc["speed"].(float64) <= 0 || len(tc["rungs"].([]any)) != 2 {
			return fmt.Errorf("health %v", h)
		}
		r := tc["rungs"].([]any)[1].(map[string]any)
		if r["height"].(float64) != 240 || r["bitrate"].(float64) <= 0 || r["fps"].(float64) < 29 {
			return fmt.Errorf("rung %v", r)
		}
		return nil
	})

	// ffmpeg killed: it starts again, the rungs go on, the source never
	// stopped.
	pid := m.TranscoderPID(b.ID)
	if pid == 0 {
		t.Fatal("no transcoder running")
	}
	_, _, before := getText(t, resolve(t, master, vs[0].uri))
	srcBefore := len(parseMedia(before))
	lastSrc, _, _ := newestOf(t, before)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testload.Poll(t, "a new transcoder with new rung segments", func() error {
		if p := m.TranscoderPID(b.ID); p == 0 || p == pid {
			return fmt.Errorf("transcoder pid %d", p)
		}
		_, _, text := getText(t, resolve(t, master, vs[2].uri))
		if !strings.Contains(text, "#EXT-X-DISCONTINUITY") {
			return fmt.Errorf("no rung segment after the restart:\n%s", text)
		}
		return nil
	})
	// The rungs keep the source's numbers across the restart: segment
	// for segment the same program date time, the segments missed while
	// ffmpeg restarted listed as EXT-X-GAP.
	testload.Poll(t, "rung segments after the restart, numbered as the source's", func() error {
		_, _, srcText := getText(t, resolve(t, master, vs[0].uri))
		src := parseMedia(srcText)
		for _, v := range vs[1:3] {
			_, _, text := getText(t, resolve(t, master, v.uri))
			resumed := 0
			for seq, r := range parseMedia(text) {
				o, ok := src[seq]
				if !ok {
					continue
				}
				if r.pdt != o.pdt {
					t.Fatalf("%s segment %d starts at %s, the source's at %s:\n%s\nsource:\n%s", v.uri, seq, r.pdt, o.pdt, text, srcText)
				}
				if r.later && !r.gap {
					resumed++
				}
			}
			if resumed == 0 {
				return fmt.Errorf("%s: no segment after the restart yet:\n%s", v.uri, text)
			}
			t.Logf("%s after the restart:\n%s", v.uri, text[max(0, strings.Index(text, "#EXT-X-DISCONTINUITY")-200):])
		}
		return nil
	})
	h := env.Do("GET", health, token, nil).Expect(t, http.StatusOK).JSON(t)["health"].(map[string]any)
	if h["transcode"].(map[string]any)["restarts"].(float64) < 1 {
		t.Errorf("health after the restart: %v", h)
	}
	_, _, after := getText(t, resolve(t, master, vs[0].uri))
	if strings.Contains(after, "#EXT-X-DISCONTINUITY") || srcBefore == 0 {
		t.Errorf("the source's playlist broke:\n%s", after)
	}
	if lastAfter, _, _ := newestOf(t, after); lastAfter <= lastSrc {
		t.Errorf("the source stopped at segment %d", lastSrc)
	}

	// The rungs follow ONAIR_DVR_WINDOW (30 s here) as the source does:
	// once the show is longer, each lists its last 30 s, from the
	// source's media sequence.
	testload.Poll(t, "every variant's playlist sliding with the 30 s DVR window", func() error {
		_, _, srcText := getText(t, resolve(t, master, vs[0].uri))
		n := mediaSequence(srcText)
		if n == 0 {
			return fmt.Errorf("the source's window has not slid yet:\n%s", srcText)
		}
		for _, v := range vs[:3] {
			_, _, text := getText(t, resolve(t, master, v.uri))
			if secs, m := playlistSeconds(text), mediaSequence(text); secs < 28 || secs > 36 || m < n-1 || m > n+1 {
				return fmt.Errorf("%s lists %.1f s from %d (the source from %d), want the last 30 s:\n%s", v.uri, secs, m, n, text)
			}
		}
		return nil
	})
	// 30 s is more than twice the Skip Boundary (12 s): every variant
	// offers delta updates, the rungs as the source (issue #32).
	for _, v := range vs[:3] {
		uri := resolve(t, master, v.uri)
		for _, skip := range []string{"YES", "v2"} {
			// The playlist and its delta are read one after the other: a
			// segment finished between them slides the window, so they
			// are compared once they are of the same version.
			testload.Poll(t, v.uri+"?_HLS_skip="+skip+" a delta of the playlist", func() error {
				_, _, full := getText(t, uri)
				if !canSkip.MatchString(full) {
					return fmt.Errorf("%s offers no CAN-SKIP-UNTIL:\n%s", v.uri, full)
				}
				status, _, delta := getText(t, uri+"?_HLS_skip="+skip)
				m := skipLine.FindStringSubmatch(delta)
				if status != http.StatusOK || m == nil {
					return fmt.Errorf("%d, no EXT-X-SKIP:\n%s", status, delta)
				}
				skipped, _ := strconv.Atoi(m[1])
				uris, kept := segmentsOf(full), segmentsOf(delta)
				if mediaSequence(delta) != mediaSequence(full) || skipped < 1 || len(kept) != len(uris)-skipped ||
					strings.Join(kept, ",") != strings.Join(uris[skipped:], ",") {
					return fmt.Errorf("the delta skips %d and keeps %v; the full playlist lists %v", skipped, kept, uris)
				}
				return nil
			})
		}
		if status, _, body := getText(t, uri+"?_HLS_skip=maybe"); status != http.StatusBadRequest {
			t.Errorf("%s?_HLS_skip=maybe: %d %s", v.uri, status, body)
		}
	}

	// The publisher leaves, the show stops: the archive keeps the ladder.
	cmd.Process.Signal(os.Interrupt)
	exited(t, "ffmpeg", done)
	env.Do("POST", fmt.Sprintf("/v1/shows/%d/stop", b.ID), token, nil).Expect(t, http.StatusOK)
	s = b.Await(t, "archived", func(s map[string]any) bool { return s["archive"] == true })
	status, _, text := getText(t, s["video_url"].(string))
	av := parseMaster(t, text)
	if status != http.StatusOK || len(av) != 4 || av[0].uri != "archive.m3u8" || av[1].uri != "archive_v360.m3u8" ||
		av[2].uri != "archive_v240.m3u8" || av[3].uri != "archive_audio.m3u8" {
		t.Fatalf("archived master %d:\n%s", status, text)
	}
	_, _, vod := getText(t, resolve(t, s["video_url"].(string), "archive_v240.m3u8"))
	if !strings.Contains(vod, "#EXT-X-ENDLIST") || playlistSeconds(vod) < 4 {
		t.Errorf("archived rung:\n%s", vod)
	}
}
