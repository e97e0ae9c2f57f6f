package live

import (
	"errors"

	"github.com/onair/onair/modules/live/hls"
)

// DVR: a live show's media playlists reach back to its first segment, up
// to ONAIR_DVR_WINDOW (hls.Options.DVR), so a listener can rewind. The
// segments that left the live edge are out of memory (memcache.go) and
// served from their files, or from the store, like an archive's; only
// the edge is in memory. Long playlists offer LL-HLS delta updates: a
// request with _HLS_skip=YES (or v2: there are no date ranges to skip)
// gets the playlist with its oldest segments replaced by EXT-X-SKIP
// (hls.Delta), after any blocking reload it also asks for.

var errBadSkip = errors.New("_HLS_skip must be YES or v2")

// parseSkip reads _HLS_skip: "" (none), YES or v2 (a delta update).
func parseSkip(v string) (bool, error) {
	switch v {
	case "":
		return false, nil
	case "YES", "v2":
		return true, nil
	}
	return false, errBadSkip
}

// isLivePlaylist tells the live media playlists, which _HLS_msn,
// _HLS_part and _HLS_skip apply to: the source's, the audio-only one and
// each rung's of a ladder (ladder.go).
func isLivePlaylist(file string) bool {
	return file == hls.PlaylistAV || file == hls.PlaylistAudio || hls.IsRungPlaylist(file)
}

// deltaOf is the delta update of a live playlist held in memory, made
// once per version of the playlist (rewritten after every part) for all
// the players that ask; f itself when it offers none.
func (f *memFile) deltaOf() *memFile {
	f.deltaOnce.Do(func() {
		d, ok := hls.Delta(f.body)
		if !ok {
			return
		}
		f.delta = &memFile{body: d, size: int64(len(d)), etag: deltaETag(f.etag), lastMod: f.lastMod}
	})
	if f.delta == nil {
		return f
	}
	return f.delta
}

// deltaETag is the validator of a delta update of the playlist whose
// ETag is etag: another representation, another tag.
func deltaETag(etag string) string {
	if n := len(etag); n >= 2 && etag[n-1] == '"' {
		return etag[:n-1] + `-skip"`
	}
	return etag
}

// playlistBody is the answer to a live playlist request read from a
// file or the store: the playlist, or its delta update when asked for one.
func playlistBody(data []byte, skip bool) []byte {
	if skip {
		if d, ok := hls.Delta(data); ok {
			return d
		}
	}
	return data
}
