package live

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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
	dir     string // the show's working directory
	segment string
	// done takes the fresh thumb.jpg and preview.gif from scratch; it
	// says whether the show has them (false: try again).
	done func(showID int64, scratch string) bool
	// ended, if set, is told once that the job is over, however it ends:
	// made says ffmpeg made the files and done took them; false when
	// ffmpeg failed or timed out, or request or the stop dropped the job.
	ended func(made bool)
	// scratch is the job's own directory (request makes it): the segment
	// linked there, and ffmpeg's output. The show's working directory
	// may be gone by the time the job runs: with a media store other
	// than the data dir, the archive removes it once the store has it,
	// and a short show on a busy node ends before its job's turn.
	scratch string
}

// end tells the job's asker that it is over.
func (j thumbJob) end(made bool) {
	if j.ended != nil {
		j.ended(made)
	}
}

// scratchPrefix starts the name of a job's directory, beside the shows'.
const scratchPrefix = ".thumb-"

// thumbnailer runs ffmpeg, one job at a time at the lowest CPU priority,
// away from the ingest path. Jobs beyond a small queue are dropped: a
// thumbnail is refreshed a minute later anyway, and a show without its
// first one asks again at its next segment (thumbFollower).
type thumbnailer struct {
	ffmpeg string
	// nice is ffmpeg's niceness: the lowest priority, 19 (a test of the
	// jobs' files sets 0, beside suites that keep the CPU busy).
	nice string
	log  *slog.Logger
	jobs chan thumbJob
	wg   sync.WaitGroup
}

func newThumbnailer(ffmpeg string, log *slog.Logger) *thumbnailer {
	return &thumbnailer{ffmpeg: ffmpeg, nice: "19", log: log, jobs: make(chan thumbJob, 8)}
}

// sweep removes the jobs' directories a crash left in root, where the
// shows' directories are. It runs before the first request.
func (t *thumbnailer) sweep(root string) {
	stale, _ := filepath.Glob(filepath.Join(root, scratchPrefix+"*"))
	for _, dir := range stale {
		if err := os.RemoveAll(dir); err != nil {
			t.log.Warn("live: remove a thumbnail job's directory", "dir", dir, "err", err)
		}
	}
}

// start runs the jobs until ctx ends; the jobs still queued then are
// dropped with their directories.
func (t *thumbnailer) start(ctx context.Context) {
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		for {
			select {
			case <-ctx.Done():
				for {
					select {
					case job := <-t.jobs:
						os.RemoveAll(job.scratch)
						job.end(false)
					default:
						return
					}
				}
			case job := <-t.jobs:
				made := t.run(ctx, job) && job.done(job.showID, job.scratch)
				os.RemoveAll(job.scratch)
				job.end(made)
			}
		}
	}()
}

func (t *thumbnailer) wait() { t.wg.Wait() }

// request queues a job, with the segment hard-linked into a directory of
// the job's own (beside the show's, on the same file system), so that the
// job still has it when the show's directory is gone.
func (t *thumbnailer) request(job thumbJob) {
	if len(t.jobs) == cap(t.jobs) {
		// Full: dropped before any file work (on a busy node with many
		// shows, those without a thumbnail yet ask at every segment).
		job.end(false)
		return
	}
	scratch, err := os.MkdirTemp(filepath.Dir(job.dir), scratchPrefix+strconv.FormatInt(job.showID, 10)+"-")
	if err != nil {
		t.log.Warn("thumbnail skipped", "show", job.showID, "err", err)
		job.end(false)
		return
	}
	src := filepath.Join(scratch, "segment"+filepath.Ext(job.segment))
	if err := os.Link(job.segment, src); err != nil {
		os.RemoveAll(scratch)
		t.log.Warn("thumbnail skipped", "show", job.showID, "err", err)
		job.end(false)
		return
	}
	job.segment, job.scratch = src, scratch
	select {
	case t.jobs <- job:
	default:
		os.RemoveAll(scratch)
		job.end(false)
	}
}

// run makes thumb.jpg (one frame) and preview.gif (3 s at 8 fps) from the
// segment, in the job's directory.
func (t *thumbnailer) run(ctx context.Context, job thumbJob) bool {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	jpg := filepath.Join(job.scratch, thumbFile)
	gif := filepath.Join(job.scratch, gifFile)
	steps := [][]string{
		{"-i", job.segment, "-frames:v", "1", "-vf", "scale=640:-2", "-q:v", "4", "-f", "image2", jpg},
		{"-t", "3", "-i", job.segment, "-vf", "fps=8,scale=320:-2:flags=lanczos", "-loop", "0", "-f", "gif", gif},
	}
	for _, args := range steps {
		full := append([]string{"-n", t.nice, t.ffmpeg, "-nostdin", "-loglevel", "error", "-y"}, args...)
		cmd := exec.CommandContext(ctx, "nice", full...)
		if _, err := exec.LookPath("nice"); err != nil {
			cmd = exec.CommandContext(ctx, t.ffmpeg, full[3:]...)
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.log.Warn("thumbnail failed", "show", job.showID, "err", err, "ffmpeg", string(out))
			return false
		}
	}
	return true
}

// thumbnailed takes a fresh thumbnail and preview from scratch: into the
// store (a mirror) and the show's working directory, renamed there so
// readers never see a partial file; then it points the show at them
// (once; later refreshes replace the files behind the same URLs). With a
// mirror the working directory may be gone (archived); without one it is
// the store, and a show whose directory is gone was deleted. It says
// whether the show points at its thumbnails: until then, its follower
// asks again at the next segment.
func (m *Module) thumbnailed(showID int64, scratch string) bool {
	if m.mirror {
		ctx, cancel := context.WithTimeout(m.ctx, time.Minute)
		err := m.uploadThumbnails(ctx, showID, scratch)
		cancel()
		if err != nil {
			m.core.Log.Error("live: upload thumbnails", "show", showID, "err", err)
			return false // the next refresh tries again
		}
	}
	dir := m.showDir(showID)
	for _, name := range []string{thumbFile, gifFile} {
		if err := os.Rename(filepath.Join(scratch, name), filepath.Join(dir, name)); err != nil && !m.mirror {
			return false
		}
	}
	image, gif := m.mediaURL(showID, thumbFile), m.mediaURL(showID, gifFile)
	ctx, cancel := m.opContext(showsCallWait)
	defer cancel()
	sh, err := m.shows.Get(ctx, showID)
	if err != nil {
		return false
	}
	if sh.ImageURL != nil && *sh.ImageURL == image {
		return true
	}
	if err := m.shows.SetThumbnails(ctx, showID, &image, &gif); err != nil {
		m.core.Log.Error("live: set thumbnails", "show", showID, "err", err)
		return false
	}
	return true
}
