package hls

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// File names inside a stream's directory. The caller serves the directory
// as is; playlists reference segments by bare file name.
const (
	// PlaylistAV is the live playlist with video and audio.
	PlaylistAV = "index.m3u8"
	// PlaylistAudio is the live audio-only playlist, for listeners who
	// should not download video.
	PlaylistAudio = "audio.m3u8"
	// ArchiveAV and ArchiveAudio are the VOD playlists of every segment,
	// written by Finalize.
	ArchiveAV    = "archive.m3u8"
	ArchiveAudio = "archive_audio.m3u8"
	// IndexFile records every finished segment, one JSON object a line.
	IndexFile = "segments.jsonl"
)

// Rendition names, as recorded in Segment.Rendition.
const (
	RenditionAV    = "av"
	RenditionAudio = "audio"
)

// Segment describes one finished segment.
type Segment struct {
	Rendition string `json:"r"`
	Sequence  uint64 `json:"seq"`
	File      string `json:"file"`
	// Duration is the media duration in seconds.
	Duration float64 `json:"dur"`
	// ProgramDateTime is the wall-clock time of the first sample.
	ProgramDateTime time.Time `json:"pdt"`
	// Discontinuity is set on the first segment after the publisher
	// reconnected: timestamps and encoder settings may change there.
	Discontinuity bool `json:"disc,omitempty"`
	// Independent is false when the segment had to be cut before a
	// keyframe because the encoder's keyframe interval was too long.
	Independent bool `json:"ind"`
	// Target is the EXT-X-TARGETDURATION of the live playlist the segment
	// was published in, so that Finalize ends that playlist unchanged.
	Target int `json:"td,omitempty"`
	// Size is the segment file's size in bytes, Codecs the RFC 6381
	// codecs of its tracks ("avc1.64001f,mp4a.40.2"), Resolution the
	// video's WIDTHxHEIGHT and FrameRate its frames per second: what the
	// master playlists announce. Indexes written before they existed lack
	// them.
	Size       int64   `json:"size,omitempty"`
	Codecs     string  `json:"codecs,omitempty"`
	Resolution string  `json:"res,omitempty"`
	FrameRate  float64 `json:"fps,omitempty"`
	// Gap marks a segment a rung lacks (EXT-X-GAP): the source's, while
	// the rung's transcoder restarted. It has no file and is in no index;
	// it keeps the rung's numbers the source's.
	Gap bool `json:"gap,omitempty"`
}

// segmentFile is the file name of a segment of a rendition.
func segmentFile(rendition string, seq uint64) string {
	prefix := "seg-"
	switch {
	case rendition == RenditionAudio:
		prefix = "audio-"
	case IsRung(rendition):
		prefix = rendition + "-"
	}
	// As fmt's %06d, without fmt: a live rendition names a part (a slice
	// of this name) after every one.
	var b [48]byte
	out := append(b[:0], prefix...)
	for v := uint64(100000); v > 1 && seq < v; v /= 10 {
		out = append(out, '0')
	}
	out = strconv.AppendUint(out, seq, 10)
	return string(append(out, ".ts"...))
}

// ReadIndex returns the segments recorded in dir's index, in order. A
// missing index yields no segments. A torn last line (a crash while
// appending) is ignored; so are entries whose file has disappeared, and
// those whose file is not empty but of another size than recorded (the
// machine went down before the kernel wrote it all: live segments are
// not synced). An empty file is kept: a node that serves from the media
// store holds empty placeholders of the stored segments (see
// ReadRecorded).
func ReadIndex(dir string) ([]Segment, error) { return readIndex(dir, true) }

// ReadRecorded is ReadIndex without the segments whose file is empty: on
// a node that holds every segment itself (no media store to stand in for
// a placeholder), an empty file is a segment that never reached the disk
// before the machine went down. It is what Finalize archives there.
func ReadRecorded(dir string) ([]Segment, error) { return readIndex(dir, false) }

func readIndex(dir string, keepEmpty bool) ([]Segment, error) {
	data, err := os.ReadFile(filepath.Join(dir, IndexFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read segment index: %w", err)
	}
	var out []Segment
	for line := range bytes.Lines(data) {
		var s Segment
		if err := json.Unmarshal(line, &s); err != nil || s.File == "" || filepath.Base(s.File) != s.File {
			continue
		}
		fi, err := os.Stat(filepath.Join(dir, s.File))
		if err != nil || (s.Size > 0 && fi.Size() > 0 && fi.Size() != s.Size) || (!keepEmpty && fi.Size() == 0) {
			continue
		}
		out = append(out, s)
	}
	return out, nil
}

// appendIndex records a finished segment. The renditions of a ladder
// finish segments on their own goroutines: mu, when set, keeps their
// appends (and the cut of a torn one) apart.
func appendIndex(dir string, s Segment, mu *sync.Mutex) error {
	x := indexFile{path: filepath.Join(dir, IndexFile)}
	defer x.close()
	return x.append(s, mu)
}

// indexFile is a stream's segment index, opened at its first append and
// kept open until close: an append is then one write, where
// opening and closing the index for each segment of each rendition added
// four system calls (open, the poller's epoll_ctl, fstat, close) to every
// segment boundary.
type indexFile struct {
	path string
	f    *os.File
}

// append writes the segment's line. It is not synced (see syncArchive):
// a process that dies leaves it in the page cache, whole. mu, when set,
// keeps the appends of several renditions apart (the rungs of a ladder
// append through their own indexFile).
func (x *indexFile) append(s Segment, mu *sync.Mutex) error {
	if mu != nil {
		mu.Lock()
		defer mu.Unlock()
	}
	line, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encode segment index: %w", err)
	}
	if x.f == nil {
		f, err := os.OpenFile(x.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return fmt.Errorf("open segment index: %w", err)
		}
		x.f = f
	}
	n, err := x.f.Write(append(line, '\n'))
	if err != nil {
		// A short write (a full disk) would leave a torn line that the
		// next append, after space returns, runs into: cut it.
		if fi, serr := x.f.Stat(); serr == nil {
			x.f.Truncate(fi.Size() - int64(n))
		}
	}
	if err != nil {
		return fmt.Errorf("append segment index: %w", err)
	}
	return nil
}

// close closes the index, if open.
func (x *indexFile) close() error {
	if x == nil || x.f == nil {
		return nil
	}
	err := x.f.Close()
	x.f = nil
	return err
}

// writeFileAtomic replaces name in dir with data so readers never see a
// partial playlist: write a temporary file in the same directory, then
// rename it over the old one.
func writeFileAtomic(dir, name string, data []byte) error {
	f, err := os.CreateTemp(dir, "."+name+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644)
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, name))
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

// putFile replaces a published file of the live stream (replaceFile)
// and hands it to files, if set, with the file's modification time (a
// validator the copy on disk shares). data is not modified after.
func putFile(dir, name string, data []byte, files Files) error {
	if err := replaceFile(dir, name, data); err != nil {
		return err
	}
	if files == nil {
		return nil
	}
	fi, err := os.Stat(filepath.Join(dir, name))
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	files.Put(name, data, fi.ModTime())
	return nil
}

// replaceFile is writeFileAtomic for the files a Packager rewrites while
// live: its master playlists and each rendition's live playlist. A new
// file replaces the old one by rename, so a reader holding the old one
// open reads it whole however long it takes. The temporary
// file has a fixed name, since the Packager has its directory to itself,
// and is created with its final mode (like the segments); the system calls
// are made directly, because os.OpenFile also registers the file with the
// poller and os.Rename stats the target first. That is four system calls
// (open, write, close, rename) where writeFileAtomic makes about twelve.
func replaceFile(dir, name string, data []byte) error {
	tmp := filepath.Join(dir, "."+name+".tmp")
	err := writeNew(tmp, data)
	if err == nil {
		err = retryEINTR(func() error { return syscall.Rename(tmp, filepath.Join(dir, name)) })
	}
	if err != nil {
		syscall.Unlink(tmp)
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

// writeNew creates or truncates path and writes data into it.
func writeNew(path string, data []byte) error {
	var fd int
	err := retryEINTR(func() (err error) {
		fd, err = syscall.Open(path, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_TRUNC|syscall.O_CLOEXEC, 0o644)
		return err
	})
	if err != nil {
		return err
	}
	for len(data) > 0 && err == nil {
		var n int
		if n, err = syscall.Write(fd, data); err == syscall.EINTR {
			err = nil
		}
		data = data[max(n, 0):]
	}
	if cerr := syscall.Close(fd); err == nil {
		err = cerr
	}
	return err
}

func retryEINTR(call func() error) error {
	for {
		if err := call(); err != syscall.EINTR {
			return err
		}
	}
}

// segmentWriter is an open segment file. The rendition writes it a part
// (or, without parts, spillAt bytes) at a time, so it needs no buffer.
// It holds the raw descriptor: os.Create would also register the file
// with the poller (an epoll_ctl that fails for a regular file), and the
// modification time a server's copy in memory shares is read from the
// descriptor (fstat) rather than by path.
type segmentWriter struct {
	fd  int
	n   int64  // bytes written
	mem []byte // a copy of the bytes, when not nil (Options.Files; a reused buffer)
	// failed: a write failed (a full disk), so the file lacks bytes and
	// must never be finished into the index.
	failed bool
	// modTime is the file's modification time once finished.
	modTime time.Time
}

func createSegment(path string) (*segmentWriter, error) {
	var fd int
	err := retryEINTR(func() (err error) {
		fd, err = syscall.Open(path, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_TRUNC|syscall.O_CLOEXEC, 0o644)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("create segment: %w", &os.PathError{Op: "open", Path: path, Err: err})
	}
	return &segmentWriter{fd: fd}, nil
}

func (s *segmentWriter) Write(p []byte) (int, error) {
	if err := s.writePending(); err != nil {
		return 0, err
	}
	written, err := s.writeFile(p)
	if s.mem != nil {
		s.mem = append(s.mem, p[:written]...)
	}
	return written, err
}

// hold adds p to the copy in memory only: the file gets it with the next
// Write or writePending. The segment's file then lags its parts, which
// a server must keep readable otherwise (GrowingFiles).
func (s *segmentWriter) hold(p []byte) { s.mem = append(s.mem, p...) }

// writePending writes to the file what hold kept in memory only.
func (s *segmentWriter) writePending() error {
	if int64(len(s.mem)) <= s.n {
		return nil
	}
	_, err := s.writeFile(s.mem[s.n:])
	return err
}

// writeFile writes p to the file, all of it unless a write fails.
func (s *segmentWriter) writeFile(p []byte) (int, error) {
	var err error
	written := 0
	for written < len(p) {
		n, werr := syscall.Write(s.fd, p[written:])
		if werr == syscall.EINTR {
			continue
		}
		if werr != nil {
			err = werr
			break
		}
		if n == 0 {
			err = io.ErrShortWrite
			break
		}
		written += n
	}
	s.n += int64(written)
	if err != nil {
		s.failed = true
		err = fmt.Errorf("write segment: %w", err)
	}
	return written, err
}

// finish reads the file's modification time and closes it. A live
// segment is not synced: the kernel writes it back within half a minute
// (vm.dirty_expire_centisecs), a process crash loses nothing of it, and
// Finalize syncs the archive once (syncArchive).
func (s *segmentWriter) finish() error {
	var st unix.Stat_t
	err := unix.Fstat(s.fd, &st)
	if err == nil {
		s.modTime = time.Unix(st.Mtim.Unix())
	}
	if cerr := syscall.Close(s.fd); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("finish segment: %w", err)
	}
	return nil
}

// abandon closes the file without recording it.
func (s *segmentWriter) abandon() {
	syscall.Close(s.fd)
}

var _ io.Writer = (*segmentWriter)(nil)
