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
// against the directory at that moment: a segment or master playlist is
// its file, a part is already the tail of its segment's file and has no
// file of its own.
type memFiles struct {
	t       *testing.T
	dir     string
	files   map[string][]byte
	removed map[string]bool
	order   []string // names put, in order
}

func (m *memFiles) Put(name string, data []byte, mod time.Time) {
	if rendition, seq, _, ok := ParsePartFile(name); ok {
		if _, err := os.Stat(filepath.Join(m.dir, name)); err == nil {
			m.t.Errorf("Put %s: the part has a file", name)
		}
		seg, err := os.ReadFile(filepath.Join(m.dir, segmentFile(rendition, seq)))
		if err != nil || !bytes.HasSuffix(seg, data) || len(data) == 0 {
			m.t.Errorf("Put %s: %d bytes, not the end of its segment's %d (%v)", name, len(data), len(seg), err)
		}
	} else if name != PlaylistAV && name != PlaylistAudio && !IsRungPlaylist(name) {
		disk, err := os.ReadFile(filepath.Join(m.dir, name))
		if err != nil {
			m.t.Errorf("Put %s: %v", name, err)
		} else if !bytes.Equal(disk, data) {
			m.t.Errorf("Put %s: %d bytes, %d on disk", name, len(data), len(disk))
		}
		if fi, err := os.Stat(filepath.Join(m.dir, name)); err == nil && !fi.ModTime().Equal(mod) {
			m.t.Errorf("Put %s: mod time %v, %v on disk", name, mod, fi.ModTime())
		}
	}
	m.files[name] = bytes.Clone(data) // a segment's or part's buffer is the packager's
	delete(m.removed, name)
	m.order = append(m.order, name)
}

func (m *memFiles) Remove(name string) {
	delete(m.files, name)
	m.removed[name] = true
}

// uris lists the segments and parts a playlist names.
func uris(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if i := strings.Index(line, `URI="`); i >= 0 && strings.HasPrefix(line, "#EXT-X-PART:") {
			out = append(out, strings.Split(line[i+5:], `"`)[0])
		} else if !strings.HasPrefix(line, "#") && line != "" {
			out = append(out, line)
		}
	}
	return out
}

// Every file of the live stream reaches Files as published, a segment or
// part before the playlist that lists it, and what leaves the live window
// is removed. With LL-HLS parts, the parts and the playlists of each part
// are in Files only: the directory has the segments and a live playlist
// per segment without the LL-HLS tags, naming only files it holds.
func TestPackagerFiles(t *testing.T) {
	for _, parts := range []time.Duration{0, -1} {
		dir := t.TempDir()
		files := &memFiles{t: t, dir: dir, files: map[string][]byte{}, removed: map[string]bool{}}
		p := openTest(t, dir, Options{Files: files, PartDuration: parts})
		feed(t, p, 0, 30100, 2000, true)
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{MasterAV, MasterAudio} {
			if !bytes.Equal(files.files[name], []byte(readFile(t, filepath.Join(dir, name)))) {
				t.Errorf("parts %v: %s differs from the file", parts, name)
			}
		}
		for _, list := range []string{PlaylistAV, PlaylistAudio} {
			mem, disk := string(files.files[list]), readFile(t, filepath.Join(dir, list))
			if hasParts := strings.Contains(mem, "#EXT-X-PART:"); hasParts != (parts == 0) {
				t.Errorf("parts %v: %s in Files lists parts: %v\n%s", parts, list, hasParts, mem)
			}
			if parts < 0 && mem != disk {
				t.Errorf("parts %v: %s differs from the file", parts, list)
			}
			if strings.Contains(disk, "#EXT-X-PART") || strings.Contains(disk, "#EXT-X-SERVER-CONTROL") || strings.Contains(disk, "#EXT-X-PRELOAD-HINT") {
				t.Errorf("parts %v: %s on disk has LL-HLS tags:\n%s", parts, list, disk)
			}
			for _, uri := range uris(disk) {
				if _, err := os.Stat(filepath.Join(dir, uri)); err != nil {
					t.Errorf("parts %v: %s on disk lists %s: %v", parts, list, uri, err)
				}
			}
			listed := uris(mem)
			for _, uri := range listed {
				if _, ok := files.files[uri]; !ok {
					t.Errorf("parts %v: %s lists %s, not in Files", parts, list, uri)
				}
			}
			if len(listed) < 6 {
				t.Errorf("parts %v: %s lists %d files", parts, list, len(listed))
			}
		}
		// No part has a file; the parts in Files are their segments' bytes.
		if names, _ := filepath.Glob(filepath.Join(dir, "*-p*.ts")); len(names) > 0 {
			t.Errorf("parts %v: part files on disk: %v", parts, names)
		}
		for name, data := range files.files {
			if rendition, seq, idx, ok := ParsePartFile(name); ok {
				seg, ok := files.files[segmentFile(rendition, seq)]
				if !ok && idx == 0 {
					t.Errorf("%s held without its segment", name)
				}
				if ok && !bytes.Contains(seg, data) {
					t.Errorf("%s is not a slice of its segment", name)
				}
			}
		}
		// The first segments left the 12 s window.
		if !files.removed["seg-000000.ts"] || files.files["seg-000000.ts"] != nil {
			t.Errorf("parts %v: seg-000000.ts still held", parts)
		}
		if parts == 0 && (!files.removed["seg-000000-p0.ts"] || !files.removed["seg-000000-p5.ts"]) {
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
