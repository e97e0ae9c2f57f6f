package live

import (
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// The live edge from memory: the packager of each show ingested on this
// node hands every playlist, segment and part it publishes to the show's
// liveFiles (hls.Options.Files), and the media routes answer from there
// before opening any file. A show holds what its live playlists list, up
// to ONAIR_HLS_MEMORY_PER_SHOW bytes, and all shows together up to
// ONAIR_HLS_MEMORY: past either, the oldest segments and parts go first
// (they are still served from disk). Archive playlists, thumbnails and
// older segments are files, as before.

// memFile is a file of a show's live stream, with its validators ready:
// a playlist as bytes, a segment or part in a memory file sent with
// sendfile(2) (shm_linux.go; as bytes where there is none).
type memFile struct {
	body    []byte   // never modified; nil when in shm
	shm     *shmFile // or nil
	size    int64
	etag    string // as localETag makes it for the file on disk
	lastMod string // HTTP date
}

// done gives back what get acquired, when the file is not sent.
func (m *memFile) done() {
	if m.shm != nil {
		m.shm.release()
	}
}

// mediaCache holds the live files of every show ingested here.
type mediaCache struct {
	max, perShow int64 // bytes; max 0 turns the cache off
	size         atomic.Int64

	mu    sync.RWMutex
	shows map[int64]*liveFiles
}

func newMediaCache(max, perShow int64) *mediaCache {
	return &mediaCache{max: max, perShow: perShow, shows: map[int64]*liveFiles{}}
}

// start gives a publication of the show an empty liveFiles for its
// packager, in place of an earlier one (whose files may since have been
// restored from the store or rewritten); nil when the cache is off.
func (mc *mediaCache) start(show int64) *liveFiles {
	if mc.max <= 0 {
		return nil
	}
	f := &liveFiles{cache: mc, files: map[string]*memFile{}}
	mc.mu.Lock()
	old := mc.shows[show]
	mc.shows[show] = f
	mc.mu.Unlock()
	old.close()
	return f
}

// drop forgets the show's files: it stopped or was deleted, and its
// playlists are about to be ended or removed on disk. A packager still
// running is not heard any more.
func (mc *mediaCache) drop(show int64) {
	mc.mu.Lock()
	f := mc.shows[show]
	delete(mc.shows, show)
	mc.mu.Unlock()
	f.close()
}

// get returns the show's file, or nil. The caller sends it (sendMemory)
// or calls done: a memory file stays open until then.
func (mc *mediaCache) get(show int64, name string) *memFile {
	mc.mu.RLock()
	f := mc.shows[show]
	mc.mu.RUnlock()
	if f == nil {
		return nil
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	m := f.files[name]
	if m != nil && m.shm != nil {
		m.shm.acquire()
	}
	return m
}

// has tells whether the show's file is held.
func (mc *mediaCache) has(show int64, name string) bool {
	mc.mu.RLock()
	f := mc.shows[show]
	mc.mu.RUnlock()
	if f == nil {
		return false
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.files[name] != nil
}

// liveFiles is one publication's files (an hls.Files).
type liveFiles struct {
	cache *mediaCache

	mu     sync.RWMutex
	files  map[string]*memFile
	media  []string // segments and parts held, oldest first (may name removed ones)
	bytes  int64
	closed bool
}

// Put keeps a file the packager has just published.
func (f *liveFiles) Put(name string, data []byte, mod time.Time) {
	size := int64(len(data))
	m := &memFile{body: data, size: size, etag: fileETag(mod, size), lastMod: mod.UTC().Format(http.TimeFormat)}
	media := filepath.Ext(name) == ".ts"
	f.mu.RLock()
	closed := f.closed
	f.mu.RUnlock()
	if closed {
		return
	}
	if media {
		if shm, err := newShm(name, data); err == nil {
			m.body, m.shm = nil, shm
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		m.done()
		return
	}
	f.removeLocked(name)
	// Room for it: the oldest segments and parts make way, within the
	// show's share and the node's total.
	for len(f.media) > 0 && (f.bytes+size > f.cache.perShow || f.cache.size.Load()+size > f.cache.max) {
		f.removeLocked(f.media[0])
		f.media = f.media[1:]
	}
	if media && (f.bytes+size > f.cache.perShow || f.cache.size.Load()+size > f.cache.max) {
		m.done()
		return // served from disk
	}
	f.files[name] = m
	f.bytes += size
	f.cache.size.Add(size)
	if !media {
		return
	}
	f.media = append(f.media, name)
	if len(f.media) > 64 && len(f.files) < len(f.media)/2 {
		// Compact the names of files removed since.
		kept := f.media[:0]
		for _, n := range f.media {
			if f.files[n] != nil {
				kept = append(kept, n)
			}
		}
		f.media = kept
	}
}

// Remove forgets a segment or part that left the live playlist.
func (f *liveFiles) Remove(name string) {
	f.mu.Lock()
	f.removeLocked(name)
	f.mu.Unlock()
}

func (f *liveFiles) removeLocked(name string) {
	if old := f.files[name]; old != nil {
		delete(f.files, name)
		f.bytes -= old.size
		f.cache.size.Add(-old.size)
		old.done()
	}
}

// close gives the memory back; later Puts are ignored.
func (f *liveFiles) close() {
	if f == nil {
		return
	}
	f.mu.Lock()
	f.closed = true
	f.cache.size.Add(-f.bytes)
	for _, m := range f.files {
		m.done()
	}
	f.files, f.media, f.bytes = map[string]*memFile{}, nil, 0
	f.mu.Unlock()
}
