package live_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/live"
	"github.com/onair/onair/modules/live/amf0"
	"github.com/onair/onair/modules/live/flv"
)

// An encoder whose AVC sequence header comes 4 s after its first audio
// (OBS with some hardware encoders, restreamers) gets a show with video,
// whether or not its onMetaData announced the video.
func TestLateVideoHeaderWithinWait(t *testing.T) {
	requireTools(t, "ffmpeg", "ffprobe")
	rec := recordFLV(t, 12)
	env := onairtest.New(t, onairtest.Options{})
	_, token := env.CreateUser("Late Header")
	for _, announced := range []bool{true, false} {
		t.Run(fmt.Sprintf("onMetaData %v", announced), func(t *testing.T) {
			b := onairtest.CreateShow(t, env, token, nil)
			p, st := dialPublisher(t, b.RTMP, b.Key)
			if st["code"] != "NetStream.Publish.Start" {
				t.Fatalf("publish: %v", st)
			}
			if announced {
				if err := p.metadata(amf0.ECMAArray{"videocodecid": 7.0, "audiocodecid": 10.0, "width": 320.0, "height": 240.0}); err != nil {
					t.Fatal(err)
				}
			}
			played := make(chan error, 1)
			go func() { played <- p.play(rec.lateVideo(4000)) }()
			s := b.Await(t, "live", isLive)
			if s["video_url"] == nil || s["audio_url"] == nil {
				t.Fatalf("live show without both tracks: video_url %v audio_url %v", s["video_url"], s["audio_url"])
			}
			if got := ffprobe(t, s["video_url"].(string)); got != "aac,h264" {
				t.Errorf("video_url streams %q, want aac,h264", got)
			}
			if err := <-played; err != nil {
				t.Fatalf("publishing: %v", err)
			}
		})
	}
}

// Video that comes later than ONAIR_RTMP_TRACK_WAIT is not dropped: the
// show goes live audio-only, then its A/V playlist continues with video
// after a discontinuity and the show gets its video_url.
func TestLateVideoAfterWaitStartsDiscontinuity(t *testing.T) {
	requireTools(t, "ffmpeg", "ffprobe")
	rec := recordFLV(t, 12)
	env := onairtest.New(t, onairtest.Options{Configure: func(c *app.Config) {
		c.Set(live.SettingRTMPTrackWait, time.Second)
	}})
	_, token := env.CreateUser("Later Header")
	b := onairtest.CreateShow(t, env, token, nil)
	p, st := dialPublisher(t, b.RTMP, b.Key)
	if st["code"] != "NetStream.Publish.Start" {
		t.Fatalf("publish: %v", st)
	}
	if err := p.metadata(amf0.ECMAArray{"videocodecid": 7.0, "audiocodecid": 10.0}); err != nil {
		t.Fatal(err)
	}
	played := make(chan error, 1)
	go func() { played <- p.play(rec.lateVideo(4000)) }()
	s := b.Await(t, "live", isLive)
	if s["video_url"] != nil {
		t.Fatalf("went live with video before any video came: %v", s["video_url"])
	}
	s = b.Await(t, "given its video", func(s map[string]any) bool { return s["video_url"] != nil })
	videoURL := s["video_url"].(string)
	_, _, text := fetch(t, videoURL)
	if !strings.Contains(text, "#EXT-X-DISCONTINUITY\n") {
		t.Errorf("A/V playlist has no discontinuity where the video joined:\n%s", text)
	}
	if got := ffprobe(t, lastSegment(t, videoURL)); got != "aac,h264" {
		t.Errorf("last A/V segment streams %q, want aac,h264", got)
	}
	if err := <-played; err != nil {
		t.Fatalf("publishing: %v", err)
	}
}

// Codecs OnAir cannot package, announced by onMetaData or sent in a tag,
// legacy or enhanced RTMP, are refused at publish with an onStatus error
// naming them and a log line; the show is left as it was.
func TestUnsupportedCodecsRefused(t *testing.T) {
	requireTools(t, "ffmpeg")
	// Real HEVC parameter sets and AV1 headers from libx265 and libaom,
	// carried as an encoder would.
	hevc := encodeRaw(t, "hevc", "-c:v", "libx265", "-x265-params", "log-level=error")
	av1 := encodeRaw(t, "obu", "-c:v", "libaom-av1", "-cpu-used", "8")
	aacHeader := []byte{0xAF, 0, 0x12, 0x10}
	cases := []struct {
		name  string
		meta  amf0.ECMAArray
		video []byte
		codec string // as the description and the log name it
	}{
		{"legacy HEVC codec id 12", nil, append([]byte{0x1C, 0, 0, 0, 0}, hevc...), "HEVC (codec id 12)"},
		{"enhanced RTMP hvc1", nil, append([]byte{0x90, 'h', 'v', 'c', '1'}, hevc...), "HEVC (hvc1)"},
		{"enhanced RTMP av01", nil, append([]byte{0x90, 'a', 'v', '0', '1'}, av1...), "AV1 (av01)"},
		{"legacy AV1 codec id 13", nil, append([]byte{0x1D, 0, 0, 0, 0}, av1...), "AV1 (codec id 13)"},
		{"onMetaData announces hvc1", amf0.ECMAArray{"videocodecid": float64(0x68766331), "audiocodecid": 10.0}, nil, "HEVC (hvc1)"},
		{"onMetaData announces MP3", amf0.ECMAArray{"audiocodecid": 2.0}, nil, "MP3 (sound format 2)"},
	}
	env := onairtest.New(t, onairtest.Options{})
	_, token := env.CreateUser("Wrong Codec")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := onairtest.CreateShow(t, env, token, nil)
			p, st := dialPublisher(t, b.RTMP, b.Key)
			if st["code"] != "NetStream.Publish.Start" {
				t.Fatalf("publish: %v", st)
			}
			if tc.meta != nil {
				p.metadata(tc.meta)
			}
			p.tag(flv.Tag{Type: flv.TagAudio, Data: aacHeader})
			if tc.video != nil {
				p.tag(flv.Tag{Type: flv.TagVideo, Data: tc.video})
			}
			p.tag(flv.Tag{Type: flv.TagAudio, Timestamp: 23, Data: []byte{0xAF, 1, 0x21, 0x10, 0x05, 0x00}})
			refusal := p.refusal(20 * time.Second)
			desc, _ := refusal["description"].(string)
			if refusal["code"] != "NetStream.Publish.Rejected" || !strings.Contains(desc, tc.codec) || !strings.Contains(desc, "H.264") {
				t.Fatalf("refusal %v, want NetStream.Publish.Rejected naming %s", refusal, tc.codec)
			}
			assertUnchanged(t, b)
			if logs := env.Logs(); !strings.Contains(logs, fmt.Sprintf("codec=%q", tc.codec)) {
				t.Errorf("no log line names %s", tc.codec)
			}
		})
	}
}

// Real ffmpeg publishing codecs its FLV muxer has and OnAir cannot
// package prints OnAir's reason and stops; the show stays upcoming.
// (Debian's ffmpeg 5.1 cannot put HEVC or AV1 into FLV at all; the Go
// publisher above sends those.)
func TestFFmpegUnsupportedCodecPrintsReason(t *testing.T) {
	requireTools(t, "ffmpeg")
	env := onairtest.New(t, onairtest.Options{})
	_, token := env.CreateUser("Old Encoder")
	cases := []struct {
		name, codec string
		args        []string
	}{
		{"Sorenson H.263 video", "Sorenson H.263 (codec id 2)", []string{"-c:v", "flv", "-c:a", "aac"}},
		{"MP3 audio", "MP3 (sound format 2)", []string{"-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "libmp3lame"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := onairtest.CreateShow(t, env, token, nil)
			args := []string{"-hide_banner", "-loglevel", "error", "-re",
				"-f", "lavfi", "-i", "testsrc=size=320x240:rate=25:duration=10",
				"-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100:duration=10"}
			args = append(append(args, tc.args...), "-f", "flv", b.RTMP+"/"+b.Key)
			cmd := exec.Command("ffmpeg", args...)
			out, err := runWithin(t, cmd, 60*time.Second)
			if err == nil {
				t.Fatalf("ffmpeg succeeded:\n%s", out)
			}
			if want := "Server error: Unsupported"; !strings.Contains(out, want) || !strings.Contains(out, tc.codec) {
				t.Fatalf("ffmpeg printed no %q naming %s:\n%s", want, tc.codec, out)
			}
			assertUnchanged(t, b)
		})
	}
	if n := metric(t, env, `onair_rtmp_refused_total{reason="codec"}`); n != 2 {
		t.Errorf("codec refusals counted %v, want 2", n)
	}
}

// assertUnchanged checks a show is still upcoming and has no media, and
// that nothing of it was recorded.
func assertUnchanged(t *testing.T, b *onairtest.Show) {
	t.Helper()
	s := b.Get(t)
	if isLive(s) || s["video_url"] != nil || s["audio_url"] != nil || s["thumbnail_label"] == "Live" {
		t.Errorf("show changed by a refused publish: %v", s)
	}
	m, _ := onairtest.Module[*live.Module](b.Env)
	if _, err := os.Stat(filepath.Join(b.Env.Core.Config.DataDir, "media", "shows", fmt.Sprint(b.ID), "segments.jsonl")); !os.IsNotExist(err) {
		t.Errorf("a refused publish recorded segments (%v)", err)
	}
	if n := m.Streams(); n != 0 {
		t.Errorf("%d publishers registered after a refusal", n)
	}
}

// encodeRaw encodes a second of test pattern into a raw elementary stream
// (format: hevc, obu) and returns its first bytes.
func encodeRaw(t *testing.T, format string, codec ...string) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "raw."+format)
	args := append([]string{"-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc=size=160x120:rate=10:duration=1",
		"-pix_fmt", "yuv420p"}, codec...)
	if out, err := exec.Command("ffmpeg", append(args, "-f", format, path)...).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg %s: %v\n%s", format, err, out)
	}
	b, err := os.ReadFile(path)
	if err != nil || len(b) < 64 {
		t.Fatalf("raw %s: %d bytes, %v", format, len(b), err)
	}
	return b[:min(len(b), 512)]
}

// runWithin runs cmd and returns its combined output, killing it after d.
func runWithin(t *testing.T, cmd *exec.Cmd, d time.Duration) (string, error) {
	t.Helper()
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return out.String(), err
	case <-time.After(d):
		cmd.Process.Kill()
		<-done
		t.Fatalf("%s still running after %s:\n%s", cmd.Path, d, out.String())
		return "", nil
	}
}

// A second publisher with the show's key but a codec OnAir cannot package
// is refused without cutting off the publisher on air.
func TestRefusedCodecDoesNotTakeOver(t *testing.T) {
	requireTools(t, "ffmpeg")
	env := onairtest.New(t, onairtest.Options{})
	_, token := env.CreateUser("On Air")
	b := onairtest.CreateShow(t, env, token, nil)
	_, done := publish(t, b.RTMP+"/"+b.Key, 30, false)
	b.Await(t, "live", isLive)
	p, st := dialPublisher(t, b.RTMP, b.Key)
	if st["code"] != "NetStream.Publish.Start" {
		t.Fatalf("publish: %v", st)
	}
	p.tag(flv.Tag{Type: flv.TagVideo, Data: []byte{0x90, 'h', 'v', 'c', '1', 1, 2, 3}})
	if refusal := p.refusal(20 * time.Second); refusal["code"] != "NetStream.Publish.Rejected" {
		t.Fatalf("refusal %v", refusal)
	}
	select {
	case err := <-done:
		t.Fatalf("the publisher on air was cut off: %v", err)
	case <-time.After(2 * time.Second):
	}
	m, _ := onairtest.Module[*live.Module](env)
	if n := m.Streams(); n != 1 || !isLive(b.Get(t)) {
		t.Fatalf("%d publishers, show %v", n, b.Get(t))
	}
}
