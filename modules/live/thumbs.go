package live

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"
)

// Thumbnail files in a show's media directory.
const (
	thumbFile = "thumb.jpg"
	gifFile   = "preview.gif"
)

// thumbJob asks for the thumbnail and preview of a show from a segment.
type thumbJob struct {
	showID  int64
	dir     string
	segment string
	done    func(showID int64)
}

// thumbnailer runs ffmpeg, one job at a time at the lowest CPU priority,
// away from the ingest path. Jobs beyond a small queue are dropped: a
// thumbnail is refreshed a minute later anyway.
type thumbnailer struct {
	ffmpeg string
	log    *slog.Logger
	jobs   chan thumbJob
	wg     sync.WaitGroup
}

func newThumbnailer(ffmpeg string, log *slog.Logger) *thumbnailer {
	return &thumbnailer{ffmpeg: ffmpeg, log: log, jobs: make(chan thumbJob, 8)}
}

func (t *thumbnailer) start(ctx context.Context) {
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case job := <-t.jobs:
				if t.run(ctx, job) {
					job.done(job.showID)
				}
			}
		}
	}()
}

func (t *thumbnailer) wait() { t.wg.Wait() }

func (t *thumbnailer) request(job thumbJob) {
	select {
	case t.jobs <- job:
	default:
	}
}

// run makes thumb.jpg (one frame) and preview.gif (3 s at 8 fps) from the
// segment, writing to temporary names and renaming so readers never see a
// partial file.
func (t *thumbnailer) run(ctx context.Context, job thumbJob) bool {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	jpg := filepath.Join(job.dir, ".thumb.tmp.jpg")
	gif := filepath.Join(job.dir, ".preview.tmp.gif")
	steps := [][]string{
		{"-i", job.segment, "-frames:v", "1", "-vf", "scale=640:-2", "-q:v", "4", "-f", "image2", jpg},
		{"-t", "3", "-i", job.segment, "-vf", "fps=8,scale=320:-2:flags=lanczos", "-loop", "0", "-f", "gif", gif},
	}
	for _, args := range steps {
		full := append([]string{"-n", "19", t.ffmpeg, "-nostdin", "-loglevel", "error", "-y"}, args...)
		cmd := exec.CommandContext(ctx, "nice", full...)
		if _, err := exec.LookPath("nice"); err != nil {
			cmd = exec.CommandContext(ctx, t.ffmpeg, full[3:]...)
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.log.Warn("thumbnail failed", "show", job.showID, "err", err, "ffmpeg", string(out))
			return false
		}
	}
	if err := os.Rename(jpg, filepath.Join(job.dir, thumbFile)); err != nil {
		return false
	}
	if err := os.Rename(gif, filepath.Join(job.dir, gifFile)); err != nil {
		return false
	}
	return true
}

// thumbnailed points the show at its thumbnail and preview (once; later
// refreshes replace the files behind the same URLs).
func (m *Module) thumbnailed(showID int64) {
	if m.mirror {
		ctx, cancel := context.WithTimeout(m.ctx, time.Minute)
		err := m.uploadThumbnails(ctx, showID, m.showDir(showID))
		cancel()
		if err != nil {
			m.core.Log.Error("live: upload thumbnails", "show", showID, "err", err)
			return // the next refresh tries again
		}
	}
	image, gif := m.mediaURL(showID, thumbFile), m.mediaURL(showID, gifFile)
	ctx, cancel := m.opContext(showsCallWait)
	defer cancel()
	sh, err := m.shows.Get(ctx, showID)
	if err != nil || (sh.ImageURL != nil && *sh.ImageURL == image) {
		return
	}
	if err := m.shows.SetThumbnails(ctx, showID, &image, &gif); err != nil {
		m.core.Log.Error("live: set thumbnails", "show", showID, "err", err)
	}
}
