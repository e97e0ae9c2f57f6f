package downloads

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/store"
	"github.com/onair/onair/modules/shows"
)

// Names of the files, in the store under shows/{id}/downloads/.
const (
	AudioFile = "audio.m4a"
	VideoFile = "video.mp4"
)

// The archive's playlists (modules/live/hls): the A/V one when the show
// has video, the audio-only one when it has audio.
const (
	archiveAV    = "archive.m3u8"
	archiveAudio = "archive_audio.m3u8"
)

const (
	// jobQueue bounds the archived events waiting for the worker; the
	// sweep picks up any that a full queue dropped.
	jobQueue = 64
	// sweepEvery is how often the worker looks for archived shows
	// without files (and retries failed ones).
	sweepEvery = 10 * time.Minute
	// maxAttempts bounds the tries at one show's files.
	maxAttempts = 3
	// makeTimeout bounds one show's remux (ffmpeg copies; hours of media
	// take seconds to minutes).
	makeTimeout = 30 * time.Minute
)

func key(id int64, file string) string {
	return "shows/" + strconv.FormatInt(id, 10) + "/downloads/" + file
}

// onShowEvent queues the files of a show archived on this node (each
// archive happens on one node; the others see the event as Remote).
func (m *Module) onShowEvent(_ context.Context, ev shows.Event) {
	if ev.Type != shows.EventArchived || ev.Remote {
		return
	}
	select {
	case m.jobs <- ev.Show.ID:
	default:
		m.core.Log.Warn("downloads: queue full; the sweep will make the files", "show", ev.Show.ID)
	}
}

// run makes files until ctx ends: queued shows first, the sweep every
// sweepEvery (and once at start).
func (m *Module) run(ctx context.Context) {
	sweep := time.NewTimer(0)
	defer sweep.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case id := <-m.jobs:
			m.makeLogged(ctx, id)
		case <-sweep.C:
			m.sweep(ctx)
			sweep.Reset(sweepEvery)
		}
	}
}

// sweep makes the files of archived shows that have none, oldest first,
// until none is left or ctx ends.
func (m *Module) sweep(ctx context.Context) {
	var after int64
	for ctx.Err() == nil {
		var ids []int64
		err := m.core.DB.NewSelect().Model((*shows.Show)(nil)).Column("s.id").
			Where("s.archive = ? AND s.radio = ? AND s.id > ?", true, false, after).
			Where("NOT EXISTS (SELECT 1 FROM show_downloads AS sd WHERE sd.show_id = s.id AND (sd.ready = ? OR sd.attempts >= ?))", true, maxAttempts).
			OrderExpr("s.id ASC").Limit(100).Scan(ctx, &ids)
		if err != nil {
			if ctx.Err() == nil {
				m.core.Log.Error("downloads: sweep", "err", err)
			}
			return
		}
		for _, id := range ids {
			m.makeLogged(ctx, id)
			after = id
		}
		if len(ids) < 100 {
			return
		}
	}
}

func (m *Module) makeLogged(ctx context.Context, id int64) {
	start := time.Now()
	f, err := m.make(ctx, id)
	switch {
	case err == nil && f != nil:
		m.core.Log.Info("downloads made", "show", id, "audio_bytes", f.AudioSize, "video_bytes", f.VideoSize, "took", time.Since(start).Round(time.Millisecond))
	case err != nil && ctx.Err() == nil:
		m.core.Log.Error("downloads: make", "show", id, "err", err)
		_, ferr := m.core.DB.NewInsert().Model(&File{ShowID: id, Attempts: 1, UpdatedAt: m.core.Clock.Stamp()}).
			On(m.onConflict("attempts = attempts + 1")).Exec(ctx)
		if ferr != nil && ctx.Err() == nil {
			m.core.Log.Error("downloads: record failure", "show", id, "err", ferr)
		}
	}
}

// onConflict is the ON DUPLICATE KEY / ON CONFLICT clause of a File
// insert that sets set on the row already there.
func (m *Module) onConflict(set string) string {
	if app.IsMySQL(m.core.DB) {
		return "DUPLICATE KEY UPDATE " + set
	}
	// The row already there is named by the insert's alias (bun writes
	// INSERT INTO "show_downloads" AS "sd"): SQLite refuses the table's
	// own name there.
	return "CONFLICT (show_id) DO UPDATE SET " + strings.ReplaceAll(set, "attempts + 1", "sd.attempts + 1")
}

// replacing is the set of an upsert that takes cols from the new row.
func (m *Module) replacing(cols ...string) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		if app.IsMySQL(m.core.DB) {
			parts[i] = c + " = VALUES(" + c + ")"
		} else {
			parts[i] = c + " = EXCLUDED." + c
		}
	}
	return strings.Join(parts, ", ")
}

// make remuxes an archived show's recording into its files, stores them
// and records their sizes. A show that is gone, not archived or a radio
// show is skipped (nil, nil).
func (m *Module) make(ctx context.Context, id int64) (*File, error) {
	ctx, cancel := context.WithTimeout(ctx, makeTimeout)
	defer cancel()
	sh, err := m.shows.Get(ctx, id)
	if errors.Is(err, shows.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !sh.Archive || sh.Radio {
		return nil, nil
	}
	tmp, err := os.MkdirTemp(m.core.Config.DataDir, ".downloads-"+strconv.FormatInt(id, 10)+"-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	f := &File{ShowID: id, Ready: true, UpdatedAt: m.core.Clock.Stamp()}
	audioIn, err := m.source(ctx, id, archiveAudio, tmp)
	if err != nil {
		return nil, err
	}
	made := audioIn != ""
	if made {
		if f.AudioSize, err = m.remux(ctx, id, audioIn, filepath.Join(tmp, AudioFile), "-map", "0:a:0"); err != nil {
			return nil, err
		}
	}
	if sh.VideoURL != nil {
		videoIn, err := m.source(ctx, id, archiveAV, tmp)
		if err != nil {
			return nil, err
		}
		if videoIn != "" {
			if f.VideoSize, err = m.remux(ctx, id, videoIn, filepath.Join(tmp, VideoFile), "-map", "0:v:0", "-map", "0:a:0?"); err != nil {
				return nil, err
			}
			made = true
		}
	}
	if !made {
		return nil, fmt.Errorf("downloads: show %d has no archived media", id)
	}
	_, err = m.core.DB.NewInsert().Model(f).
		On(m.onConflict(m.replacing("ready", "audio_size", "video_size", "updated_at"))).
		Exec(ctx)
	if err != nil {
		return nil, fmt.Errorf("downloads: record show %d: %w", id, err)
	}
	return f, nil
}

// source returns a path ffmpeg reads the archive playlist name of show id
// from: in the store's own directory when the store is one, else a copy of
// the playlist and its segments in tmp. "" when the show has no such
// playlist.
func (m *Module) source(ctx context.Context, id int64, name, tmp string) (string, error) {
	if l, ok := store.Base(m.core.Store).(*store.Local); ok {
		p := filepath.Join(l.Root(), "shows", strconv.FormatInt(id, 10), name)
		if _, err := os.Stat(p); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return "", nil
			}
			return "", err
		}
		return p, nil
	}
	prefix := "shows/" + strconv.FormatInt(id, 10) + "/"
	playlist, err := store.ReadAll(ctx, m.core.Store, prefix+name)
	if store.IsNotExist(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("downloads: read %s: %w", name, err)
	}
	dir := filepath.Join(tmp, strings.TrimSuffix(name, ".m3u8"))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", err
	}
	sc := bufio.NewScanner(bytes.NewReader(playlist))
	for sc.Scan() {
		seg := strings.TrimSpace(sc.Text())
		if seg == "" || strings.HasPrefix(seg, "#") {
			continue
		}
		if !segmentName(seg) {
			return "", fmt.Errorf("downloads: show %d: unexpected segment URI %q in %s", id, seg, name)
		}
		if err := m.copyObject(ctx, prefix+seg, filepath.Join(dir, seg)); err != nil {
			return "", err
		}
	}
	p := filepath.Join(dir, name)
	return p, os.WriteFile(p, playlist, 0o644)
}

// segmentName tells a bare segment file name (what the archive lists)
// from anything that could leave the directory.
func segmentName(s string) bool {
	if !strings.HasSuffix(s, ".ts") || len(s) > 80 {
		return false
	}
	for _, c := range s {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' && c != '-' && c != '.' {
			return false
		}
	}
	return !strings.Contains(s, "..")
}

func (m *Module) copyObject(ctx context.Context, key, path string) error {
	obj, err := m.core.Store.Open(ctx, key)
	if err != nil {
		return fmt.Errorf("downloads: open %s: %w", key, err)
	}
	defer obj.Body.Close()
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := bufio.NewReader(obj.Body).WriteTo(out); err != nil {
		out.Close()
		return fmt.Errorf("downloads: copy %s: %w", key, err)
	}
	return out.Close()
}

// remux copies the streams maps selects from the playlist in into out
// (MP4 family by its extension, moov first for progressive playback) and
// stores it; it returns the file's size.
func (m *Module) remux(ctx context.Context, id int64, in, out string, maps ...string) (int64, error) {
	args := []string{"-nostdin", "-loglevel", "error", "-y", "-i", in}
	args = append(args, maps...)
	args = append(args, "-c", "copy", "-movflags", "+faststart", out)
	cmd := exec.CommandContext(ctx, m.ffmpeg, args...)
	if nice, err := exec.LookPath("nice"); err == nil {
		cmd = exec.CommandContext(ctx, nice, append([]string{"-n", "19", m.ffmpeg}, args...)...)
	}
	if msg, err := cmd.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("downloads: ffmpeg %s: %w: %s", filepath.Base(out), err, bytes.TrimSpace(msg))
	}
	file, err := os.Open(out)
	if err != nil {
		return 0, err
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return 0, err
	}
	name := filepath.Base(out)
	if err := m.core.Store.Put(ctx, key(id, name), file, fi.Size(), contentType(name)); err != nil {
		return 0, fmt.Errorf("downloads: store %s: %w", name, err)
	}
	return fi.Size(), nil
}

// AudioType and VideoType are the files' media types.
const (
	AudioType = "audio/mp4"
	VideoType = "video/mp4"
)

func contentType(name string) string {
	if name == VideoFile {
		return VideoType
	}
	return AudioType
}
