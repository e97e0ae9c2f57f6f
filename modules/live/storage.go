package live

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/uptrace/bun"

	"github.com/onair/onair/internal/store"
	"github.com/onair/onair/modules/live/hls"
	"github.com/onair/onair/modules/shows"
)

// Where a show's media lives.
//
// The packager always writes a show's working files into its directory on
// the ingest node, <data>/media/shows/{id}/. The media store (core.Store)
// holds the same files under the keys shows/{id}/{file}. With the default
// store, a directory whose root is <data>/media, the two are the same files
// and nothing is copied. With any other store (an S3 bucket) the module
// mirrors: per stream an uploader copies each finished segment, then the
// segment index listing only the segments the store has acknowledged,
// then the live playlists; thumbnails follow ffmpeg; the archive is built
// from the local directory or, when this node does not have it, from the
// index kept in the store; and every node serves what it does not have
// locally from the store.

// Bounds of the mirror's waits.
const (
	// flushWait bounds how long a leaving publisher's uploads may take
	// to reach the store before the stream lets go of the show.
	flushWait = 30 * time.Second
	// uploadBackoffMax caps the pause between attempts at an upload the
	// store keeps refusing (the first pause is uploadBackoff).
	uploadBackoff    = 500 * time.Millisecond
	uploadBackoffMax = 10 * time.Second
	// archiveAttempts bounds the archive job's tries while the store
	// fails; reconcile at the next start tries again.
	archiveAttempts = 6
	// reconcileRecent is how far back reconcile looks for complete shows
	// whose archive is missing (a crash between stop and archive).
	reconcileRecent = 7 * 24 * time.Hour
)

// mediaKey is the store key of a show's media file.
func mediaKey(id int64, file string) string { return "shows/" + strconv.FormatInt(id, 10) + "/" + file }

// mediaPrefix is the store prefix of all of a show's media.
func mediaPrefix(id int64) string { return "shows/" + strconv.FormatInt(id, 10) + "/" }

// isWorkingDir tells whether the store keeps its show media in root (the
// module's working directory): then the working files are the stored
// objects.
func isWorkingDir(st store.Store, root string) bool {
	l, ok := store.Base(st).(*store.Local)
	if !ok {
		return false
	}
	abs, err := filepath.Abs(root)
	return err == nil && filepath.Join(l.Root(), "shows") == abs
}

// indexLine is one parsed line of a segment index.
type indexLine struct {
	seg  hls.Segment
	line []byte // with its newline
}

// parseIndex reads the complete lines of a segment index; a line that
// does not parse (a torn last line) is skipped.
func parseIndex(data []byte) []indexLine {
	var out []indexLine
	for line := range bytes.Lines(data) {
		if line[len(line)-1] != '\n' {
			break // torn: being appended, or cut by a crash
		}
		var s hls.Segment
		if err := json.Unmarshal(line, &s); err != nil || !mediaFile(s.File) { // a bare file name, never a path
			continue
		}
		out = append(out, indexLine{seg: s, line: append([]byte(nil), line...)})
	}
	return out
}

// fetchObject returns a stored object's bytes, nil when it is missing.
func (m *Module) fetchObject(ctx context.Context, key string) ([]byte, error) {
	data, err := store.ReadAll(ctx, m.core.Store, key)
	if store.IsNotExist(err) {
		return nil, nil
	}
	return data, err
}

// StoredIndex returns the segments of a show's index in the store, those
// the store has acknowledged. A show with no index has none.
func (m *Module) StoredIndex(ctx context.Context, id int64) ([]hls.Segment, error) {
	data, err := m.fetchObject(ctx, mediaKey(id, hls.IndexFile))
	if err != nil {
		return nil, err
	}
	var out []hls.Segment
	for _, l := range parseIndex(data) {
		out = append(out, l.seg)
	}
	return out, nil
}

// restoreDir makes a show's working directory continue what the store
// holds before a packager opens it, so that a publisher who reconnects to
// this node after streaming to another (or after this node lost its disk)
// continues the numbering instead of overwriting stored segments. Segments
// the store has and the directory lacks are recorded in the local index
// with an empty placeholder file (ReadIndex keeps entries whose file
// exists; the server never sends an empty segment, it asks the store), and
// missing live playlists are downloaded. It returns the files the store
// has acknowledged.
func (m *Module) restoreDir(ctx context.Context, id int64, dir string) (map[string]bool, error) {
	stored, err := m.fetchObject(ctx, mediaKey(id, hls.IndexFile))
	if err != nil {
		return nil, fmt.Errorf("read the stored segment index: %w", err)
	}
	remote := parseIndex(stored)
	archived := make(map[string]bool, len(remote))
	for _, l := range remote {
		archived[l.seg.File] = true
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	localData, err := os.ReadFile(filepath.Join(dir, hls.IndexFile))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	local := parseIndex(localData)
	have := make(map[string]bool, len(local))
	for _, l := range local {
		have[l.seg.File] = true
	}
	merged := local
	for _, l := range remote {
		if have[l.seg.File] {
			continue
		}
		merged = append(merged, l)
		path := filepath.Join(dir, l.seg.File)
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			if err := os.WriteFile(path, nil, 0o644); err != nil {
				return nil, err
			}
		}
	}
	if len(merged) > len(local) {
		// Each rendition's numbering continues from its last entry.
		sort.SliceStable(merged, func(i, j int) bool { return merged[i].seg.Sequence < merged[j].seg.Sequence })
		var buf bytes.Buffer
		for _, l := range merged {
			buf.Write(l.line)
		}
		if err := writeAtomic(filepath.Join(dir, hls.IndexFile), buf.Bytes()); err != nil {
			return nil, err
		}
		for _, name := range []string{hls.PlaylistAV, hls.PlaylistAudio} {
			if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
				continue
			}
			data, err := m.fetchObject(ctx, mediaKey(id, name))
			if err != nil {
				return nil, err
			}
			if data != nil {
				if err := writeAtomic(filepath.Join(dir, name), data); err != nil {
					return nil, err
				}
			}
		}
		m.core.Log.Info("live: show continues the recording kept in the store", "show", id, "stored_segments", len(remote))
	}
	return archived, nil
}

// writeAtomic replaces path with data (temporary file and rename).
func writeAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// uploader copies one show's finished segments, its index and its live
// playlists from the working directory to the store, in that order, on
// its own goroutine. It follows the local index from where it left off:
// kick only signals that there is more (a channel of one), so the work
// queued is bounded whatever the store does, and nothing is dropped.
type uploader struct {
	store  store.Store
	log    *slog.Logger
	parent context.Context // the module's lifecycle
	id     int64
	dir    string

	kick   chan struct{}
	stop   chan struct{}
	done   chan struct{}
	ctx    context.Context
	cancel context.CancelFunc

	// Touched only by the uploader's goroutine (or by sync, which runs
	// without one).
	offset   int64           // bytes of the local index handled
	archived map[string]bool // files the store has acknowledged
	listed   map[string]bool // files in index
	index    []byte          // index lines of the archived segments, in order
	sent     int             // len(index) the store has acknowledged (0: none uploaded)
	dirty    bool            // playlists changed since the last upload
	rungs    []string        // the ladder's rungs seen in the index
}

func (m *Module) newUploader(id int64, dir string, archived map[string]bool) *uploader {
	if archived == nil {
		archived = map[string]bool{}
	}
	return &uploader{store: m.core.Store, log: m.core.Log, parent: m.ctx, id: id, dir: dir, archived: archived, listed: map[string]bool{}}
}

// start runs the uploader until finish.
func (u *uploader) start() {
	u.kick, u.stop, u.done = make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
	u.ctx, u.cancel = context.WithCancel(u.parent)
	go u.run()
}

// onSegment tells the uploader a segment was finished (it follows the
// packager, followers.go); it never blocks.
func (u *uploader) onSegment(segmentEvent) {
	select {
	case u.kick <- struct{}{}:
	default:
	}
}

func (u *uploader) run() {
	defer close(u.done)
	for {
		select {
		case <-u.kick:
			u.dirty = true
			u.pass(u.ctx)
		case <-u.stop:
			u.dirty = true
			if err := u.pass(u.ctx); err != nil {
				u.log.Error("live: uploads left unfinished; reconcile or the archive will retry them", "show", u.id, "err", err)
			}
			return
		}
	}
}

// close is finish, once the packager has finished its last segment.
func (u *uploader) close() { u.finish() }

// finish uploads what is left and waits for it, at most flushWait.
func (u *uploader) finish() {
	close(u.stop)
	select {
	case <-u.done:
	case <-time.After(flushWait):
		u.cancel()
		<-u.done
	}
	u.cancel()
}

// pass uploads the segments the local index gained, then the index of the
// archived ones, then the live playlists. A failed upload is retried with
// exponential backoff until ctx ends; the segment is not listed in the stored index before the store has it.
func (u *uploader) pass(ctx context.Context) error {
	f, err := os.Open(filepath.Join(u.dir, hls.IndexFile))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	_, err = f.Seek(u.offset, io.SeekStart)
	var fresh []byte
	if err == nil {
		fresh, err = io.ReadAll(f)
	}
	f.Close()
	if err != nil {
		return err
	}
	if i := bytes.LastIndexByte(fresh, '\n'); i >= 0 {
		fresh = fresh[:i+1]
	} else {
		fresh = nil
	}
	for line := range bytes.Lines(fresh) {
		if err := u.segment(ctx, line); err != nil {
			return err
		}
		u.offset += int64(len(line))
	}
	if len(u.index) != u.sent { // never an empty index over a stored one
		err := u.retry(ctx, "index", func() error {
			return store.PutBytes(ctx, u.store, mediaKey(u.id, hls.IndexFile), u.index, "application/json")
		})
		if err != nil {
			return err
		}
		u.sent = len(u.index)
	}
	if u.dirty {
		names := []string{hls.PlaylistAV, hls.PlaylistAudio, hls.MasterAV, hls.MasterAudio}
		for _, r := range u.rungs {
			names = append(names, hls.PlaylistOf(r))
		}
		for _, name := range names {
			if err := u.retry(ctx, name, func() error { return u.putFile(ctx, name) }); err != nil {
				return err
			}
		}
		u.dirty = false
	}
	return nil
}

// segment handles one line of the local index.
func (u *uploader) segment(ctx context.Context, line []byte) error {
	l := parseIndex(line)
	if len(l) == 0 {
		return nil
	}
	file := l[0].seg.File
	if r := l[0].seg.Rendition; hls.IsRung(r) && !slices.Contains(u.rungs, r) {
		u.rungs = append(u.rungs, r) // its live playlist goes up with the others
	}
	if !u.archived[file] {
		fi, err := os.Stat(filepath.Join(u.dir, file))
		if err != nil || fi.Size() == 0 {
			return nil // gone (ReadIndex drops it too), or a placeholder of a segment the store lacks
		}
		if err := u.retry(ctx, file, func() error { return u.putFile(ctx, file) }); err != nil {
			return err
		}
		u.archived[file] = true
	}
	if !u.listed[file] {
		u.listed[file] = true
		u.index = append(u.index, l[0].line...)
	}
	return nil
}

// putFile uploads a working file; a missing one is skipped.
func (u *uploader) putFile(ctx context.Context, name string) error {
	f, err := os.Open(filepath.Join(u.dir, name))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	return u.store.Put(ctx, mediaKey(u.id, name), f, fi.Size(), store.ContentType(name))
}

// retry runs put until it succeeds, pausing uploadBackoff, doubled up to
// uploadBackoffMax, between attempts, until ctx ends.
func (u *uploader) retry(ctx context.Context, what string, put func() error) error {
	pause := uploadBackoff
	for attempt := 1; ; attempt++ {
		err := put()
		if err == nil {
			if attempt > 1 {
				u.log.Info("live: upload went through", "show", u.id, "file", what, "attempts", attempt)
			}
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("upload %s: %w", what, err)
		}
		u.log.Warn("live: upload failed; retrying", "show", u.id, "file", what, "attempt", attempt, "in", pause, "err", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("upload %s: %w", what, err)
		case <-time.After(pause):
		}
		pause = min(2*pause, uploadBackoffMax)
	}
}

// uploadThumbnails copies a show's fresh thumbnail and preview to the
// store.
func (m *Module) uploadThumbnails(ctx context.Context, id int64, dir string) error {
	u := m.newUploader(id, dir, nil)
	for _, name := range []string{thumbFile, gifFile} {
		if err := u.retry(ctx, name, func() error { return u.putFile(ctx, name) }); err != nil {
			return err
		}
	}
	return nil
}

// syncDir uploads whatever of a working directory the store lacks
// (segments a crashed or cut-off uploader left), then the index. An empty
// segment file the store lacks is removed: in a directory finalised with
// Placeholders an empty file stands for a stored segment, and this one is
// a segment the machine lost before it reached the disk (live segments
// are not synced), which the archive must leave out.
func (m *Module) syncDir(ctx context.Context, id int64, dir string) error {
	stored, err := m.StoredIndex(ctx, id)
	if err != nil {
		return err
	}
	archived := map[string]bool{}
	for _, s := range stored {
		archived[s.File] = true
	}
	u := m.newUploader(id, dir, archived)
	u.dirty = true
	if err := u.pass(ctx); err != nil {
		return err
	}
	segs, err := hls.ReadIndex(dir)
	if err != nil {
		return err
	}
	for _, s := range segs {
		if fi, err := os.Stat(filepath.Join(dir, s.File)); err == nil && fi.Size() == 0 && !u.archived[s.File] {
			if err := os.Remove(filepath.Join(dir, s.File)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}

// archiveStored finalises a show's recording into VOD playlists in the
// store and returns its segments. With the working directory on this node
// its missing uploads are finished first and it is finalised there;
// without it (another node ingested, or this node lost its disk) the
// index is taken from the store into a temporary directory, with an empty
// placeholder for each segment the store holds. Either way the archive
// lists only segments the store has.
func (m *Module) archiveStored(ctx context.Context, id int64) (segs []hls.Segment, video, audio bool, err error) {
	dir := m.showDir(id)
	work := dir
	if _, err := os.Stat(filepath.Join(dir, hls.IndexFile)); err == nil {
		if err := m.syncDir(ctx, id, dir); err != nil {
			return nil, false, false, err
		}
	} else {
		tmp, err := os.MkdirTemp(m.root, ".archive-"+strconv.FormatInt(id, 10)+"-")
		if err != nil {
			return nil, false, false, err
		}
		defer os.RemoveAll(tmp)
		if err := m.downloadIndex(ctx, id, tmp); err != nil {
			return nil, false, false, err
		}
		work = tmp
	}
	if segs, err = hls.ReadIndex(work); err != nil || len(segs) == 0 {
		return nil, false, false, err
	}
	if err := hls.Finalize(work, hls.Options{DVR: m.dvr, Placeholders: true}); err != nil {
		return nil, false, false, fmt.Errorf("finalize archive: %w", err)
	}
	u := m.newUploader(id, work, nil)
	for _, name := range hls.ArchiveFiles(segs) {
		if !fileExists(filepath.Join(work, name)) {
			continue
		}
		if err := u.retry(ctx, name, func() error { return u.putFile(ctx, name) }); err != nil {
			return nil, false, false, err
		}
	}
	return segs, fileExists(filepath.Join(work, hls.ArchiveMasterAV)), fileExists(filepath.Join(work, hls.ArchiveMasterAudio)), nil
}

// downloadIndex puts a show's stored index into dir with an empty
// placeholder for every segment the store holds (those it lacks are left
// out of the archive, as ReadIndex leaves out missing files).
func (m *Module) downloadIndex(ctx context.Context, id int64, dir string) error {
	data, err := m.fetchObject(ctx, mediaKey(id, hls.IndexFile))
	if err != nil || data == nil {
		return err
	}
	objects, err := m.core.Store.List(ctx, mediaPrefix(id))
	if err != nil {
		return err
	}
	held := make(map[string]bool, len(objects))
	for _, o := range objects {
		held[filepath.Base(o.Key)] = true
	}
	for _, l := range parseIndex(data) {
		if held[l.seg.File] {
			if err := os.WriteFile(filepath.Join(dir, l.seg.File), nil, 0o644); err != nil {
				return err
			}
		}
	}
	return os.WriteFile(filepath.Join(dir, hls.IndexFile), data, 0o644)
}

// pendingShows lists the shows reconcile looks at beyond the working
// directories: complete shows of the last reconcileRecent that are not
// archived (their media may be in the store only) and, on a node without
// Redis (a single node, so no show has a publisher after a restart), the
// live ones.
func (m *Module) pendingShows(ctx context.Context) ([]shows.Show, error) {
	var list []shows.Show
	q := m.shows.DB().NewSelect().Model(&list).Column("s.id", "s.live", "s.complete", "s.archive", "s.radio").
		WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
			q = q.Where("s.complete = ? AND s.archive = ? AND s.radio = ? AND s.ended_at > ?", true, false, false, m.core.Clock.Stamp().Add(-reconcileRecent))
			if m.core.Redis == nil {
				q = q.WhereOr("s.live = ?", true)
			}
			return q
		}).Order("s.id")
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("live: list shows to reconcile: %w", err)
	}
	return list, nil
}
