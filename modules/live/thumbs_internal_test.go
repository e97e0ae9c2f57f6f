package live

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/live/hls"
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
	th.request(thumbJob{showID: 7, dir: dir, segment: segment, done: func(showID int64, scratch string) bool {
		files := map[string][]byte{}
		for _, name := range []string{thumbFile, gifFile} {
			files[name], _ = os.ReadFile(filepath.Join(scratch, name))
		}
		got <- files
		return true
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
		th.request(thumbJob{showID: 7, dir: dir, segment: segment, done: func(int64, string) bool { return true }})
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

// Until a show has its first thumbnail, a job that failed (or timed out,
// or was dropped) is asked again at the next A/V segment, not a minute
// later: on a saturated node a show shorter than thumbEvery kept
// image_url null. Once made, the next segment within thumbEvery asks
// nothing.
func TestThumbFirstRetriedAtTheNextSegment(t *testing.T) {
	ffmpeg := thumbFFmpeg(t)
	root := t.TempDir()
	dir := thumbShowDir(t, root, 7)
	thumbGarbage(t, filepath.Join(dir, "seg-000000.ts"))
	thumbSegment(t, ffmpeg, filepath.Join(dir, "seg-000001.ts"))

	th := newThumbnailer(ffmpeg, slog.New(slog.NewTextHandler(testWriter{t}, nil)))
	th.nice = "0" // beside other suites, niceness 19 can wait past the job's 30 s
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); th.wait() }()
	th.start(ctx)
	got := make(chan []byte, 4)
	f := &thumbFollower{showID: 7, dir: dir, thumbs: th, done: func(_ int64, scratch string) bool {
		jpg, _ := os.ReadFile(filepath.Join(scratch, thumbFile))
		got <- jpg
		return true
	}}

	begin := time.Now()
	f.onSegment(avSegment(0)) // not media: ffmpeg fails
	testload.Poll(t, "the failed job over", func() error {
		if f.pending.Load() {
			return errors.New("still pending")
		}
		return nil
	})
	if f.made.Load() || len(got) > 0 {
		t.Fatal("a thumbnail made from garbage")
	}
	f.onSegment(avSegment(1))
	select {
	case jpg := <-got:
		if !bytes.HasPrefix(jpg, []byte{0xFF, 0xD8, 0xFF}) {
			t.Errorf("thumb.jpg: %d bytes, not a JPEG", len(jpg))
		}
	case <-time.After(testload.Patience):
		t.Fatal("no thumbnail from the next segment within the patience")
	}
	testload.Poll(t, "the job over, made", func() error {
		if f.pending.Load() || !f.made.Load() {
			return fmt.Errorf("pending %v, made %v", f.pending.Load(), f.made.Load())
		}
		return nil
	})
	if waited := time.Since(begin); waited >= thumbEvery {
		t.Fatalf("the retry came %s after the first segment, not within %s", waited, thumbEvery)
	}

	// Made: a segment within thumbEvery asks nothing.
	last := f.last
	f.onSegment(avSegment(1))
	if !f.last.Equal(last) || f.pending.Load() || len(th.jobs) > 0 || len(got) > 0 {
		t.Errorf("a job asked %s after the thumbnail was made", time.Since(last))
	}
	testload.Poll(t, "no job's directory left", func() error { return noScratch(root, "") })
}

// A job dropped, because the queue was full or because the show's job was
// still pending, blocks no later retry; and a show has one job at most
// queued or running, however many segments come meanwhile.
func TestThumbDroppedJobsDoNotBlockRetries(t *testing.T) {
	ffmpeg := thumbFFmpeg(t)
	root := t.TempDir()
	dir7, dir8, dir9 := thumbShowDir(t, root, 7), thumbShowDir(t, root, 8), thumbShowDir(t, root, 9)
	thumbGarbage(t, filepath.Join(dir7, "seg-000000.ts"))
	thumbGarbage(t, filepath.Join(dir8, "seg-000000.ts"))
	thumbSegment(t, ffmpeg, filepath.Join(dir7, "seg-000001.ts"))
	if err := os.Link(filepath.Join(dir7, "seg-000001.ts"), filepath.Join(dir9, "seg-000001.ts")); err != nil {
		t.Fatal(err)
	}

	th := newThumbnailer(ffmpeg, slog.New(slog.NewTextHandler(testWriter{t}, nil)))
	th.nice = "0"
	got := make(chan int64, 4)
	done := func(showID int64, scratch string) bool {
		if _, err := os.Stat(filepath.Join(scratch, thumbFile)); err != nil {
			t.Errorf("show %d: %v", showID, err)
		}
		got <- showID
		return true
	}
	// A starved node: the worker has not taken a job yet (not started),
	// other shows' jobs fill the queue but two places.
	filler := func() {
		th.request(thumbJob{showID: 8, dir: dir8, segment: filepath.Join(dir8, "seg-000000.ts"), done: func(int64, string) bool {
			t.Error("a thumbnail made from garbage")
			return true
		}})
	}
	for range cap(th.jobs) - 2 {
		filler()
	}
	f7 := &thumbFollower{showID: 7, dir: dir7, thumbs: th, done: done}
	f9 := &thumbFollower{showID: 9, dir: dir9, thumbs: th, done: done}
	f7.onSegment(avSegment(0)) // queued; the job will fail
	if !f7.pending.Load() || len(th.jobs) != cap(th.jobs)-1 {
		t.Fatalf("show 7's job not queued: pending %v, %d jobs queued", f7.pending.Load(), len(th.jobs))
	}
	f7.onSegment(avSegment(1)) // pending: asks nothing, though a place is free
	if left, _ := filepath.Glob(filepath.Join(root, scratchPrefix+"7-*")); len(left) != 1 || len(th.jobs) != cap(th.jobs)-1 {
		t.Fatalf("show 7 asked a second job while its first was pending: %d jobs queued, directories %v", len(th.jobs), left)
	}
	// Another show's job takes the last place; show 9's is dropped.
	filler()
	f9.onSegment(avSegment(1))
	if f9.pending.Load() || f9.made.Load() {
		t.Fatalf("show 9's dropped job: pending %v, made %v", f9.pending.Load(), f9.made.Load())
	}
	if err := noScratch(root, "9"); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); th.wait() }()
	th.start(ctx)
	testload.Poll(t, "show 7's failed job over", func() error {
		if f7.pending.Load() {
			return errors.New("still pending")
		}
		return nil
	})
	if f7.made.Load() {
		t.Fatal("show 7's thumbnail made from garbage")
	}
	// Both ask again at their next segment, and get their thumbnails.
	f7.onSegment(avSegment(1))
	f9.onSegment(avSegment(1))
	made := map[int64]bool{}
	for len(made) < 2 {
		select {
		case id := <-got:
			made[id] = true
		case <-time.After(testload.Patience):
			t.Fatalf("thumbnails made within the patience: %v, want shows 7 and 9", made)
		}
	}
	testload.Poll(t, "both jobs over, made", func() error {
		for _, f := range []*thumbFollower{f7, f9} {
			if f.pending.Load() || !f.made.Load() {
				return fmt.Errorf("show %d: pending %v, made %v", f.showID, f.pending.Load(), f.made.Load())
			}
		}
		return nil
	})
	testload.Poll(t, "no job's directory left", func() error { return noScratch(root, "") })
}

func thumbFFmpeg(t *testing.T) string {
	t.Helper()
	ffmpeg, err := exec.LookPath("ffmpeg")
	if err != nil {
		testload.Skip(t, "ffmpeg not on PATH")
	}
	testload.Heavy(t)
	return ffmpeg
}

func thumbShowDir(t *testing.T, root string, id int) string {
	t.Helper()
	dir := filepath.Join(root, fmt.Sprint(id))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// thumbGarbage writes a segment that is not media: ffmpeg fails on it
// ("Invalid data found when processing input").
func thumbGarbage(t *testing.T, path string) {
	t.Helper()
	b := make([]byte, 64<<10)
	for i := range b {
		b[i] = byte(i)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// thumbSegment makes a real 2 s MPEG-TS segment.
func thumbSegment(t *testing.T, ffmpeg, path string) {
	t.Helper()
	out, err := exec.Command(ffmpeg, "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc=size=320x240:rate=25:duration=2",
		"-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-f", "mpegts", path).CombinedOutput()
	if err != nil {
		t.Fatalf("ffmpeg: %v: %s", err, out)
	}
}

func avSegment(seq uint64) segmentEvent {
	return segmentEvent{Segment: hls.Segment{Rendition: hls.RenditionAV, Sequence: seq, File: fmt.Sprintf("seg-%06d.ts", seq)}, video: true, audio: true}
}

// noScratch says whether jobs' directories (of show id, or of any) are
// left in root.
func noScratch(root, id string) error {
	left, _ := filepath.Glob(filepath.Join(root, scratchPrefix+id+"*"))
	if len(left) > 0 {
		return fmt.Errorf("jobs' directories left: %v", left)
	}
	return nil
}

// testWriter logs what the thumbnailer logs.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(bytes.TrimSpace(p)))
	return len(p), nil
}
