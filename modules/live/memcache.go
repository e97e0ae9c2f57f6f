package live

import (
	"bytes"
	"errors"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/onair/onair/modules/live/hls"
)

// The live edge from memory: the packager of each show ingested on this
// node hands every playlist, segment and part it publishes to the show's
// liveFiles (hls.Options.Files), and the media routes answer from there
// before opening any file. The LL-HLS parts and the live playlists that
// list them exist only here (the directory gets a plain live playlist per
// segment, hls.Files). A show holds what its live playlists list, up to
// ONAIR_HLS_MEMORY_PER_SHOW bytes, and all shows together up to
// ONAIR_HLS_MEMORY: past either, the oldest segments and parts go first;
// a segment is then served from its file, a part from its range of its
// segment's file (partLoc), or of the segment's growing memory file while
// the segment is written (its file is written once it ends, when the
// packager is told it may: Growing, hls.GrowingFiles). Archive playlists, thumbnails and older
// segments are files, as before.

// memFile is a file of a show's live stream, with its validators ready:
// a playlist as bytes, a segment or part in a memory file sent with
// sendfile(2) (shm_linux.go; as bytes where there is none).
type memFile struct {
	body    []byte   // never modified; nil when in shm
	shm     *shmFile // or nil
	off     int64    // where the file starts in shm (a part, in its segment's)
	size    int64
	etag    string // as localETag makes it for the file on disk
	lastMod string // HTTP date

	// A live playlist's delta update (dvr.go), made on first request.
	deltaOnce sync.Once
	delta     *memFile
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
	f := &liveFiles{cache: mc, files: map[string]*memFile{}, parts: map[string]partLoc{}, ends: map[string]int64{},
		growing: map[string]*growingShm{}}
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

// part locates a part of the show's live playlists in its segment's file,
// for one that is not held in memory. While that segment is being written
// its file may lack the part (hls.GrowingFiles): the part is then
// returned as its range of the segment's growing memory file (mf, which
// the caller sends or calls done on), which has it.
func (mc *mediaCache) part(show int64, name string) (loc partLoc, mf *memFile, ok bool) {
	mc.mu.RLock()
	f := mc.shows[show]
	mc.mu.RUnlock()
	if f == nil {
		return partLoc{}, nil, false
	}
	f.mu.RLock()
	loc, ok = f.parts[name]
	f.mu.RUnlock()
	if !ok {
		return partLoc{}, nil, false
	}
	f.gmu.Lock()
	defer f.gmu.Unlock()
	if g := f.growing[loc.segment]; g != nil && g.end >= loc.off+loc.size {
		g.shm.acquire()
		return loc, &memFile{shm: g.shm, off: loc.off, size: loc.size, etag: loc.etag, lastMod: loc.lastMod}, true
	}
	return loc, nil, true
}

// liveFiles is one publication's files (an hls.Files).
type liveFiles struct {
	cache *mediaCache

	mu     sync.RWMutex
	files  map[string]*memFile
	media  []string // segments and parts held, oldest first (may name removed ones)
	bytes  int64
	closed bool
	// parts locates every part in the live playlists, held or not, in
	// its segment's file; ends is where the last part of a segment ends.
	parts map[string]partLoc
	ends  map[string]int64

	// gmu guards growing: the memory file of each segment being written,
	// which its parts are ranges of and which becomes the segment's own
	// once complete, so a segment's bytes are copied to memory once. Only
	// the packager's goroutine writes to it, outside mu, so that requests
	// never wait for a copy.
	gmu     sync.Mutex
	growing map[string]*growingShm
	gclosed bool

	// The last Last-Modified formatted, and its second (Put's goroutine
	// only).
	dateSec int64
	date    string
}

// growingShm is a segment's memory file while its parts arrive; it holds
// a reference of its own.
type growingShm struct {
	shm *shmFile
	end int64
}

// partLoc is where a part's bytes are in its segment's file, with the
// validators it was published with.
type partLoc struct {
	segment   string
	off, size int64
	etag      string
	lastMod   string
}

// Put keeps a file the packager has just published: a playlist as it is,
// a segment or part copied into a memory file (memFor; on the heap where
// there are none), since its data is the packager's buffer.
func (f *liveFiles) Put(name string, data []byte, mod time.Time) {
	size := int64(len(data))
	m := &memFile{body: data, size: size, etag: fileETag(mod, size), lastMod: f.httpDate(mod)}
	media := filepath.Ext(name) == ".ts"
	if media {
		shm, off, err := f.memFor(name, data)
		switch {
		case errors.Is(err, errFilesClosed):
			return
		case err != nil:
			m.body = bytes.Clone(data)
		default:
			m.body, m.shm, m.off = nil, shm, off
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		m.done()
		return
	}
	f.removeLocked(name)
	if segment, idx, ok := hls.PartSegment(name); ok {
		// Parts come in order, each right after the one before in its
		// segment's file.
		off, known := f.ends[segment]
		if idx == 0 {
			off, known = 0, true
		}
		if known {
			f.parts[name] = partLoc{segment: segment, off: off, size: size, etag: m.etag, lastMod: m.lastMod}
			f.ends[segment] = off + size
		}
	}
	// Room for it: the oldest segments and parts make way, within the
	// show's share and the node's total.
	for len(f.media) > 0 && (f.bytes+size > f.cache.perShow || f.cache.size.Load()+size > f.cache.max) {
		f.removeLocked(f.media[0])
		f.media = f.media[1:]
	}
	if media && (f.bytes+size > f.cache.perShow || f.cache.size.Load()+size > f.cache.max) {
		m.done()
		return // served from disk (a part from its segment's file)
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

// httpDate is mod as a Last-Modified header, formatted once a second:
// a show publishes a dozen files a second.
func (f *liveFiles) httpDate(mod time.Time) string {
	if sec := mod.Unix(); sec != f.dateSec || f.date == "" {
		f.dateSec, f.date = sec, mod.UTC().Format(http.TimeFormat)
	}
	return f.date
}

// errFilesClosed: the publication's files were dropped.
var errFilesClosed = errors.New("live: the show's live files were dropped")

// memFor puts a segment's or part's bytes in a memory file and returns it
// with a reference for the caller and where the bytes start in it. A part
// is appended to its segment's growing memory file; the segment then takes
// that file over when it holds exactly the segment's bytes (its parts'
// concatenation), else gets a file of its own, as does a part whose
// segment's file is missing. Counted per memFile, the bytes of a segment
// and of its parts are counted twice against the cache's bounds, though
// held once.
func (f *liveFiles) memFor(name string, data []byte) (*shmFile, int64, error) {
	f.gmu.Lock()
	defer f.gmu.Unlock()
	if f.gclosed {
		return nil, 0, errFilesClosed
	}
	size := int64(len(data))
	segment, idx, part := hls.PartSegment(name)
	if !part {
		segment = name
	}
	g := f.growing[segment]
	if g != nil && (!part || idx == 0) {
		delete(f.growing, segment)
		if !part && g.end == size {
			return g.shm, 0, nil // the growing file's reference passes to the segment
		}
		g.shm.release()
		g = nil
	}
	switch {
	case part && idx == 0:
		shm, err := newShm(segment, data)
		if err != nil {
			return nil, 0, err
		}
		shm.acquire()
		f.growing[segment] = &growingShm{shm: shm, end: size}
		return shm, 0, nil
	case part && g != nil:
		if err := g.shm.writeAt(data, g.end); err != nil {
			delete(f.growing, segment)
			g.shm.release()
			break
		}
		off := g.end
		g.end += size
		g.shm.acquire()
		return g.shm, off, nil
	}
	shm, err := newShm(name, data)
	return shm, 0, err
}

// Growing tells the packager whether every part put so far of the part's
// segment is in the segment's growing memory file (hls.GrowingFiles), so
// that part serves a part that memory does not hold from there while the
// segment's file lags. Not after a memory file failed, nor once the
// publication's files were dropped.
func (f *liveFiles) Growing(part string) bool {
	segment, _, ok := hls.PartSegment(part)
	if !ok {
		return false
	}
	f.gmu.Lock()
	defer f.gmu.Unlock()
	return !f.gclosed && f.growing[segment] != nil
}

var _ hls.GrowingFiles = (*liveFiles)(nil)

// Remove forgets a segment or part that left the live playlist, or the
// live playlist of a rung the ladder dropped.
func (f *liveFiles) Remove(name string) {
	f.mu.Lock()
	delete(f.parts, name)
	delete(f.ends, name)
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
	f.gmu.Lock()
	f.gclosed = true
	for _, g := range f.growing {
		g.shm.release()
	}
	f.growing = nil
	f.gmu.Unlock()
	f.mu.Lock()
	f.closed = true
	f.cache.size.Add(-f.bytes)
	for _, m := range f.files {
		m.done()
	}
	f.files, f.media, f.bytes = map[string]*memFile{}, nil, 0
	f.parts, f.ends = map[string]partLoc{}, map[string]int64{}
	f.mu.Unlock()
}
