package hls

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestSwapFile: each call publishes its data whole, shorter or longer than
// before, and after the first two the published file and the temporary
// one are the same two inodes, exchanged (no file is made or deleted);
// removeSwap leaves the published file alone.
func TestSwapFile(t *testing.T) {
	dir := t.TempDir()
	inodes := map[uint64]bool{}
	for i, text := range []string{"first, long enough\n", "2\n", "the third, longest of all\n", "", "fifth\n", "6\n"} {
		if err := swapFile(dir, "live.m3u8", []byte(text)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, "live.m3u8"))
		if err != nil || string(got) != text {
			t.Fatalf("call %d: %q, %v; want %q", i, got, err, text)
		}
		fi, err := os.Stat(filepath.Join(dir, "live.m3u8"))
		if err != nil {
			t.Fatal(err)
		}
		inodes[fi.Sys().(*syscall.Stat_t).Ino] = true
	}
	if len(inodes) != 2 {
		t.Errorf("the published file had %d inodes in six calls, want 2", len(inodes))
	}
	removeSwap(dir, "live.m3u8")
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "live.m3u8" {
		t.Errorf("left in the directory: %v", entries)
	}
}

// TestNoSwapFileLeft: a packager's directory keeps no temporary file of
// its playlists once it is closed.
func TestNoSwapFileLeft(t *testing.T) {
	dir := t.TempDir()
	p := openTest(t, dir, Options{Live: NewLive()})
	feed(t, p, 0, 7000, 2000, true)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("left: %s", e.Name())
		}
	}
}

// BenchmarkPlaylistFile is a 2 KiB playlist published on disk by a new
// file and rename (replaceFile) and by an exchange with the last version
// (swapFile), as a rendition does at every segment.
func BenchmarkPlaylistFile(b *testing.B) {
	data := []byte(strings.Repeat("#EXTINF:2.000,\nseg-000001.ts\n", 70))
	for _, c := range []struct {
		name string
		put  func(dir, name string, data []byte) error
	}{{"rename", replaceFile}, {"swap", swapFile}} {
		b.Run(c.name, func(b *testing.B) {
			dir := b.TempDir()
			for b.Loop() {
				if err := c.put(dir, "live.m3u8", data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
