package live

import (
	"bytes"
	"testing"
	"time"
)

// The cache's bounds: a show's oldest segments and parts make way past
// its share and past the node's total, a segment that cannot fit is left
// to the disk, playlists stay; what is evicted, replaced, refused or held
// by a stopped show gives its bytes back.
func TestMediaCacheLimits(t *testing.T) {
	mod := time.Unix(1700000000, 5)
	seg := func(n int) []byte { return bytes.Repeat([]byte{'s'}, n) }
	mc := newMediaCache(1000, 600)
	a := mc.start(1)
	a.Put("index.m3u8", []byte("#EXTM3U\n"), mod)
	for i, name := range []string{"seg-000000.ts", "seg-000001.ts", "seg-000002.ts"} {
		a.Put(name, seg(200+i), mod)
	}
	// 8 + 200 + 201 + 202 = 611 > 600: seg-000000 made way.
	if mc.has(1, "seg-000000.ts") || !mc.has(1, "seg-000001.ts") || !mc.has(1, "seg-000002.ts") || !mc.has(1, "index.m3u8") {
		t.Fatal("the show's share did not evict its oldest segment")
	}
	if got := mc.size.Load(); got != 8+201+202 {
		t.Fatalf("size %d", got)
	}
	// Bigger than the show's share: not kept, and nothing evicted for it
	// beyond what it took to try.
	a.Put("seg-000003.ts", seg(700), mod)
	if mc.has(1, "seg-000003.ts") {
		t.Fatal("a segment over the show's share was kept")
	}
	if got := mc.size.Load(); got != 8 {
		t.Fatalf("size %d after a refused segment", got)
	}
	// The node's total: show 2 takes room, show 1's next segment makes
	// way among show 1's own segments only.
	a.Put("seg-000004.ts", seg(300), mod)
	b := mc.start(2)
	b.Put("seg-000000.ts", seg(550), mod)
	a.Put("seg-000005.ts", seg(300), mod) // 8+300+550+300 > 1000
	if !mc.has(2, "seg-000000.ts") || mc.has(1, "seg-000004.ts") || !mc.has(1, "seg-000005.ts") {
		t.Fatal("the node's total did not evict the show's own oldest segment")
	}
	if got := mc.size.Load(); got != 8+550+300 {
		t.Fatalf("size %d", got)
	}
	// Replaced and removed files give their bytes back.
	a.Put("index.m3u8", []byte("#EXTM3U\n#EXT-X-VERSION:9\n"), mod)
	a.Remove("seg-000005.ts")
	if got := mc.size.Load(); got != 25+550 {
		t.Fatalf("size %d after replace and remove", got)
	}
	// A stopped show's cache is dropped; its packager is not heard after.
	mc.drop(2)
	b.Put("seg-000001.ts", seg(10), mod)
	if mc.has(2, "seg-000000.ts") || mc.has(2, "seg-000001.ts") || mc.size.Load() != 25 {
		t.Fatalf("dropped show still held (size %d)", mc.size.Load())
	}
	// A new publication replaces the earlier one's files.
	mc.start(1)
	if mc.has(1, "index.m3u8") || mc.size.Load() != 0 {
		t.Fatalf("a new publication kept the old files (size %d)", mc.size.Load())
	}
	// Off: nothing held.
	if newMediaCache(0, 600).start(1) != nil {
		t.Fatal("a cache of 0 bytes holds files")
	}
}

// A part evicted from memory while its segment is still being written
// (whose file may lack it: hls.GrowingFiles) is sent from the segment's
// growing memory file; once the segment is complete, from its file.
func TestMediaCacheGrowingPart(t *testing.T) {
	mod := time.Unix(1700000000, 5)
	mc := newMediaCache(1<<20, 1<<20)
	f := mc.start(1)
	p0, p1 := bytes.Repeat([]byte{'a'}, 376), bytes.Repeat([]byte{'b'}, 564)
	f.Put("seg-000004-p0.ts", p0, mod)
	if !f.Growing("seg-000004-p0.ts") {
		t.Fatal("the segment's memory file is not growing after its first part")
	}
	f.Put("seg-000004-p1.ts", p1, mod)
	if !f.Growing("seg-000004-p1.ts") {
		t.Fatal("the segment's memory file stopped growing")
	}
	f.mu.Lock()
	f.removeLocked("seg-000004-p1.ts")
	f.mu.Unlock()
	loc, mf, ok := mc.part(1, "seg-000004-p1.ts")
	if !ok || mf == nil {
		t.Fatalf("evicted part of a growing segment: located %v, in memory %v", ok, mf != nil)
	}
	if mf.etag != loc.etag || mf.size != 564 || mf.off != 376 {
		t.Errorf("the part's validators or range changed: %+v against %+v", mf, loc)
	}
	mf.done()
	f.Put("seg-000004.ts", append(append([]byte(nil), p0...), p1...), mod)
	if f.Growing("seg-000004-p1.ts") {
		t.Error("still growing after the segment was put")
	}
	if _, mf, ok := mc.part(1, "seg-000004-p1.ts"); !ok || mf != nil {
		t.Errorf("after the segment: located %v, from memory %v; want its file", ok, mf != nil)
	}
	mc.drop(1)
	if f.Growing("seg-000005-p0.ts") {
		t.Error("growing after the files were dropped")
	}
	if mc.size.Load() != 0 {
		t.Errorf("%d bytes still counted after drop", mc.size.Load())
	}
}

// A segment's parts are ranges of one memory file, which the segment
// takes over once complete; a part evicted from memory is still located
// in its segment's file; what leaves the playlist is forgotten.
func TestMediaCacheParts(t *testing.T) {
	mod := time.Unix(1700000000, 5)
	mc := newMediaCache(1<<20, 1<<20)
	f := mc.start(1)
	p0, p1 := bytes.Repeat([]byte{'a'}, 376), bytes.Repeat([]byte{'b'}, 564)
	f.Put("seg-000003-p0.ts", p0, mod)
	f.Put("seg-000003-p1.ts", p1, mod)
	f.Put("seg-000003.ts", append(append([]byte(nil), p0...), p1...), mod)
	part, seg := mc.get(1, "seg-000003-p1.ts"), mc.get(1, "seg-000003.ts")
	if part == nil || seg == nil || part.size != 564 {
		t.Fatal("parts or segment not held")
	}
	defer part.done()
	defer seg.done()
	if part.shm != nil && (part.shm != seg.shm || part.off != 376 || seg.off != 0) {
		t.Errorf("the part is not its range of the segment's memory file (offset %d)", part.off)
	}
	// Evicted from memory, a part is located in its segment's file.
	f.mu.Lock()
	f.removeLocked("seg-000003-p1.ts")
	f.mu.Unlock()
	if loc, mf, ok := mc.part(1, "seg-000003-p1.ts"); mc.has(1, "seg-000003-p1.ts") || !ok || mf != nil || loc.segment != "seg-000003.ts" || loc.off != 376 || loc.size != 564 || loc.etag == "" {
		t.Errorf("evicted part located at %+v (%v, in memory %v)", loc, ok, mf != nil)
	}
	f.Remove("seg-000003-p1.ts")
	if _, _, ok := mc.part(1, "seg-000003-p1.ts"); ok {
		t.Error("a part that left the playlist is still located")
	}
	mc.drop(1)
	if mc.size.Load() != 0 {
		t.Errorf("size %d after drop", mc.size.Load())
	}
}
