package live

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/onair/onair/internal/testload"
)

// A thumbnail job keeps its segment when the show's directory goes before
// the job's turn (the archive removes it once a media store other than
// the data dir has it; CI on a busy VM lost a short show's thumbnail so:
// "seg-000000.ts: No such file or directory"). The job's own directory
// goes once the job is done; a crash's leftovers go at the module's
// start (sweep), and the jobs still queued at the end go with theirs.
func TestThumbnailAfterTheShowDirIsGone(t *testing.T) {
	ffmpeg, err := exec.LookPath("ffmpeg")
	if err != nil {
		testload.Skip(t, "ffmpeg not on PATH")
	}
	testload.Heavy(t)
	root := t.TempDir()
	dir := filepath.Join(root, "7")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	segment := filepath.Join(dir, "seg-000000.ts")
	out, err := exec.Command(ffmpeg, "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc=size=320x240:rate=25:duration=2",
		"-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-f", "mpegts", segment).CombinedOutput()
	if err != nil {
		t.Fatalf("ffmpeg: %v: %s", err, out)
	}
	stale := filepath.Join(root, scratchPrefix+"3-crashed")
	if err := os.Mkdir(stale, 0o755); err != nil {
		t.Fatal(err)
	}

	th := newThumbnailer(ffmpeg, slog.New(slog.NewTextHandler(testWriter{t}, nil)))
	th.nice = "0" // beside other suites, niceness 19 can wait past the job's 30 s
	th.sweep(root)
	got := make(chan map[string][]byte, 1)
	th.request(thumbJob{showID: 7, dir: dir, segment: segment, done: func(showID int64, scratch string) {
		files := map[string][]byte{}
		for _, name := range []string{thumbFile, gifFile} {
			files[name], _ = os.ReadFile(filepath.Join(scratch, name))
		}
		got <- files
	}})
	// The archive of a mirrored show removes its working directory.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); th.wait() }()
	th.start(ctx)
	select {
	case files := <-got:
		if jpg := files[thumbFile]; !bytes.HasPrefix(jpg, []byte{0xFF, 0xD8, 0xFF}) {
			t.Errorf("thumb.jpg: %d bytes, not a JPEG", len(jpg))
		}
		if gif := files[gifFile]; !bytes.HasPrefix(gif, []byte("GIF89a")) {
			t.Errorf("preview.gif: %d bytes, not a GIF", len(gif))
		}
	case <-time.After(testload.Patience):
		t.Fatal("the job did not end within the patience")
	}
	testload.Poll(t, "the job's directory gone", func() error {
		left, _ := filepath.Glob(filepath.Join(root, scratchPrefix+"*"))
		if len(left) > 0 {
			return &os.PathError{Op: "left", Path: left[0], Err: os.ErrExist}
		}
		return nil
	})

	// Jobs still queued when the thumbnailer stops leave nothing behind.
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(ffmpeg, "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc=size=320x240:rate=25:duration=1",
		"-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-f", "mpegts", segment).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v: %s", err, out)
	}
	cancel()
	th.wait()
	for range 3 {
		th.request(thumbJob{showID: 7, dir: dir, segment: segment, done: func(int64, string) {}})
	}
	if left, _ := filepath.Glob(filepath.Join(root, scratchPrefix+"*")); len(left) != 3 {
		t.Fatalf("%d queued jobs' directories, want 3: %v", len(left), left)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	cancel2()
	th.start(ctx2)
	th.wait()
	if left, _ := filepath.Glob(filepath.Join(root, scratchPrefix+"*")); len(left) != 0 {
		t.Errorf("directories left by the jobs dropped at the end: %v", left)
	}
}

// testWriter logs what the thumbnailer logs.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(bytes.TrimSpace(p)))
	return len(p), nil
}
