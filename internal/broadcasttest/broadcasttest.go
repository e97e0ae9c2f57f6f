// Package broadcasttest runs real broadcasts against a test OnAir: ffmpeg
// publishing test video and tone over RTMP to a show that
// onairtest.CreateShow made, the stop and the archive. The tests of the modules that act
// on live and archived shows (downloads, podcast, notify) share it.
package broadcasttest

import (
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
)

// Require skips the test when ffmpeg or ffprobe is missing (fails under
// CI), then waits for the machine's turn of the heavy tests.
func Require(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"ffmpeg", "ffprobe"} {
		if _, err := exec.LookPath(tool); err != nil {
			testload.Skip(t, "%s not on PATH", tool)
		}
	}
	testload.Heavy(t)
}

// Publish starts ffmpeg sending seconds of test video (unless audioOnly)
// and a tone to the show over the live module's RTMP; the channel gets its
// exit error.
func Publish(t *testing.T, s *onairtest.Show, seconds int, audioOnly bool) <-chan error {
	t.Helper()
	if s.RTMP == "" {
		t.Fatal("live module not booted")
	}
	_, done := Start(t, s.RTMP+"/"+s.Key, seconds, audioOnly)
	return done
}

// Start runs ffmpeg publishing seconds of test media to target (FFmpegArgs)
// and returns it with a channel that gets its exit error; the test's end
// kills it.
func Start(t *testing.T, target string, seconds int, audioOnly bool) (*exec.Cmd, <-chan error) {
	t.Helper()
	return StartArgs(t, FFmpegArgs(target, seconds, audioOnly))
}

// StartArgs runs ffmpeg with args and returns it with a channel that gets
// its exit error; the test's end kills it.
func StartArgs(t *testing.T, args []string) (*exec.Cmd, <-chan error) {
	t.Helper()
	cmd := exec.Command("ffmpeg", args...)
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

// FFmpegArgs are ffmpeg's arguments to publish seconds of test video
// (unless audioOnly) and a tone to target, an RTMP URL with its key.
func FFmpegArgs(target string, seconds int, audioOnly bool) []string {
	if audioOnly {
		return MediaArgs(target, seconds, AudioOnly)
	}
	return MediaArgs(target, seconds, AV)
}

// Media is what a test broadcast sends.
type Media int

const (
	AV        Media = iota // test video and a tone
	AudioOnly              // the tone alone
	VideoOnly              // the video alone, no audio track
)

// MediaArgs are ffmpeg's arguments to publish seconds of media to target,
// an RTMP URL with its key.
func MediaArgs(target string, seconds int, media Media) []string {
	args := []string{"-hide_banner", "-loglevel", "error", "-re"}
	if media != AudioOnly {
		args = append(args, "-f", "lavfi", "-i", fmt.Sprintf("testsrc=size=320x240:rate=25:duration=%d", seconds))
	}
	if media != VideoOnly {
		args = append(args, "-f", "lavfi", "-i", fmt.Sprintf("sine=frequency=440:sample_rate=44100:duration=%d", seconds))
	}
	if media != AudioOnly {
		args = append(args, "-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-pix_fmt", "yuv420p", "-g", "50")
	}
	if media != VideoOnly {
		args = append(args, "-c:a", "aac", "-b:a", "96k")
	}
	return append(args, "-f", "flv", target)
}

// Wait waits for a publisher's exit and fails the test on an error.
func Wait(t *testing.T, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("ffmpeg: %v", err)
		}
	case <-time.After(testload.Patience):
		t.Fatalf("ffmpeg still running after %s", testload.Patience)
	}
}

// Archive publishes seconds of media to the show, stops it and waits for
// its archive; it returns the archived show.
func Archive(t *testing.T, s *onairtest.Show, seconds int, audioOnly bool) map[string]any {
	t.Helper()
	if audioOnly {
		return ArchiveMedia(t, s, seconds, AudioOnly)
	}
	return ArchiveMedia(t, s, seconds, AV)
}

// ArchiveMedia is Archive with the media to send.
func ArchiveMedia(t *testing.T, s *onairtest.Show, seconds int, media Media) map[string]any {
	t.Helper()
	if s.RTMP == "" {
		t.Fatal("live module not booted")
	}
	_, done := StartArgs(t, MediaArgs(s.RTMP+"/"+s.Key, seconds, media))
	s.Await(t, "live", func(m map[string]any) bool { return m["live"] == true })
	Wait(t, done)
	s.Env.Do("POST", fmt.Sprintf("/v1/shows/%d/stop", s.ID), s.Token, nil).Expect(t, http.StatusOK)
	return s.Await(t, "archived", func(m map[string]any) bool { return m["archive"] == true })
}
