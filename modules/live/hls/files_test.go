package hls

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// memFiles is a Files that keeps what it is told, checking each Put
// against the file on disk at that moment.
type memFiles struct {
	t       *testing.T
	dir     string
	files   map[string][]byte
	removed map[string]bool
	order   []string // names put, in order
}

func (m *memFiles) Put(name string, data []byte, mod time.Time) {
	disk, err := os.ReadFile(filepath.Join(m.dir, name))
	if err != nil {
		m.t.Errorf("Put %s: %v", name, err)
	} else if !bytes.Equal(disk, data) {
		m.t.Errorf("Put %s: %d bytes, %d on disk", name, len(data), len(disk))
	}
	if fi, err := os.Stat(filepath.Join(m.dir, name)); err == nil && !fi.ModTime().Equal(mod) {
		m.t.Errorf("Put %s: mod time %v, %v on disk", name, mod, fi.ModTime())
	}
	m.files[name] = data
	delete(m.removed, name)
	m.order = append(m.order, name)
}

func (m *memFiles) Remove(name string) {
	delete(m.files, name)
	m.removed[name] = true
}

// Every file of the live stream reaches Files as written, a segment or
// part before the playlist that lists it, and what leaves the live window
// is removed.
func TestPackagerFiles(t *testing.T) {
	for _, parts := range []time.Duration{0, -1} {
		dir := t.TempDir()
		files := &memFiles{t: t, dir: dir, files: map[string][]byte{}, removed: map[string]bool{}}
		p := openTest(t, dir, Options{Files: files, PartDuration: parts})
		feed(t, p, 0, 30100, 2000, true)
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{PlaylistAV, PlaylistAudio, MasterAV, MasterAudio} {
			if !bytes.Equal(files.files[name], []byte(readFile(t, filepath.Join(dir, name)))) {
				t.Errorf("parts %v: %s differs from the file", parts, name)
			}
		}
		for _, list := range []string{PlaylistAV, PlaylistAudio} {
			listed := 0
			for _, line := range strings.Split(readFile(t, filepath.Join(dir, list)), "\n") {
				uri := line
				if i := strings.Index(line, `URI="`); i >= 0 && strings.HasPrefix(line, "#EXT-X-PART:") {
					uri = strings.Split(line[i+5:], `"`)[0]
				} else if strings.HasPrefix(line, "#") || line == "" {
					continue
				}
				listed++
				if _, ok := files.files[uri]; !ok {
					t.Errorf("parts %v: %s lists %s, not in Files", parts, list, uri)
				}
			}
			if listed < 6 {
				t.Errorf("parts %v: %s lists %d files", parts, list, listed)
			}
		}
		// The first segments left the 12 s window.
		if !files.removed["seg-000000.ts"] || files.files["seg-000000.ts"] != nil {
			t.Errorf("parts %v: seg-000000.ts still held", parts)
		}
		if parts == 0 && !files.removed["seg-000000-p0.ts"] {
			t.Errorf("parts of seg-000000.ts not removed")
		}
		// A segment comes before the playlist that first lists it.
		seen := map[string]bool{}
		for _, name := range files.order {
			seen[name] = true
			if name == PlaylistAV && !seen["seg-000000.ts"] && parts < 0 {
				t.Errorf("the playlist came before its first segment")
				break
			}
		}
	}
}
