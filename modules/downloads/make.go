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
	// makeTimeout bounds one show's remux (ffmpeg copies; hours of media
	// take seconds to minutes).
	makeTimeout = 30 * time.Minute
)

func key(id int64, file string) string {
	return "shows/" + strconv.FormatInt(id, 10) + "/downloads/" + file
}

// onShowEvent queues the files of a show archived on this node (each
// archive happens on one node; the others see the event as Remote). The
// archive's own transaction has already made the show due (onShowTx),
// so an event the full queue drops waits for the next sweep.
func (m *Module) onShowEvent(_ context.Context, ev shows.Event) {
	if ev.Type != shows.EventArchived || ev.Remote {
		return
	}
	if !m.dropEvents.Load() {
		select {
		case m.jobs <- ev.Show.ID:
			return
		default:
		}
	}
	m.metrics.dropped.Inc()
	m.core.Log.Warn("downloads: queue full; the sweep will make the files", "show", ev.Show.ID)
}

// run makes files until ctx ends: queued shows first, the sweep every
// sweepEvery (and once at start; every backfillEvery while the backfill
// of older shows is unfinished).
func (m *Module) run(ctx context.Context) {
	sweep := time.NewTimer(0)
	defer sweep.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case id := <-m.jobs:
			if ok, err := m.claim(ctx, id); ok {
				m.makeLogged(ctx, id)
			} else if err != nil && ctx.Err() == nil {
				m.core.Log.Error("downloads: claim", "show", id, "err", err)
			}
		case <-sweep.C:
			next := sweepEvery
			if st := m.sweep(ctx); !st.BackfillDone {
				next = backfillEvery
			}
			sweep.Reset(next)
		}
	}
}

// makeLogged makes a show's files and records the outcome on its row:
// made (ready, no longer due), skipped (no longer due), failed (due again
// after retryAfter, or never once maxAttempts failed) or abandoned
// because the module stops (due at once, for the next sweep of any node).
func (m *Module) makeLogged(ctx context.Context, id int64) {
	start := time.Now()
	f, err := m.make(ctx, id)
	switch {
	case err == nil && f != nil:
		m.core.Log.Info("downloads made", "show", id, "audio_bytes", f.AudioSize, "video_bytes", f.VideoSize, "took", time.Since(start).Round(time.Millisecond))
	case err == nil:
		if _, err := m.core.DB.NewUpdate().Model((*File)(nil)).Set("due_at = NULL").Where("show_id = ?", id).Exec(ctx); err != nil && ctx.Err() == nil {
			m.core.Log.Error("downloads: record skip", "show", id, "err", err)
		}
	case ctx.Err() != nil:
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, err := m.core.DB.NewUpdate().Model((*File)(nil)).Set("due_at = ?", m.core.Clock.Stamp()).Where("show_id = ?", id).Exec(rctx); err != nil {
			m.core.Log.Warn("downloads: release abandoned show; due again when its lease ends", "show", id, "err", err)
		}
	default:
		m.core.Log.Error("downloads: make", "show", id, "err", err)
		now := m.core.Clock.Stamp()
		retry := now.Add(retryAfter)
		f := &File{ShowID: id, Attempts: 1, DueAt: &retry, UpdatedAt: now}
		if maxAttempts <= 1 {
			f.DueAt = nil
		}
		// due_at first: MySQL's ON DUPLICATE KEY UPDATE sees the
		// assignments made before it, SQLite's DO UPDATE the old row.
		set := "due_at = CASE WHEN " + m.col("attempts") + " + 1 >= " + strconv.Itoa(maxAttempts) + " THEN NULL ELSE " + m.newValue("due_at") + " END, " +
			"attempts = " + m.col("attempts") + " + 1"
		if _, ferr := m.core.DB.NewInsert().Model(f).On(m.onConflict(set)).Exec(ctx); ferr != nil && ctx.Err() == nil {
			m.core.Log.Error("downloads: record failure", "show", id, "err", ferr)
		}
		// A show deleted since make asked for it keeps no failure row.
		if _, ferr := m.forgetIfGone(ctx, id); ferr != nil && ctx.Err() == nil {
			m.core.Log.Error("downloads: forget deleted show", "show", id, "err", ferr)
		}
	}
}

// onConflict is the ON DUPLICATE KEY / ON CONFLICT clause of a File
// insert that sets set on the row already there.
func (m *Module) onConflict(set string) string {
	if app.IsMySQL(m.core.DB) {
		return "DUPLICATE KEY UPDATE " + set
	}
	return "CONFLICT (show_id) DO UPDATE SET " + set
}

// col names a column of the row already there in an onConflict set: by
// the insert's alias on SQLite (bun writes INSERT INTO "show_downloads" AS
// "sd", and SQLite refuses the table's own name there).
func (m *Module) col(c string) string {
	if app.IsMySQL(m.core.DB) {
		return c
	}
	return "sd." + c
}

// newValue names a column of the row being inserted in an onConflict set.
func (m *Module) newValue(c string) string {
	if app.IsMySQL(m.core.DB) {
		return "VALUES(" + c + ")"
	}
	return "EXCLUDED." + c
}

// replacing is the set of an upsert that takes cols from the new row.
func (m *Module) replacing(cols ...string) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = c + " = " + m.newValue(c)
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
	f, err := m.makeFiles(ctx, sh)
	// The show may have been deleted while its files were made, and the
	// live module's removal of its media may have listed the store before
	// they were there (or failed the make, removing what it was writing).
	// Asked once the files and the row are written: a show still there is
	// deleted later, its removal finds the files and its transaction
	// takes the row (onShowTx); a show gone takes them with it now.
	gone, gerr := m.forgetIfGone(ctx, id)
	switch {
	case gone:
		return nil, gerr
	case err == nil:
		err = gerr
	}
	if err != nil {
		return nil, err
	}
	return f, nil
}

// makeFiles remuxes the archived show sh into its files, stores them and
// records their sizes.
func (m *Module) makeFiles(ctx context.Context, sh *shows.Show) (*File, error) {
	id := sh.ID
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
		On(m.onConflict(m.replacing("ready", "audio_size", "video_size", "due_at", "updated_at"))).
		Exec(ctx)
	if err != nil {
		return nil, fmt.Errorf("downloads: record show %d: %w", id, err)
	}
	return f, nil
}

// forgetIfGone removes the row and the files of show id if the show was
// deleted, and tells whether it was. It removes all that is left under
// the show's prefix in the store, as the live module's removal does: a
// file being stored there may have kept that removal from finishing.
func (m *Module) forgetIfGone(ctx context.Context, id int64) (bool, error) {
	_, err := m.shows.Get(ctx, id)
	if !errors.Is(err, shows.ErrNotFound) {
		return false, err
	}
	if _, err := m.core.DB.NewDelete().Model((*File)(nil)).Where("show_id = ?", id).Exec(ctx); err != nil {
		return true, fmt.Errorf("downloads: forget deleted show %d: %w", id, err)
	}
	if err := m.core.Store.DeletePrefix(ctx, "shows/"+strconv.FormatInt(id, 10)+"/"); err != nil {
		return true, fmt.Errorf("downloads: remove the files of deleted show %d: %w", id, err)
	}
	return true, nil
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
	if m.beforeStore != nil {
		if err := m.beforeStore(id); err != nil {
			return 0, fmt.Errorf("downloads: store %s: %w", name, err)
		}
	}
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
