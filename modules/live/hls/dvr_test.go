package hls

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

var (
	mediaSeqRe = regexp.MustCompile(`(?m)^#EXT-X-MEDIA-SEQUENCE:(\d+)$`)
	skipUntil  = regexp.MustCompile(`(?m)^#EXT-X-SERVER-CONTROL:.*CAN-SKIP-UNTIL=([0-9.]+)`)
	skipTag    = regexp.MustCompile(`(?m)^#EXT-X-SKIP:SKIPPED-SEGMENTS=(\d+)$`)
)

// segmentURIs lists the segment URI lines of a playlist (no parts).
func segmentURIs(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, line)
		}
	}
	return out
}

func mediaSeq(t *testing.T, text string) int {
	t.Helper()
	m := mediaSeqRe.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no EXT-X-MEDIA-SEQUENCE:\n%s", text)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// With DVR the live playlists reach back to the first segment, while the
// live edge alone (Window) stays in Files with its parts; they offer
// delta updates once long enough, and Delta answers one that skips the
// oldest segments and keeps the tail of the full playlist as it is.
func TestPackagerDVR(t *testing.T) {
	for _, parts := range []time.Duration{0, -1} {
		t.Run(fmt.Sprintf("parts %v", parts), func(t *testing.T) {
			dir := t.TempDir()
			files := &memFiles{t: t, dir: dir, files: map[string][]byte{}, removed: map[string]bool{}}
			p := openTest(t, dir, Options{Files: files, PartDuration: parts, DVR: time.Hour})
			feed(t, p, 0, 60100, 2000, true)
			for _, list := range []string{PlaylistAV, PlaylistAudio} {
				mem := string(files.files[list])
				if n := mediaSeq(t, mem); n != 0 {
					t.Errorf("%s starts at media sequence %d, want 0", list, n)
				}
				uris := segmentURIs(mem)
				if len(uris) < 29 || !strings.HasSuffix(uris[0], "-000000.ts") {
					t.Errorf("%s lists %d segments from %v, want 30 from the first", list, len(uris), uris[:1])
				}
				if m := skipUntil.FindStringSubmatch(mem); m == nil || m[1] != "12.000" {
					t.Errorf("%s offers CAN-SKIP-UNTIL %v, want 12.000 (6 target durations)\n%s", list, m, mem[:300])
				}
				// Memory holds the live edge only; every listed segment
				// is on disk.
				held := 0
				for _, u := range uris {
					if _, ok := files.files[u]; ok {
						held++
					}
					if _, err := os.Stat(filepath.Join(dir, u)); err != nil {
						t.Errorf("%s lists %s: %v", list, u, err)
					}
				}
				if held > 8 || !files.removed[uris[0]] {
					t.Errorf("%s: %d of %d listed segments in Files, want the edge only (first removed: %v)", list, held, len(uris), files.removed[uris[0]])
				}
				if parts == 0 && strings.Count(mem, "#EXT-X-PART:") > 4*6 {
					t.Errorf("%s lists %d parts, want those of the last segments only", list, strings.Count(mem, "#EXT-X-PART:"))
				}

				delta, ok := Delta([]byte(mem))
				if !ok {
					t.Fatalf("%s: no delta update", list)
				}
				d := string(delta)
				m := skipTag.FindStringSubmatch(d)
				if m == nil {
					t.Fatalf("%s delta has no EXT-X-SKIP:\n%s", list, d)
				}
				skipped, _ := strconv.Atoi(m[1])
				kept := segmentURIs(d)
				if skipped+len(kept) != len(uris) || strings.Join(kept, ",") != strings.Join(uris[skipped:], ",") {
					t.Errorf("%s delta skips %d and keeps %v; the full playlist lists %v", list, skipped, kept, uris)
				}
				if len(delta) >= len(mem)*2/3 || !strings.Contains(d, "#EXT-X-VERSION:9\n") || mediaSeq(t, d) != 0 {
					t.Errorf("%s delta (%d bytes of %d) is not a version 9 delta of the full playlist:\n%s", list, len(delta), len(mem), d)
				}
				// The kept segments last the Skip Boundary at least.
				var kept_ float64
				for _, line := range strings.Split(d, "\n") {
					if v, ok := strings.CutPrefix(line, "#EXTINF:"); ok {
						f, _ := strconv.ParseFloat(strings.TrimSuffix(v, ","), 64)
						kept_ += f
					}
				}
				if kept_ < 12 || !strings.HasSuffix(mem, d[strings.Index(d, "#EXT-X-SKIP"):][len(m[0])+1:]) {
					t.Errorf("%s delta keeps %.3f s, not the tail of the full playlist", list, kept_)
				}
			}
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			// The playlist on disk, rendered with the cached lines of its
			// older segments, is what a render of them all afresh gives.
			segs := segmentsOf(t, dir, RenditionAudio)
			fresh := playlist{targetDuration: 2, segments: segs, skipUntil: 12}
			if disk := readFile(t, filepath.Join(dir, PlaylistAudio)); disk != string(fresh.render()) {
				t.Errorf("the playlist on disk differs from a fresh render:\n%s\nwant\n%s", disk, fresh.render())
			}
			// Ended, the live playlist still reaches back to the start.
			if err := Finalize(dir, Options{DVR: time.Hour}); err != nil {
				t.Fatal(err)
			}
			ended := readFile(t, filepath.Join(dir, PlaylistAV))
			if mediaSeq(t, ended) != 0 || !strings.HasSuffix(ended, "#EXT-X-ENDLIST\n") {
				t.Errorf("the ended live playlist:\n%s", ended)
			}
		})
	}
}

// A DVR window shorter than the show drops the oldest segments, with the
// media sequence numbering them; without DVR the playlist keeps Window
// and offers no delta update.
func TestPackagerDVRWindow(t *testing.T) {
	for _, c := range []struct {
		name    string
		dvr     time.Duration
		most    float64 // seconds listed at most
		skipped bool
	}{
		{"shorter than the show", 30 * time.Second, 34, true},
		{"off", 0, DefaultWindow.Seconds() + 4, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			files := &memFiles{t: t, dir: dir, files: map[string][]byte{}, removed: map[string]bool{}}
			p := openTest(t, dir, Options{Files: files, DVR: c.dvr})
			feed(t, p, 0, 60100, 2000, true)
			mem := string(files.files[PlaylistAV])
			uris := segmentURIs(mem)
			first, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(uris[0], "seg-"), ".ts"))
			if n := mediaSeq(t, mem); n == 0 || n != first {
				t.Errorf("media sequence %d, first segment %s", n, uris[0])
			}
			if secs := 2 * float64(len(uris)); secs > c.most || secs < c.most-8 {
				t.Errorf("%d segments listed, want about %.0f s", len(uris), c.most)
			}
			if got := skipUntil.MatchString(mem); got != c.skipped {
				t.Errorf("CAN-SKIP-UNTIL offered: %v, want %v\n%s", got, c.skipped, mem)
			}
			if _, ok := Delta([]byte(mem)); ok != c.skipped {
				t.Errorf("a delta update: %v, want %v", ok, c.skipped)
			}
			p.Close()
		})
	}
}

// Delta keeps discontinuities and program date times of the kept
// segments, and answers no delta for what offers none.
func TestDelta(t *testing.T) {
	pdt := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var segs []Segment
	for i := range 20 {
		segs = append(segs, Segment{Sequence: uint64(i + 5), File: segmentFile(RenditionAV, uint64(i+5)), Duration: 2,
			ProgramDateTime: pdt.Add(time.Duration(i) * 2 * time.Second), Discontinuity: i == 3 || i == 15, Independent: true})
	}
	full := playlist{targetDuration: 2, mediaSequence: 5, discontinuity: 1, segments: segs, skipUntil: 12}.render()
	delta, ok := Delta(full)
	if !ok {
		t.Fatal("no delta")
	}
	// 40 s listed, 12 s boundary: the segments ending at or before 28 s
	// (14 of them) are skipped.
	want := "#EXTM3U\n#EXT-X-VERSION:9\n#EXT-X-TARGETDURATION:2\n#EXT-X-SERVER-CONTROL:CAN-SKIP-UNTIL=12.000\n" +
		"#EXT-X-MEDIA-SEQUENCE:5\n#EXT-X-DISCONTINUITY-SEQUENCE:1\n#EXT-X-INDEPENDENT-SEGMENTS\n#EXT-X-SKIP:SKIPPED-SEGMENTS=14\n"
	if !bytes.HasPrefix(delta, []byte(want)) {
		t.Fatalf("delta:\n%s\nwant it to begin\n%s", delta, want)
	}
	rest := string(delta[len(want):])
	if !strings.HasPrefix(rest, "#EXT-X-PROGRAM-DATE-TIME:2026-01-02T03:04:33.000Z\n#EXTINF:2.000,\nseg-000019.ts\n#EXT-X-DISCONTINUITY\n") ||
		!strings.HasSuffix(string(full), rest) {
		t.Errorf("delta tail:\n%s", rest)
	}
	for name, text := range map[string]string{
		"no boundary":  string(playlist{targetDuration: 2, segments: segs}.render()),
		"short":        string(playlist{targetDuration: 2, segments: segs[:6], skipUntil: 12}.render()),
		"a delta":      string(delta),
		"master":       "#EXTM3U\n#EXT-X-SERVER-CONTROL:CAN-SKIP-UNTIL=12\n#EXT-X-STREAM-INF:BANDWIDTH=1\nindex.m3u8\n",
		"empty":        "",
		"not hls":      "hello\n",
		"nan boundary": "#EXTM3U\n#EXT-X-SERVER-CONTROL:CAN-SKIP-UNTIL=NaN\n#EXTINF:100,\na.ts\n#EXTINF:100,\nb.ts\n",
	} {
		if d, ok := Delta([]byte(text)); ok {
			t.Errorf("%s: a delta update:\n%s", name, d)
		}
	}
}

// FuzzDelta: any bytes (a playlist from the disk or the store) give no
// panic, and a delta is the full playlist's header, EXT-X-SKIP and a
// suffix of the full playlist.
func FuzzDelta(f *testing.F) {
	pdt := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var segs []Segment
	for i := range 12 {
		segs = append(segs, Segment{Sequence: uint64(i), File: segmentFile(RenditionAudio, uint64(i)), Duration: 1.984,
			ProgramDateTime: pdt.Add(time.Duration(i) * 2 * time.Second), Discontinuity: i == 7})
	}
	ll := &lowLatency{partTarget: 33000, parts: map[uint64][]Part{11: {{File: "audio-000011-p0.ts", Duration: 0.33}}},
		pending: []Part{{File: "audio-000012-p0.ts", Duration: 0.33}}, hint: "audio-000012-p1.ts"}
	f.Add(playlist{targetDuration: 2, segments: segs, skipUntil: 6}.render())
	f.Add(playlist{targetDuration: 2, segments: segs, skipUntil: 12, ll: ll}.render())
	f.Add([]byte("#EXTM3U\r\n#EXT-X-SERVER-CONTROL:CAN-SKIP-UNTIL=1\r\n#EXTINF:5,\r\na.ts\r\n#EXTINF:5,\r\nb.ts"))
	f.Add([]byte("#EXTM3U\n#EXT-X-SERVER-CONTROL:CAN-SKIP-UNTIL=1e9\n"))
	f.Fuzz(func(t *testing.T, full []byte) {
		delta, ok := Delta(full)
		if !ok {
			return
		}
		i := bytes.Index(delta, []byte("#EXT-X-SKIP:SKIPPED-SEGMENTS="))
		if i < 0 {
			t.Fatalf("a delta without EXT-X-SKIP:\n%q", delta)
		}
		nl := bytes.IndexByte(delta[i:], '\n')
		if nl < 0 || !bytes.HasSuffix(full, delta[i+nl+1:]) || len(delta[i+nl+1:]) >= len(full) {
			t.Fatalf("the delta's tail is not a shorter suffix of the playlist:\n%q\n%q", delta, full)
		}
		n, err := strconv.Atoi(string(delta[i+len("#EXT-X-SKIP:SKIPPED-SEGMENTS=") : i+nl]))
		if err != nil || n < 1 {
			t.Fatalf("SKIPPED-SEGMENTS %q", delta[i:i+nl])
		}
	})
}

// BenchmarkDVRRender is the playlist rendered after every part when it
// lists four hours of 2 s segments (7200), with the older segments' text
// cached (cold) as a rendition keeps it, and afresh.
func BenchmarkDVRRender(b *testing.B) {
	pdt := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r := &rendition{}
	for i := range 7200 {
		r.live = append(r.live, Segment{Sequence: uint64(i), File: segmentFile(RenditionAV, uint64(i)), Duration: 2,
			ProgramDateTime: pdt.Add(time.Duration(i) * 2 * time.Second), Independent: true})
	}
	ll := &lowLatency{partTarget: 33000, parts: map[uint64][]Part{}, hint: "seg-007200-p0.ts"}
	b.Run("cached", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p := playlist{targetDuration: 2, segments: r.live, skipUntil: 12, ll: ll}
			p.cold, p.coldN = r.coldLines(partSegments)
			b.SetBytes(int64(len(p.render())))
		}
	})
	b.Run("afresh", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p := playlist{targetDuration: 2, segments: r.live, skipUntil: 12, ll: ll}
			b.SetBytes(int64(len(p.render())))
		}
	})
	full := playlist{targetDuration: 2, segments: r.live, skipUntil: 12, ll: ll}.render()
	b.Run("delta", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			d, _ := Delta(full)
			b.SetBytes(int64(len(d)))
		}
	})
}

// A publisher that reconnects continues a DVR playlist: it still starts
// at the first segment, with the discontinuity where the new publication
// begins and the program date times running on; a window that drops the
// discontinuity counts it in EXT-X-DISCONTINUITY-SEQUENCE, and a delta
// update keeps both.
func TestPackagerDVRReconnect(t *testing.T) {
	dir := t.TempDir()
	files := &memFiles{t: t, dir: dir, files: map[string][]byte{}, removed: map[string]bool{}}
	p := openTest(t, dir, Options{Files: files, DVR: time.Hour})
	feed(t, p, 0, 20000, 2000, true)
	p.Close()
	files = &memFiles{t: t, dir: dir, files: map[string][]byte{}, removed: map[string]bool{}}
	p = openTest(t, dir, Options{Files: files, DVR: time.Hour})
	feed(t, p, 0, 20100, 2000, true)
	mem := string(files.files[PlaylistAV])
	p.Close()
	uris := segmentURIs(mem)
	if mediaSeq(t, mem) != 0 || len(uris) != 20 || strings.Contains(mem, "DISCONTINUITY-SEQUENCE") ||
		!strings.Contains(mem, "#EXT-X-DISCONTINUITY\n#EXT-X-PROGRAM-DATE-TIME:") || strings.Count(mem, "#EXT-X-DISCONTINUITY\n") != 1 {
		t.Fatalf("the playlist after a reconnection:\n%s", mem)
	}
	if i := strings.Index(mem, "#EXT-X-DISCONTINUITY\n"); !strings.HasPrefix(mem[i:], "#EXT-X-DISCONTINUITY\n#EXT-X-PROGRAM-DATE-TIME:") ||
		!strings.Contains(mem[i:], "seg-000010.ts") || strings.Contains(mem[i:], "seg-000009.ts") {
		t.Errorf("the discontinuity is not before segment 10:\n%s", mem)
	}
	d, ok := Delta([]byte(mem))
	if !ok || strings.Count(string(d), "#EXT-X-DISCONTINUITY\n") != 0 || mediaSeq(t, string(d)) != 0 {
		t.Errorf("the delta update (skips the discontinuity at 10 of 20):\n%s", d)
	}
	// A third publication with a 30 s window: the first discontinuity
	// left with the oldest segments, and is counted.
	p = openTest(t, dir, Options{DVR: 30 * time.Second})
	feed(t, p, 0, 20100, 2000, true)
	p.Close()
	disk := readFile(t, filepath.Join(dir, PlaylistAV))
	if !strings.Contains(disk, "#EXT-X-DISCONTINUITY-SEQUENCE:1\n") || strings.Count(disk, "#EXT-X-DISCONTINUITY\n") != 1 || mediaSeq(t, disk) == 0 {
		t.Errorf("30 s window after two reconnections:\n%s", disk)
	}
}
