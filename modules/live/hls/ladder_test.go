package hls

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A rung fed the source's frames (as ffmpeg returns them, keyframes
// where the source has them) is cut where the source was: the same
// numbers, durations and program date times; the masters, live and
// archived, list it between the source and the audio-only variant.
func TestRungAlignsWithSource(t *testing.T) {
	dir := t.TempDir()
	p := openTest(t, dir, Options{})
	feed(t, p, 1000, 10_000, 2000, true)
	// The rung starts late, as a transcoder does: at the second keyframe.
	r := p.Packager.Rung(240, nil)
	rungFrames(t, r, 2000, 10_000)
	if err := r.Close(false); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	live := readFile(t, filepath.Join(dir, MasterAV))
	if i, j, k := strings.Index(live, "index.m3u8"), strings.Index(live, "v240.m3u8"), strings.Index(live, "audio.m3u8"); i < 0 || j < i || k < j {
		t.Errorf("live master:\n%s", live)
	}
	src := map[uint64]Segment{}
	for _, s := range segmentsOf(t, dir, RenditionAV) {
		src[s.Sequence] = s
	}
	rung := segmentsOf(t, dir, "v240")
	if len(rung) < 3 {
		t.Fatalf("rung segments: %+v", rung)
	}
	for _, s := range rung[:len(rung)-1] { // the last one ends where the rung's input did
		o, ok := src[s.Sequence]
		if !ok || o.Duration != s.Duration || !o.ProgramDateTime.Equal(s.ProgramDateTime) || s.File != segmentFile("v240", s.Sequence) {
			t.Errorf("rung segment %+v, source %+v", s, o)
		}
	}
	if rung[0].Sequence != 1 {
		t.Errorf("the rung's first segment is %d, want the source's second", rung[0].Sequence)
	}
	if err := Finalize(dir, Options{}); err != nil {
		t.Fatal(err)
	}
	archived := readFile(t, filepath.Join(dir, ArchiveMasterAV))
	if !strings.Contains(archived, "archive_v240.m3u8") || !strings.Contains(readFile(t, filepath.Join(dir, "archive_v240.m3u8")), "#EXT-X-ENDLIST") {
		t.Errorf("archived master:\n%s", archived)
	}
}

// A rung whose transcoder restarted (Pause, then frames again seconds
// later) keeps the source's numbers: the source's segments it missed are
// listed as EXT-X-GAP segments with the source's durations and program
// date times, and it goes on after a discontinuity at the source's
// number; the gaps are in no index (they have no file).
func TestRungGapAfterRestart(t *testing.T) {
	dir := t.TempDir()
	p := openTest(t, dir, Options{})
	feed(t, p, 1000, 20_000, 2000, true)
	r := p.Packager.Rung(240, nil)
	// Segments 1 and 2, and 3 cut short by the restart; then from the
	// source's segment 6 on (12 s).
	rungFrames(t, r, 2000, 7000)
	if err := r.Pause(); err != nil {
		t.Fatal(err)
	}
	rungFrames(t, r, 12_000, 18_000)
	text := readFile(t, filepath.Join(dir, "v240.m3u8"))

	src := map[uint64]Segment{}
	for _, s := range segmentsOf(t, dir, RenditionAV) {
		src[s.Sequence] = s
	}
	type listed struct {
		uri, dur, pdt string
		gap, disc     bool
	}
	got := map[uint64]listed{}
	var seq uint64
	var cur listed
	for _, l := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(l, "#EXT-X-MEDIA-SEQUENCE:"):
			n, _ := strconv.ParseUint(strings.TrimPrefix(l, "#EXT-X-MEDIA-SEQUENCE:"), 10, 64)
			seq = n
		case l == "#EXT-X-GAP":
			cur.gap = true
		case l == "#EXT-X-DISCONTINUITY":
			cur.disc = true
		case strings.HasPrefix(l, "#EXT-X-PROGRAM-DATE-TIME:"):
			cur.pdt = strings.TrimPrefix(l, "#EXT-X-PROGRAM-DATE-TIME:")
		case strings.HasPrefix(l, "#EXTINF:"):
			cur.dur = strings.TrimSuffix(strings.TrimPrefix(l, "#EXTINF:"), ",")
		case l != "" && !strings.HasPrefix(l, "#"):
			cur.uri = l
			got[seq] = cur
			seq++
			cur = listed{}
		}
	}
	for n := uint64(1); n <= 7; n++ {
		g, ok := got[n]
		o := src[n]
		if !ok || g.uri != segmentFile("v240", n) || g.pdt != o.ProgramDateTime.UTC().Format("2006-01-02T15:04:05.000Z07:00") {
			t.Errorf("rung segment %d listed as %+v; the source's starts at %s", n, g, o.ProgramDateTime.UTC().Format("15:04:05.000"))
		}
		if wantGap := n == 4 || n == 5; g.gap != wantGap {
			t.Errorf("rung segment %d: gap %v, want %v", n, g.gap, wantGap)
		}
		if (n == 4 || n == 5 || n == 7) && g.dur != strconv.FormatFloat(o.Duration, 'f', 3, 64) {
			t.Errorf("rung segment %d lasts %s, the source's %.3f", n, g.dur, o.Duration)
		}
		if g.disc != (n == 6) {
			t.Errorf("rung segment %d: discontinuity %v", n, g.disc)
		}
	}
	if t.Failed() {
		t.Logf("rung playlist:\n%s", text)
	}
	for _, s := range segmentsOf(t, dir, "v240") {
		if s.Gap || s.Sequence == 4 || s.Sequence == 5 {
			t.Errorf("a gap in the index: %+v", s)
		}
	}
	if err := r.Close(false); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestRungNames(t *testing.T) {
	for name, want := range map[string]bool{"v360": true, "v1080": true, "v": false, "v0360": false, "av": false, "audio": false, "v36a": false, "v123456": false} {
		if IsRung(name) != want {
			t.Errorf("IsRung(%q) = %v", name, !want)
		}
	}
	if r, seq, idx, ok := ParsePartFile("v360-000012-p3.ts"); !ok || r != "v360" || seq != 12 || idx != 3 {
		t.Errorf("rung part: %q %d %d %v", r, seq, idx, ok)
	}
	if _, _, _, ok := ParsePartFile("x360-000012-p3.ts"); ok {
		t.Error("a part of no rendition was read")
	}
	if PlaylistOf("v360") != "v360.m3u8" || ArchiveOf("v360") != "archive_v360.m3u8" || !IsRungPlaylist("v240.m3u8") || IsRungPlaylist("index.m3u8") {
		t.Error("rung file names")
	}
}

// A rung removed (Rung.Close(true): its transcoder dropped it) is gone at
// once: it leaves the masters and the other renditions' reports, its live
// playlist leaves Files, and Live answers ErrGone to the blocking reload
// and the part request already waiting on it (woken, not timed out) and
// to every one after, for what it has as for what it never will; the
// segments and parts it published stay, in Files and on disk, and the
// source goes on. The playlist published again (a rung of that height
// back after the publisher reconnected) is no longer gone.
func TestDroppedRungIsGone(t *testing.T) {
	dir := t.TempDir()
	live := NewLive()
	files := &memFiles{t: t, dir: dir, files: map[string][]byte{}, removed: map[string]bool{}}
	p := openTest(t, dir, Options{Live: live, Files: files})
	feed(t, p, 1000, 6000, 2000, true)
	r := p.Packager.Rung(240, nil)
	rungFrames(t, r, 0, 6000)
	list := r.Playlist()
	before, ok := live.Position(list)
	text := string(files.files[list])
	parts := partTag.FindAllStringSubmatch(text, -1)
	if !ok || before.Segments != 2 || before.MSN != 2 || len(parts) == 0 || !strings.Contains(string(files.files[MasterAV]), list) {
		t.Fatalf("before the drop: %+v, master:\n%s\nrung:\n%s", before, files.files[MasterAV], text)
	}
	published := parts[len(parts)-1][2]

	ctx := context.Background()
	type answer struct {
		what string
		err  error
		at   time.Time
	}
	done := make(chan answer, 2)
	go func() {
		_, _, err := live.AwaitPosition(ctx, list, 3, -1)
		done <- answer{"msn 3", err, time.Now()}
	}()
	go func() {
		err := live.AwaitPart(ctx, partFile(r.Name(), 3, 0))
		done <- answer{"part 0 of 3", err, time.Now()}
	}()
	waiters := live.list(list)
	for waiters.waiting.Load() != 2 {
		runtime.Gosched()
	}
	dropped := time.Now()
	if err := r.Close(true); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		// The rung's target is 2 s: a timeout would take 6.
		if a := <-done; !errors.Is(a.err, ErrGone) || a.at.Sub(dropped) > 3*time.Second {
			t.Errorf("%s, waiting at the drop: %v after %s, want ErrGone at once", a.what, a.err, a.at.Sub(dropped))
		}
	}
	if n := waiters.waiting.Load(); n != 0 {
		t.Errorf("%d waiters left on the dropped rung", n)
	}

	after, _ := live.Position(list)
	if !live.Gone(list) || live.Gone(PlaylistAV) || live.Gone(PlaylistAudio) {
		t.Errorf("gone: rung %v, source %v, audio %v", live.Gone(list), live.Gone(PlaylistAV), live.Gone(PlaylistAudio))
	}
	for _, q := range []struct {
		msn  uint64
		part int
	}{{0, -1}, {1, -1}, {after.MSN, 0}, {after.MSN + 1, -1}} {
		if _, waited, err := live.AwaitPosition(ctx, list, q.msn, q.part); !errors.Is(err, ErrGone) || waited {
			t.Errorf("msn %d part %d after the drop: %v (waited %v), want ErrGone at once", q.msn, q.part, err, waited)
		}
	}
	for _, part := range []string{partFile(r.Name(), after.MSN, after.Part+1), partFile(r.Name(), after.MSN+1, 0)} {
		if err := live.AwaitPart(ctx, part); !errors.Is(err, ErrGone) {
			t.Errorf("%s after the drop: %v, want ErrGone", part, err)
		}
	}
	if !live.PartPublished(published) || files.files[published] == nil || files.files[segmentFile(r.Name(), 1)] == nil {
		t.Errorf("what the rung published before the drop went: %s published %v", published, live.PartPublished(published))
	}
	if _, ok := files.files[list]; ok || !files.removed[list] {
		t.Errorf("the rung's playlist still in Files")
	}
	if _, err := os.Stat(filepath.Join(dir, segmentFile(r.Name(), 1))); err != nil {
		t.Errorf("the rung's segment on disk: %v", err)
	}
	if m := string(files.files[MasterAV]); strings.Contains(m, list) || strings.Contains(readFile(t, filepath.Join(dir, MasterAV)), list) {
		t.Errorf("the master still lists the rung:\n%s", m)
	}
	// The source goes on, its next part without the rung's report.
	feed(t, p, 7000, 400, 2000, true)
	if src := string(files.files[PlaylistAV]); strings.Contains(src, list) || !strings.Contains(src, "#EXT-X-PART:") {
		t.Errorf("the source's playlist after the drop:\n%s", src)
	}
	if _, _, err := live.AwaitPosition(ctx, PlaylistAV, 0, -1); err != nil {
		t.Errorf("the source's playlist: %v", err)
	}
	// Back after a reconnect: published again, it answers again.
	live.publish(list, Position{Segments: 5, MSN: 5, Part: 0, Target: 2, PartTarget: 0.36667})
	if _, _, err := live.AwaitPosition(ctx, list, 4, -1); err != nil || live.Gone(list) {
		t.Errorf("published again: %v, gone %v", err, live.Gone(list))
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

// rungFrames feeds the rung 25 fps of the test pictures from ms to ms
// (the source's clock, 1 s ahead of zero), a keyframe every 2 s.
func rungFrames(t *testing.T, r *Rung, from, to int64) {
	t.Helper()
	sps, pps := avcRecord[8:17], avcRecord[20:24]
	for ms := from; ms < to; ms += 40 {
		nalus := [][]byte{{0x41, 0x9A, 1, 2, 3}}
		if ms%2000 == 0 {
			nalus = [][]byte{sps, pps, {0x65, 0x88, 1, 2, 3, 4}}
		}
		ts := (1000 + ms) * 90
		if err := r.Video(ts, ts, nalus); err != nil {
			t.Fatal(err)
		}
	}
}
