package hls

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

var (
	partTag  = regexp.MustCompile(`(?m)^#EXT-X-PART:DURATION=([0-9.]+),URI="([^"]+)"(,INDEPENDENT=YES)?$`)
	hintTag  = regexp.MustCompile(`(?m)^#EXT-X-PRELOAD-HINT:TYPE=PART,URI="([^"]+)"$`)
	partInf  = regexp.MustCompile(`(?m)^#EXT-X-PART-INF:PART-TARGET=([0-9.]+)$`)
	serverCt = regexp.MustCompile(`(?m)^#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK=([0-9.]+)$`)
	report   = regexp.MustCompile(`(?m)^#EXT-X-RENDITION-REPORT:URI="([^"]+)",LAST-MSN=(\d+),LAST-PART=(\d+)$`)
)

// llPlaylist is what TestPackagerParts reads back from a live playlist.
type llPlaylist struct {
	partTarget, holdBack float64
	parts                [][]string // per segment (the last one pending): file, duration, independent
	segments             []string
	hint                 string
	reports              [][]string
}

func parseLL(t *testing.T, text string) llPlaylist {
	t.Helper()
	var l llPlaylist
	m := partInf.FindStringSubmatch(text)
	s := serverCt.FindStringSubmatch(text)
	if m == nil || s == nil {
		t.Fatalf("no EXT-X-PART-INF or EXT-X-SERVER-CONTROL:\n%s", text)
	}
	l.partTarget, _ = strconv.ParseFloat(m[1], 64)
	l.holdBack, _ = strconv.ParseFloat(s[1], 64)
	if h := hintTag.FindStringSubmatch(text); h != nil {
		l.hint = h[1]
	}
	l.reports = report.FindAllStringSubmatch(text, -1)
	for _, line := range strings.Split(text, "\n") {
		if p := partTag.FindStringSubmatch(line); p != nil {
			l.parts = append(l.parts, p)
		} else if line != "" && !strings.HasPrefix(line, "#") {
			l.segments = append(l.segments, line)
		}
	}
	return l
}

// TestPackagerParts: the live playlists announce LL-HLS (server control,
// part target, parts of the last segments with INDEPENDENT on keyframes,
// the next part as a preload hint, the other rendition's report); every
// part is within the part target, the parts of a segment are its bytes
// exactly, and Live follows each playlist.
func TestPackagerParts(t *testing.T) {
	dir := t.TempDir()
	live := NewLive()
	p := openTest(t, dir, Options{Live: live})
	feed(t, p, 0, 9100, 2000, true)

	for _, list := range []string{PlaylistAV, PlaylistAudio} {
		text := readFile(t, filepath.Join(dir, list))
		l := parseLL(t, text)
		if l.partTarget != 0.36667 || l.holdBack < 3*l.partTarget {
			t.Errorf("%s: PART-TARGET %v, PART-HOLD-BACK %v", list, l.partTarget, l.holdBack)
		}
		var sum float64
		var seg uint64 = 1 // parts are listed for the last three segments (1–3) and the one being written (4)
		prevFile := ""
		for _, m := range l.parts {
			d, _ := strconv.ParseFloat(m[1], 64)
			if d > l.partTarget || d < 0.2 {
				t.Errorf("%s: part %s lasts %v s, part target %v", list, m[2], d, l.partTarget)
			}
			rendition, s, idx, ok := ParsePartFile(m[2])
			if !ok || PlaylistOf(rendition) != list {
				t.Fatalf("%s: part file %q", list, m[2])
			}
			if s != seg {
				// A new segment: the previous one's parts add up to it.
				if got := segmentSum(t, dir, list, seg); abs(sum-got) > 0.002 {
					t.Errorf("%s: parts of segment %d last %.5f s, the segment %.3f s", list, seg, sum, got)
				}
				seg, sum = s, 0
			}
			sum += d
			if idx == 0 && list == PlaylistAV && m[3] == "" {
				t.Errorf("%s: %s starts with a keyframe but is not INDEPENDENT", list, m[2])
			}
			if list == PlaylistAudio && m[3] == "" {
				t.Errorf("%s: audio part %s not INDEPENDENT", list, m[2])
			}
			prevFile = m[2]
		}
		if seg != 4 || len(l.parts) < 3*6 {
			t.Errorf("%s: %d parts, the last of segment %d, want those of segments 1–3 and 4 (being written)\n%s", list, len(l.parts), seg, text)
		}
		_, _, lastIdx, _ := ParsePartFile(prevFile)
		if want := partFile(map[string]string{PlaylistAV: RenditionAV, PlaylistAudio: RenditionAudio}[list], 4, lastIdx+1); l.hint != want {
			t.Errorf("%s: preload hint %q, want %q", list, l.hint, want)
		}
		other := map[string]string{PlaylistAV: PlaylistAudio, PlaylistAudio: PlaylistAV}[list]
		if len(l.reports) != 1 || l.reports[0][1] != other {
			t.Errorf("%s: rendition reports %v, want one of %s", list, l.reports, other)
		}
		pos, ok := live.Position(list)
		if !ok || pos.Segments != 4 || pos.MSN != 4 || pos.Part != lastIdx {
			t.Errorf("%s: Live position %+v, want 4 segments and part %d of segment 4", list, pos, lastIdx)
		}
		// Segment 0 lists no parts any more (three segments keep theirs)
		// but its files are still there for players that saw them.
		if strings.Contains(text, "seg-000000-p") || strings.Contains(text, "audio-000000-p") {
			t.Errorf("%s: parts of the fourth segment from the end are still listed:\n%s", list, text)
		}
	}
	for _, r := range []string{RenditionAV, RenditionAudio} {
		for seq := uint64(0); seq < 3; seq++ {
			var joined []byte
			for i := 0; ; i++ {
				b, err := os.ReadFile(filepath.Join(dir, partFile(r, seq, i)))
				if err != nil {
					break
				}
				joined = append(joined, b...)
			}
			whole, err := os.ReadFile(filepath.Join(dir, segmentFile(r, seq)))
			if err != nil || !bytes.Equal(joined, whole) || len(whole) == 0 {
				t.Errorf("%s segment %d: %d bytes, its parts %d bytes joined, equal %v", r, seq, len(whole), len(joined), bytes.Equal(joined, whole))
			}
		}
	}
	// The window slides: parts of segments that left it are deleted.
	feed(t, p, 9200, 12000, 2000, true)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, partFile(RenditionAV, 0, 0))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the parts of a segment out of the window are kept: %v", err)
	}
	if text := readFile(t, filepath.Join(dir, PlaylistAV)); hintTag.MatchString(text) {
		t.Errorf("a closed stream's playlist still hints a part:\n%s", text)
	}
	// Finalize removes every part and ends the playlists without LL tags.
	if err := Finalize(dir, Options{}); err != nil {
		t.Fatal(err)
	}
	if parts, _ := filepath.Glob(filepath.Join(dir, "*-p*.ts")); len(parts) > 0 {
		t.Errorf("parts left after Finalize: %v", parts)
	}
	if text := readFile(t, filepath.Join(dir, PlaylistAV)); strings.Contains(text, "#EXT-X-PART") || !strings.Contains(text, "#EXT-X-ENDLIST") {
		t.Errorf("ended live playlist:\n%s", text)
	}
}

func abs(f float64) float64 { return max(f, -f) }

func segmentSum(t *testing.T, dir, list string, seq uint64) float64 {
	t.Helper()
	r := RenditionAV
	if list == PlaylistAudio {
		r = RenditionAudio
	}
	for _, s := range segmentsOf(t, dir, r) {
		if s.Sequence == seq {
			return s.Duration
		}
	}
	t.Fatalf("no segment %d of %s", seq, r)
	return 0
}

// TestPackagerPartsOff: PartDuration < 0 writes the playlists of old,
// without any LL-HLS tag or part file.
func TestPackagerPartsOff(t *testing.T) {
	dir := t.TempDir()
	p := openTest(t, dir, Options{PartDuration: -1})
	feed(t, p, 0, 5000, 2000, true)
	p.Close()
	for _, list := range []string{PlaylistAV, PlaylistAudio} {
		if text := readFile(t, filepath.Join(dir, list)); strings.Contains(text, "#EXT-X-PART") || strings.Contains(text, "SERVER-CONTROL") || strings.Contains(text, "PRELOAD") {
			t.Errorf("%s with parts off:\n%s", list, text)
		}
	}
	if parts, _ := filepath.Glob(filepath.Join(dir, "*-p*.ts")); len(parts) > 0 {
		t.Errorf("part files with parts off: %v", parts)
	}
}

// TestPartsOfOddRates: 30 fps video and 48 kHz audio (frames that do not
// divide the part length) still give parts within the part target and
// about three a second.
func TestPartsOfOddRates(t *testing.T) {
	dir := t.TempDir()
	p := openTest(t, dir, Options{})
	feedAtRate(t, p, 30, 30*6)
	for _, list := range []string{PlaylistAV, PlaylistAudio} {
		text := readFile(t, filepath.Join(dir, list))
		l := parseLL(t, text)
		for _, m := range l.parts {
			if d, _ := strconv.ParseFloat(m[1], 64); d > l.partTarget || d < 0.25 {
				t.Errorf("%s: part %s lasts %v s", list, m[2], d)
			}
		}
		if n := len(l.parts); n < 12 {
			t.Errorf("%s: %d parts over ~6 s:\n%s", list, n, text)
		}
	}
}

// TestLiveAwait: a wait returns once the playlist has what it asked for,
// at once when it has it already, ErrTooFar for a request past RFC
// 8216bis's limits, and ErrNotReady after three target durations.
func TestLiveAwait(t *testing.T) {
	l := NewLive()
	ctx := context.Background()
	l.publish(PlaylistAV, Position{Segments: 5, MSN: 5, Part: 1, Target: 1, PartTarget: 0.36667})
	if err := l.Await(ctx, PlaylistAV, 4, -1); err != nil {
		t.Errorf("a segment already there: %v", err)
	}
	if err := l.Await(ctx, PlaylistAV, 5, 1); err != nil {
		t.Errorf("a part already there: %v", err)
	}
	for _, tc := range []struct {
		msn  uint64
		part int
	}{{8, -1}, {5, 11}, {6, 8}, {7, 9}} {
		if err := l.Await(ctx, PlaylistAV, tc.msn, tc.part); !errors.Is(err, ErrTooFar) {
			t.Errorf("msn %d part %d: %v, want ErrTooFar", tc.msn, tc.part, err)
		}
	}
	done := make(chan error, 1)
	began := time.Now()
	go func() { done <- l.Await(ctx, PlaylistAV, 5, 2) }()
	time.Sleep(50 * time.Millisecond) // let it wait: this checks that it does
	select {
	case err := <-done:
		t.Fatalf("returned before the part existed: %v", err)
	default:
	}
	l.publish(PlaylistAudio, Position{Segments: 5, MSN: 5, Part: 3, Target: 1, PartTarget: 0.36667})
	l.publish(PlaylistAV, Position{Segments: 5, MSN: 5, Part: 2, Target: 1, PartTarget: 0.36667})
	if err := <-done; err != nil {
		t.Errorf("after the part appeared: %v", err)
	}
	// A whole segment: only once it is complete.
	go func() { done <- l.Await(ctx, PlaylistAV, 5, -1) }()
	l.publish(PlaylistAV, Position{Segments: 5, MSN: 5, Part: 3, Target: 1, PartTarget: 0.36667})
	l.publish(PlaylistAV, Position{Segments: 6, MSN: 5, Part: 5, Target: 1, PartTarget: 0.36667})
	if err := <-done; err != nil {
		t.Errorf("after the segment completed: %v", err)
	}
	// Part 6 of a segment that ended with part 5: part 0 of the next.
	go func() { done <- l.Await(ctx, PlaylistAV, 5, 6) }()
	l.publish(PlaylistAV, Position{Segments: 6, MSN: 6, Part: 0, Target: 1, PartTarget: 0.36667})
	if err := <-done; err != nil {
		t.Errorf("a part past the end of its segment: %v", err)
	}
	if d := time.Since(began); d > 2*time.Second {
		t.Errorf("waits took %s", d)
	}
	began = time.Now()
	if err := l.Await(ctx, PlaylistAV, 7, -1); !errors.Is(err, ErrNotReady) {
		t.Errorf("nothing new: %v, want ErrNotReady", err)
	}
	if d := time.Since(began); d < 3*time.Second-50*time.Millisecond || d > 5*time.Second {
		t.Errorf("gave up after %s, want three target durations (3 s)", d)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := l.Await(cctx, PlaylistAV, 7, -1); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: %v", err)
	}
	// Parts: the hinted one waits, one further ahead does not.
	if err := l.AwaitPart(ctx, partFile(RenditionAV, 6, 0)); err != nil {
		t.Errorf("a published part: %v", err)
	}
	go func() { done <- l.AwaitPart(ctx, partFile(RenditionAV, 6, 1)) }()
	l.publish(PlaylistAV, Position{Segments: 6, MSN: 6, Part: 1, Target: 1, PartTarget: 0.36667})
	if err := <-done; err != nil {
		t.Errorf("the hinted part: %v", err)
	}
	// The part after the hinted one waits too: the playlist that hints it
	// is written before its position is published.
	for _, f := range []string{partFile(RenditionAV, 6, 3), partFile(RenditionAV, 7, 0), partFile(RenditionAV, 7, 1)} {
		go func() { done <- l.AwaitPart(ctx, f) }()
	}
	l.publish(PlaylistAV, Position{Segments: 7, MSN: 7, Part: 1, Target: 1, PartTarget: 0.36667})
	for range 3 {
		if err := <-done; err != nil {
			t.Errorf("a part one past the hinted one: %v", err)
		}
	}
	for _, f := range []string{partFile(RenditionAV, 7, 4), partFile(RenditionAV, 9, 0), partFile(RenditionAV, 8, 2), "seg-000007.ts", partFile(RenditionAudio, 9, 0)} {
		if err := l.AwaitPart(ctx, f); !errors.Is(err, ErrTooFar) {
			t.Errorf("%s: %v, want ErrTooFar", f, err)
		}
	}
}

func TestParsePartFile(t *testing.T) {
	for _, tc := range []struct {
		name      string
		rendition string
		seq       uint64
		idx       int
		ok        bool
	}{
		{"seg-000123-p2.ts", RenditionAV, 123, 2, true},
		{"audio-1234567-p10.ts", RenditionAudio, 1234567, 10, true},
		{"seg-000123.ts", "", 0, 0, false},
		{"seg-000123-p02.ts", "", 0, 0, false},
		{"seg-000123-p.ts", "", 0, 0, false},
		{"seg-00012-p1.ts", "", 0, 0, false},
		{"seg-000123-p1.m3u8", "", 0, 0, false},
		{"video-000123-p1.ts", "", 0, 0, false},
		{"seg-99999999999999999999-p1.ts", "", 0, 0, false},
		{"seg-+00123-p1.ts", "", 0, 0, false},
	} {
		r, seq, idx, ok := ParsePartFile(tc.name)
		if ok != tc.ok || ok && (r != tc.rendition || seq != tc.seq || idx != tc.idx) {
			t.Errorf("%s: %q %d %d %v", tc.name, r, seq, idx, ok)
		}
	}
}

func FuzzParsePartFile(f *testing.F) {
	for _, s := range []string{"seg-000123-p2.ts", "audio-000001-p0.ts", "seg-000123.ts", "seg--p.ts"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		r, seq, idx, ok := ParsePartFile(name)
		if ok && partFile(r, seq, idx) != name {
			t.Fatalf("%q read as %s %d %d", name, r, seq, idx)
		}
	})
}

func TestPartDurationSnapsToFraction(t *testing.T) {
	for _, tc := range []struct{ in, want time.Duration }{
		{333 * time.Millisecond, 2 * time.Second / 6},
		{500 * time.Millisecond, 500 * time.Millisecond},
		{400 * time.Millisecond, 400 * time.Millisecond},
		{450 * time.Millisecond, 450 * time.Millisecond},
		{0, 2 * time.Second / 6},
		{-1, 0},
		{5 * time.Second, 2 * time.Second},
	} {
		if got := (Options{PartDuration: tc.in}).withDefaults().PartDuration; got != tc.want {
			t.Errorf("%s: %s, want %s", tc.in, got, tc.want)
		}
	}
}

// TestLiveAwaitPosition: a wait that was answered at once says so; one
// that waited gets the position that answered it, with the moment it was
// published, and is woken by its own playlist only.
func TestLiveAwaitPosition(t *testing.T) {
	l := NewLive()
	ctx := context.Background()
	l.publish(PlaylistAV, Position{Segments: 5, MSN: 5, Part: 1, Target: 2, PartTarget: 0.22})
	if p, waited, err := l.AwaitPosition(ctx, PlaylistAV, 5, 1); err != nil || waited || p.Part != 1 || p.Published.IsZero() {
		t.Fatalf("a part already there: %+v waited %v, %v", p, waited, err)
	}
	type answer struct {
		p      Position
		waited bool
		err    error
	}
	done := make(chan answer, 1)
	go func() {
		p, waited, err := l.AwaitPosition(ctx, PlaylistAV, 5, 2)
		done <- answer{p, waited, err}
	}()
	// Once the waiter waits on its playlist's version.
	av := l.list(PlaylistAV)
	for av.waiting.Load() == 0 {
		runtime.Gosched()
	}
	v := av.cur.Load()
	l.publish(PlaylistAudio, Position{Segments: 5, MSN: 5, Part: 2, Target: 2, PartTarget: 0.22})
	select {
	case <-v.next:
		t.Error("the audio playlist woke the video playlist's waiters")
	default:
	}
	before := time.Now()
	l.publish(PlaylistAV, Position{Segments: 5, MSN: 5, Part: 2, Target: 2, PartTarget: 0.22})
	after := time.Now()
	a := <-done
	if a.err != nil || !a.waited || a.p.Part != 2 || a.p.Published.Before(before) || a.p.Published.After(after) {
		t.Errorf("after the part appeared: %+v waited %v, %v; published between %s and %s", a.p, a.waited, a.err, before, after)
	}
}

// TestLiveCrowd: one publication releases every waiter of its playlist,
// each with the very position (and moment) that answered it; waiters
// that asked for a later part stay, and another playlist's are not woken.
func TestLiveCrowd(t *testing.T) {
	l := NewLive()
	ctx := context.Background()
	l.publish(PlaylistAV, Position{Segments: 5, MSN: 5, Part: 1, Target: 2, PartTarget: 0.22})
	l.publish(PlaylistAudio, Position{Segments: 5, MSN: 5, Part: 1, Target: 2, PartTarget: 0.22})
	type answer struct {
		p      Position
		waited bool
		err    error
	}
	const crowd = 200
	now, later, audio := make(chan answer, crowd), make(chan answer, crowd), make(chan answer, crowd)
	wait := func(out chan answer, list string, part int) {
		p, waited, err := l.AwaitPosition(ctx, list, 5, part)
		out <- answer{p, waited, err}
	}
	for range crowd {
		go wait(now, PlaylistAV, 2)
		go wait(later, PlaylistAV, 3)
		go wait(audio, PlaylistAudio, 2)
	}
	for l.list(PlaylistAV).waiting.Load() < 2*crowd || l.list(PlaylistAudio).waiting.Load() < crowd {
		runtime.Gosched()
	}
	l.publish(PlaylistAV, Position{Segments: 5, MSN: 5, Part: 2, Target: 2, PartTarget: 0.22})
	first := <-now
	for i := range crowd {
		a := first
		if i > 0 {
			a = <-now
		}
		if a.err != nil || !a.waited || a.p != first.p || a.p.Part != 2 {
			t.Fatalf("waiter %d: %+v waited %v, %v; the first got %+v", i, a.p, a.waited, a.err, first.p)
		}
	}
	if n := l.list(PlaylistAV).waiting.Load(); n != crowd {
		t.Errorf("%d waiters for part 3 left, want %d", n, crowd)
	}
	if n := l.list(PlaylistAudio).waiting.Load(); n != crowd {
		t.Errorf("%d audio waiters left, want %d", n, crowd)
	}
	l.publish(PlaylistAV, Position{Segments: 5, MSN: 5, Part: 3, Target: 2, PartTarget: 0.22})
	l.publish(PlaylistAudio, Position{Segments: 5, MSN: 5, Part: 2, Target: 2, PartTarget: 0.22})
	for range crowd {
		if a := <-later; a.err != nil || a.p.Part != 3 {
			t.Fatalf("a waiter for part 3: %+v, %v", a.p, a.err)
		}
		if a := <-audio; a.err != nil || a.p.Part != 2 {
			t.Fatalf("an audio waiter: %+v, %v", a.p, a.err)
		}
	}
}

// TestPartPublishedAtItsBoundary: a part is published as the frame that
// reaches its end arrives, not with the next one; the last part of a
// segment waits for the keyframe that ends it; a part that opens on a
// keyframe mid-segment is INDEPENDENT.
func TestPartPublishedAtItsBoundary(t *testing.T) {
	dir := t.TempDir()
	live := NewLive()
	p := openTest(t, dir, Options{Live: live, PartDuration: 200 * time.Millisecond})
	if err := p.Video(0, videoSeqHeader()); err != nil {
		t.Fatal(err)
	}
	if err := p.Audio(0, aacSeqHeader); err != nil {
		t.Fatal(err)
	}
	var a int64 // audio frames sent, each before the video frame it precedes
	position := func() (uint64, int) {
		pos, ok := live.Position(PlaylistAV)
		if !ok {
			return 0, -1
		}
		return pos.MSN, pos.Part
	}
	for ms := int64(0); ms <= 2000; ms += 40 {
		for ; a*1024*1000/44100 <= ms; a++ {
			if err := p.Audio(a*1024*1000/44100, aacFrame()); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Video(ms, videoFrame(ms%2000 == 0 || ms == 1000)); err != nil {
			t.Fatal(err)
		}
		msn, part := position()
		switch ms {
		case 120:
			if part != -1 {
				t.Fatalf("after the frame at 120 ms: part %d of segment %d published, want none", part, msn)
			}
		case 160: // ends at 200 ms: part 0 is complete
			if msn != 0 || part != 0 {
				t.Fatalf("after the frame at 160 ms (its end the part's): part %d of segment %d, want part 0 of 0", part, msn)
			}
		case 1960: // the last part of the segment waits for the keyframe
			if msn != 0 || part != 8 {
				t.Fatalf("after the frame at 1960 ms: part %d of segment %d, want part 8 of 0", part, msn)
			}
		case 2000:
			if pos, _ := live.Position(PlaylistAV); pos.Segments != 1 || pos.MSN != 0 || pos.Part != 9 {
				t.Fatalf("after the keyframe at 2 s: position %+v, want segment 0 complete with 10 parts", pos)
			}
		}
	}
	l := parseLL(t, readFile(t, filepath.Join(dir, PlaylistAV)))
	for _, m := range l.parts {
		_, seq, idx, _ := ParsePartFile(m[2])
		if d, _ := strconv.ParseFloat(m[1], 64); seq == 0 && d != 0.2 {
			t.Errorf("part %s lasts %v s, want 0.2", m[2], d)
		}
		if want := seq == 0 && (idx == 0 || idx == 5); (m[3] != "") != want {
			t.Errorf("part %s: INDEPENDENT %q, want %v", m[2], m[3], want)
		}
	}
}
