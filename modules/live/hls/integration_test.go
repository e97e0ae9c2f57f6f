// These tests run the RTMP server and the HLS packager together
// against real encoders (ffmpeg, GStreamer) and checks the output with
// ffprobe. Each test is skipped only when its tool is not installed.
package hls_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/live/hls"
	"github.com/onair/onair/modules/live/rtmp"
)

// packagerSink forwards a publication to an HLS packager, through the
// stream core.
type packagerSink struct {
	*hls.FLVFeed
	closed chan error
}

func (s *packagerSink) Metadata(meta map[string]any) { s.FLVFeed.Metadata(meta) }

func (s *packagerSink) Close(err error) {
	if cerr := s.FLVFeed.Close(); cerr != nil {
		err = errors.Join(err, cerr)
	}
	s.closed <- err
}

// harness is an RTMP server whose handler packages the key "secret" into dir.
type harness struct {
	addr  string
	dir   string
	mu    sync.Mutex
	sinks []*packagerSink
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{dir: t.TempDir()}
	if d := os.Getenv("LIVE_TEST_KEEP"); d != "" {
		h.dir = filepath.Join(d, t.Name())
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.addr = ln.Addr().String()
	log := slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv := &rtmp.Server{
		Logger: log,
		Handler: rtmp.HandlerFunc(func(ctx context.Context, req rtmp.PublishRequest) (rtmp.Sink, error) {
			if req.App != "live" || req.Key != "secret" {
				return nil, fmt.Errorf("unknown stream key: %w", rtmp.ErrUnauthorized)
			}
			p, err := hls.Open(h.dir, hls.Options{Logger: log})
			if err != nil {
				return nil, err
			}
			f := hls.NewFLVFeed(p, 0)
			f.Async = true
			s := &packagerSink{FLVFeed: f, closed: make(chan error, 1)}
			h.mu.Lock()
			h.sinks = append(h.sinks, s)
			h.mu.Unlock()
			return s, nil
		}),
	}
	done := make(chan struct{})
	go func() { srv.Serve(ln); close(done) }()
	t.Cleanup(func() { srv.Close(); <-done })
	return h
}

func (h *harness) url(key string) string { return "rtmp://" + h.addr + "/live/" + key }

// waitClosed waits for the last publication to end and returns its error.
func (h *harness) waitClosed(t *testing.T) error {
	t.Helper()
	h.mu.Lock()
	if len(h.sinks) == 0 {
		h.mu.Unlock()
		t.Fatal("nothing was published")
	}
	s := h.sinks[len(h.sinks)-1]
	h.mu.Unlock()
	select {
	case err := <-s.closed:
		return err
	case <-time.After(testload.Patience):
		t.Fatalf("publication did not end within %s", testload.Patience)
		return nil
	}
}

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// need skips a test when one of its tools is not installed, then waits
// for the machine's turn of the heavy tests: the encoders publish in real
// time and must not share the CPU with another media or browser suite.
func need(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			testload.Skip(t, "%s not installed", tool)
		}
	}
	testload.Heavy(t)
}

// run runs a tool to its end; testload.Patience bounds a hang.
func run(t *testing.T, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testload.Patience)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	return string(out), err
}

type probeStream struct {
	CodecType string `json:"codec_type"`
	CodecName string `json:"codec_name"`
}

// probe returns the streams ffprobe finds in a playlist.
func probe(t *testing.T, path string) []probeStream {
	t.Helper()
	out, err := exec.Command("ffprobe", "-v", "error", "-show_entries", "stream=codec_type,codec_name",
		"-of", "json", path).Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v", filepath.Base(path), err)
	}
	var res struct{ Streams []probeStream }
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("ffprobe output: %v", err)
	}
	return res.Streams
}

// decodeClean decodes a playlist fully and fails on any decoder complaint.
func decodeClean(t *testing.T, path string) {
	t.Helper()
	out, err := run(t, "ffmpeg", "-v", "error", "-i", path, "-f", "null", "-")
	if err != nil || strings.TrimSpace(out) != "" {
		t.Errorf("decoding %s: %v\n%s", filepath.Base(path), err, out)
	}
}

// playlistDuration sums the EXTINF durations of a playlist.
func playlistDuration(t *testing.T, path string) (float64, int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var total float64
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "#EXTINF:"); ok {
			d, err := strconv.ParseFloat(strings.TrimSuffix(v, ","), 64)
			if err != nil {
				t.Fatalf("bad EXTINF %q", v)
			}
			total += d
			n++
		}
	}
	return total, n
}

func codecs(streams []probeStream) string {
	var s []string
	for _, st := range streams {
		s = append(s, st.CodecType+":"+st.CodecName)
	}
	return strings.Join(s, ",")
}

func TestFFmpegPublish(t *testing.T) {
	need(t, "ffmpeg", "ffprobe")
	h := newHarness(t)
	out, err := run(t, "ffmpeg", "-hide_banner", "-loglevel", "error", "-re",
		"-f", "lavfi", "-i", "testsrc=size=320x240:rate=25",
		"-f", "lavfi", "-i", "sine=frequency=440",
		"-t", "6", "-c:v", "libx264", "-g", "50", "-preset", "ultrafast", "-tune", "zerolatency",
		"-c:a", "aac", "-f", "flv", h.url("secret"))
	if err != nil {
		t.Fatalf("ffmpeg: %v\n%s", err, out)
	}
	if err := h.waitClosed(t); err != nil {
		t.Fatalf("publication ended with %v", err)
	}
	if err := hls.Finalize(h.dir, hls.Options{}); err != nil {
		t.Fatal(err)
	}

	if got := codecs(probe(t, filepath.Join(h.dir, hls.PlaylistAV))); got != "video:h264,audio:aac" {
		t.Errorf("A/V playlist streams: %s", got)
	}
	if got := codecs(probe(t, filepath.Join(h.dir, hls.PlaylistAudio))); got != "audio:aac" {
		t.Errorf("audio playlist streams: %s", got)
	}
	for _, name := range []string{hls.ArchiveAV, hls.ArchiveAudio} {
		total, n := playlistDuration(t, filepath.Join(h.dir, name))
		if total < 5 || total > 7 {
			t.Errorf("%s lasts %.3f s in %d segments, want 6 ± 1", name, total, n)
		}
		decodeClean(t, filepath.Join(h.dir, name))
	}
	// 2 s keyframes, 2 s segments: every playlist announces 2 s, the
	// longest segment, and dates every segment.
	for _, name := range []string{hls.PlaylistAV, hls.PlaylistAudio, hls.ArchiveAV, hls.ArchiveAudio} {
		text, err := os.ReadFile(filepath.Join(h.dir, name))
		if err != nil {
			t.Fatal(err)
		}
		checkTarget(t, name, string(text), 2)
	}
	if got := codecs(probe(t, filepath.Join(h.dir, hls.ArchiveAudio))); got != "audio:aac" {
		t.Errorf("audio archive streams: %s", got)
	}
}

// TestFFmpegExtendedTimestamps publishes across the point where RTMP's
// 24-bit timestamp field overflows (4 h 39 min 37 s) into extended
// timestamps, which ffmpeg then repeats on every continuation chunk.
func TestFFmpegExtendedTimestamps(t *testing.T) {
	need(t, "ffmpeg", "ffprobe")
	h := newHarness(t)
	out, err := run(t, "ffmpeg", "-hide_banner", "-loglevel", "error", "-re",
		"-f", "lavfi", "-i", "testsrc=size=320x240:rate=25",
		"-f", "lavfi", "-i", "sine=frequency=440",
		"-t", "5", "-c:v", "libx264", "-g", "50", "-preset", "ultrafast", "-tune", "zerolatency",
		"-c:a", "aac", "-output_ts_offset", "16774", "-f", "flv", h.url("secret"))
	if err != nil {
		t.Fatalf("ffmpeg: %v\n%s", err, out)
	}
	if err := h.waitClosed(t); err != nil {
		t.Fatalf("publication ended with %v", err)
	}
	if err := hls.Finalize(h.dir, hls.Options{}); err != nil {
		t.Fatal(err)
	}
	total, n := playlistDuration(t, filepath.Join(h.dir, hls.ArchiveAV))
	if total < 4 || total > 6 || n < 2 {
		t.Errorf("archive lasts %.3f s in %d segments, want 5 ± 1", total, n)
	}
	decodeClean(t, filepath.Join(h.dir, hls.ArchiveAV))
}

func TestFFmpegAudioOnly(t *testing.T) {
	need(t, "ffmpeg", "ffprobe")
	h := newHarness(t)
	out, err := run(t, "ffmpeg", "-hide_banner", "-loglevel", "error", "-re",
		"-f", "lavfi", "-i", "sine=frequency=440", "-t", "5", "-c:a", "aac", "-f", "flv", h.url("secret"))
	if err != nil {
		t.Fatalf("ffmpeg: %v\n%s", err, out)
	}
	if err := h.waitClosed(t); err != nil {
		t.Fatalf("publication ended with %v", err)
	}
	if err := hls.Finalize(h.dir, hls.Options{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{hls.PlaylistAV, hls.PlaylistAudio} {
		if got := codecs(probe(t, filepath.Join(h.dir, name))); got != "audio:aac" {
			t.Errorf("%s streams: %s", name, got)
		}
	}
	total, _ := playlistDuration(t, filepath.Join(h.dir, hls.ArchiveAudio))
	if total < 4 || total > 6 {
		t.Errorf("audio archive lasts %.3f s, want 5 ± 1", total)
	}
	decodeClean(t, filepath.Join(h.dir, hls.ArchiveAudio))
}

func TestFFmpegWrongKeyRefused(t *testing.T) {
	need(t, "ffmpeg")
	h := newHarness(t)
	out, err := run(t, "ffmpeg", "-hide_banner", "-loglevel", "error",
		"-f", "lavfi", "-i", "sine=frequency=440", "-t", "2", "-c:a", "aac", "-f", "flv", h.url("wrong"))
	if err == nil {
		t.Fatalf("ffmpeg succeeded with a wrong key:\n%s", out)
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("ffmpeg did not exit by itself: %v", err)
	}
	if entries, _ := os.ReadDir(h.dir); len(entries) != 0 {
		t.Errorf("refused publish wrote %d files", len(entries))
	}
}

func TestGStreamerPublish(t *testing.T) {
	need(t, "gst-launch-1.0", "gst-inspect-1.0", "ffprobe")
	for _, el := range []string{"rtmp2sink", "x264enc", "flvmux", "avenc_aac", "h264parse", "aacparse"} {
		if err := exec.Command("gst-inspect-1.0", "--exists", el).Run(); err != nil {
			testload.Skip(t, "GStreamer element %s not installed", el)
		}
	}
	h := newHarness(t)
	// 4 s at 25 fps; the audio source is limited to the same length. The
	// sources are not live: a live source stamps each buffer with the clock
	// when it is made, which a loaded machine makes late and uneven (a
	// frame 2 ms after the one before), and the decode check would blame
	// the archive for GStreamer's timestamps. rtmp2sink still sends in
	// real time, in step with the clock.
	pipeline := "videotestsrc is-live=false num-buffers=100 ! video/x-raw,width=320,height=240,framerate=25/1 " +
		"! x264enc key-int-max=50 tune=zerolatency speed-preset=ultrafast ! h264parse ! queue ! flvmux name=m streamable=true " +
		"! rtmp2sink location=" + h.url("secret") + " " +
		"audiotestsrc is-live=false num-buffers=172 ! audioconvert ! audioresample ! audio/x-raw,rate=44100,channels=2 " +
		"! avenc_aac ! aacparse ! queue ! m."
	out, err := run(t, "gst-launch-1.0", append([]string{"-e", "-q"}, strings.Fields(pipeline)...)...)
	if err != nil {
		t.Fatalf("gst-launch: %v\n%s", err, out)
	}
	if err := h.waitClosed(t); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Logf("publication ended with %v", err)
	}
	if err := hls.Finalize(h.dir, hls.Options{}); err != nil {
		t.Fatal(err)
	}
	if got := codecs(probe(t, filepath.Join(h.dir, hls.PlaylistAV))); got != "video:h264,audio:aac" {
		t.Errorf("A/V playlist streams: %s", got)
	}
	if got := codecs(probe(t, filepath.Join(h.dir, hls.PlaylistAudio))); got != "audio:aac" {
		t.Errorf("audio playlist streams: %s", got)
	}
	total, _ := playlistDuration(t, filepath.Join(h.dir, hls.ArchiveAV))
	if total < 3 || total > 5 {
		t.Errorf("archive lasts %.3f s, want 4 ± 1", total)
	}
	decodeClean(t, filepath.Join(h.dir, hls.ArchiveAV))
}

// checkTarget asserts, as a player reads the playlist, that
// EXT-X-TARGETDURATION is want and the longest segment rounded up, and
// that every segment has EXT-X-PROGRAM-DATE-TIME.
func checkTarget(t *testing.T, name, text string, want int) {
	t.Helper()
	target, longest, dated, segments := -1, 0.0, 0, 0
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "#EXT-X-TARGETDURATION:"):
			target, _ = strconv.Atoi(strings.TrimPrefix(line, "#EXT-X-TARGETDURATION:"))
		case strings.HasPrefix(line, "#EXT-X-PROGRAM-DATE-TIME:"):
			dated++
		case strings.HasPrefix(line, "#EXTINF:"):
			d, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimPrefix(line, "#EXTINF:"), ","), 64)
			longest = max(longest, d)
			segments++
		}
	}
	if target != want || float64(target) != math.Ceil(longest) || dated != segments || segments == 0 {
		t.Errorf("%s: target %d (want %d), longest segment %.3f s, %d of %d segments dated\n%s", name, target, want, longest, dated, segments, text)
	}
}
