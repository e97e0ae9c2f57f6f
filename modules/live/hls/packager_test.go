package hls

import (
	"errors"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onair/onair/modules/live/streamcore"
)

var avcRecord = []byte{
	0x01, 0x42, 0xC0, 0x0D, 0xFF, 0xE1, 0x00, 0x09,
	0x67, 0x42, 0xC0, 0x0D, 0xD9, 0x41, 0x41, 0xFA, 0x10,
	0x01, 0x00, 0x04, 0x68, 0xCB, 0x83, 0xCB,
}

func videoSeqHeader() []byte { return append([]byte{0x17, 0, 0, 0, 0}, avcRecord...) }

func videoFrame(idr bool) []byte {
	nal := []byte{0x41, 0x9A, 1, 2, 3, 4}
	head := byte(0x27)
	if idr {
		nal = []byte{0x65, 0x88, 1, 2, 3, 4, 5, 6}
		head = 0x17
	}
	b := []byte{head, 1, 0, 0, 0, 0, 0, 0, byte(len(nal))}
	return append(b, nal...)
}

var aacSeqHeader = []byte{0xAF, 0, 0x12, 0x10} // AAC-LC, 44.1 kHz, stereo

func aacFrame() []byte { return []byte{0xAF, 1, 0x21, 0x10, 0x05, 0x00} }

// feed sends ms of synthetic media starting at start: 25 fps video with a
// keyframe every gop ms (no video when gop is 0) and 44.1 kHz AAC audio
// (none when audio is false), interleaved by timestamp.
func feed(t *testing.T, p *FLVFeed, start, ms, gop int64, audio bool) {
	t.Helper()
	if gop > 0 {
		if err := p.Video(start, videoSeqHeader()); err != nil {
			t.Fatal(err)
		}
	}
	if audio {
		if err := p.Audio(start, aacSeqHeader); err != nil {
			t.Fatal(err)
		}
	}
	var v, a int64
	for {
		vt := start + v*40
		at := start + int64(math.Round(float64(a)*1024*1000/44100))
		if (gop == 0 || vt-start >= ms) && (!audio || at-start >= ms) {
			return
		}
		if gop > 0 && vt-start < ms && (!audio || vt <= at) {
			if err := p.Video(vt, videoFrame((v*40)%gop == 0)); err != nil {
				t.Fatal(err)
			}
			v++
			continue
		}
		if err := p.Audio(at, aacFrame()); err != nil {
			t.Fatal(err)
		}
		a++
	}
}

var testEpoch = time.Date(2025, 3, 1, 20, 0, 0, 0, time.UTC)

func openTest(t *testing.T, dir string, o Options) *FLVFeed {
	t.Helper()
	o.Now = func() time.Time { return testEpoch }
	o.Logger = slog.New(slog.DiscardHandler)
	o.noSync = true
	p, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	return NewFLVFeed(p, 0)
}

func segmentsOf(t *testing.T, dir, rendition string) []Segment {
	t.Helper()
	all, err := ReadIndex(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []Segment
	for _, s := range all {
		if s.Rendition == rendition {
			out = append(out, s)
		}
	}
	return out
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestPackagerCutsOnKeyframes(t *testing.T) {
	for _, start := range []int64{0, 0xFFFFFF - 3000, 5 << 32} {
		dir := t.TempDir()
		p := openTest(t, dir, Options{})
		feed(t, p, start, 10000, 2000, true)
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		av := segmentsOf(t, dir, RenditionAV)
		if len(av) != 5 {
			t.Fatalf("start %d: %d A/V segments, want 5", start, len(av))
		}
		for i, s := range av {
			if math.Abs(s.Duration-2) > 0.05 || !s.Independent || s.Sequence != uint64(i) || s.Discontinuity {
				t.Errorf("A/V segment %+v", s)
			}
			if want := testEpoch.Add(time.Duration(i) * 2 * time.Second); !s.ProgramDateTime.Equal(want) {
				t.Errorf("segment %d PDT %v, want %v", i, s.ProgramDateTime, want)
			}
		}
		aud := segmentsOf(t, dir, RenditionAudio)
		var total float64
		for _, s := range aud {
			total += s.Duration
			if s.Duration > 2.1 || !s.Independent {
				t.Errorf("audio segment %+v", s)
			}
		}
		if math.Abs(total-10) > 0.1 {
			t.Errorf("audio lasts %.3f s", total)
		}
		live := readFile(t, filepath.Join(dir, PlaylistAV))
		for _, want := range []string{"#EXT-X-TARGETDURATION:2\n", "#EXT-X-INDEPENDENT-SEGMENTS\n", "#EXT-X-MEDIA-SEQUENCE:0\n", "seg-000004.ts\n"} {
			if !strings.Contains(live, want) {
				t.Errorf("live playlist lacks %q:\n%s", want, live)
			}
		}
		if strings.Contains(live, "ENDLIST") {
			t.Error("Close must not end the live playlist")
		}
	}
}

func TestPackagerLongGOP(t *testing.T) {
	dir := t.TempDir()
	p := openTest(t, dir, Options{})
	feed(t, p, 0, 14000, 6000, true)
	p.Close()
	av := segmentsOf(t, dir, RenditionAV)
	forced := 0
	for _, s := range av {
		if s.Duration > 2 {
			t.Errorf("segment of %.3f s exceeds the target duration", s.Duration)
		}
		if !s.Independent {
			forced++
		}
	}
	if forced == 0 {
		t.Fatal("no forced cut with a 6 s keyframe interval")
	}
	if live := readFile(t, filepath.Join(dir, PlaylistAV)); strings.Contains(live, "INDEPENDENT-SEGMENTS") {
		t.Error("playlist with forced cuts claims independent segments")
	}
	if live := readFile(t, filepath.Join(dir, PlaylistAudio)); !strings.Contains(live, "INDEPENDENT-SEGMENTS") {
		t.Error("audio playlist must stay independent")
	}
}

func TestPackagerAudioOnly(t *testing.T) {
	dir := t.TempDir()
	p := openTest(t, dir, Options{})
	p.Metadata(map[string]any{"audiocodecid": 10.0})
	feed(t, p, 0, 500, 0, true)
	if !p.HasAudio() || p.HasVideo() {
		t.Fatal("metadata hint should start audio-only packaging at once")
	}
	feed(t, p, 500, 5400, 0, true)
	p.Close()
	for _, r := range []string{RenditionAV, RenditionAudio} {
		segs := segmentsOf(t, dir, r)
		if len(segs) != 3 {
			t.Errorf("%s: %d segments, want 3", r, len(segs))
		}
	}
}

// TestPackagerAudioOnlyOption: with Options.AudioOnly, A/V input (with
// its video announced) is packaged as the audio-only rendition alone,
// across a reconnection and into the archive: no A/V segment, playlist or
// master is written.
func TestPackagerAudioOnlyOption(t *testing.T) {
	dir := t.TempDir()
	for part := range 2 {
		p := openTest(t, dir, Options{AudioOnly: true})
		p.Metadata(map[string]any{"videocodecid": 7.0, "audiocodecid": 10.0})
		feed(t, p, 0, 6000, 2000, true)
		if p.HasVideo() || !p.HasAudio() {
			t.Fatalf("part %d: video %v audio %v", part, p.HasVideo(), p.HasAudio())
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := Finalize(dir, Options{}); err != nil {
		t.Fatal(err)
	}
	if av := segmentsOf(t, dir, RenditionAV); len(av) != 0 {
		t.Errorf("%d A/V segments", len(av))
	}
	audio := segmentsOf(t, dir, RenditionAudio)
	breaks := 0
	for _, s := range audio {
		if s.Discontinuity {
			breaks++
		}
	}
	if len(audio) < 6 || breaks != 1 {
		t.Errorf("audio segments (one break after the reconnection): %+v", audio)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		switch n := e.Name(); {
		case strings.HasPrefix(n, "seg-"), n == PlaylistAV, n == MasterAV, n == ArchiveAV, n == ArchiveMasterAV:
			t.Errorf("wrote %s", n)
		}
	}
	if m := readFile(t, filepath.Join(dir, ArchiveMasterAudio)); !strings.Contains(m, ArchiveAudio) {
		t.Errorf("archive audio master:\n%s", m)
	}
}

func TestPackagerProbesWithoutMetadata(t *testing.T) {
	dir := t.TempDir()
	p := openTest(t, dir, Options{})
	feed(t, p, 0, 1000, 0, true)
	if p.HasAudio() {
		t.Fatal("decided before the probe duration")
	}
	feed(t, p, 1000, 3000, 0, true)
	if !p.HasAudio() || p.HasVideo() {
		t.Fatal("probe did not settle on audio only")
	}
	p.Close()
	if segs := segmentsOf(t, dir, RenditionAudio); len(segs) < 2 || segs[0].ProgramDateTime != testEpoch {
		t.Fatalf("segments %+v", segs)
	}
}

func TestPackagerReconnectAndFinalize(t *testing.T) {
	dir := t.TempDir()
	p := openTest(t, dir, Options{Window: 6 * time.Second})
	feed(t, p, 0, 6000, 2000, true)
	p.Close()
	// The publisher comes back; its timestamps restart.
	p = openTest(t, dir, Options{Window: 6 * time.Second})
	feed(t, p, 0, 8000, 2000, true)
	p.Close()

	av := segmentsOf(t, dir, RenditionAV)
	if len(av) != 7 {
		t.Fatalf("%d segments, want 7", len(av))
	}
	for i, s := range av {
		if s.Sequence != uint64(i) || s.Discontinuity != (i == 3) {
			t.Errorf("segment %+v", s)
		}
	}
	live := readFile(t, filepath.Join(dir, PlaylistAV))
	if !strings.Contains(live, "#EXT-X-MEDIA-SEQUENCE:4\n") || !strings.Contains(live, "#EXT-X-DISCONTINUITY-SEQUENCE:1\n") {
		t.Errorf("window after the discontinuity slid out:\n%s", live)
	}

	if err := Finalize(dir, Options{Window: 6 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if err := Finalize(dir, Options{Window: 6 * time.Second}); err != nil { // idempotent
		t.Fatal(err)
	}
	arch := readFile(t, filepath.Join(dir, ArchiveAV))
	for _, want := range []string{"#EXT-X-PLAYLIST-TYPE:VOD\n", "#EXT-X-ENDLIST\n", "#EXT-X-DISCONTINUITY\n", "seg-000000.ts\n", "seg-000006.ts\n"} {
		if !strings.Contains(arch, want) {
			t.Errorf("archive lacks %q:\n%s", want, arch)
		}
	}
	if n := strings.Count(arch, "#EXTINF:"); n != 7 {
		t.Errorf("archive lists %d segments", n)
	}
	if !strings.HasSuffix(readFile(t, filepath.Join(dir, PlaylistAudio)), "#EXT-X-ENDLIST\n") {
		t.Error("finalized live playlist not ended")
	}
}

func TestFinalizeAfterCrash(t *testing.T) {
	dir := t.TempDir()
	p := openTest(t, dir, Options{})
	feed(t, p, 0, 7000, 2000, true)
	// Simulate a crash: no Close, a torn index line and a partial segment.
	f, _ := os.OpenFile(filepath.Join(dir, IndexFile), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"r":"av","seq":9,"fi`)
	f.Close()
	if err := Finalize(dir, Options{}); err != nil {
		t.Fatal(err)
	}
	arch := readFile(t, filepath.Join(dir, ArchiveAV))
	if n := strings.Count(arch, "#EXTINF:"); n != 3 {
		t.Fatalf("archive lists %d segments, want the 3 finished ones:\n%s", n, arch)
	}
	if _, err := os.Stat(filepath.Join(dir, "seg-000003.ts")); err != nil {
		t.Fatal("the partial segment should still be on disk for inspection")
	}
}

// TestFinalizeAfterPowerLoss: live segments are not synced, so after the
// machine went down one may be on disk empty (never written back) or
// torn (in part). The archive leaves out the torn one, whose size the
// index contradicts, and the empty one unless empty files are a media
// store's placeholders (Options.Placeholders).
func TestFinalizeAfterPowerLoss(t *testing.T) {
	dir := t.TempDir()
	p := openTest(t, dir, Options{})
	feed(t, p, 0, 7000, 2000, true)
	if err := os.Truncate(filepath.Join(dir, "seg-000001.ts"), 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(dir, "seg-000002.ts"), 1000); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		placeholders bool
		want         []string
	}{
		{true, []string{"seg-000000.ts", "seg-000001.ts"}},
		{false, []string{"seg-000000.ts"}},
	} {
		if err := Finalize(dir, Options{Placeholders: c.placeholders}); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, line := range strings.Split(readFile(t, filepath.Join(dir, ArchiveAV)), "\n") {
			if strings.HasSuffix(line, ".ts") {
				got = append(got, line)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("placeholders %v: the archive lists %v, want %v", c.placeholders, got, c.want)
		}
	}
	recorded, err := ReadRecorded(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range recorded {
		if s.File == "seg-000001.ts" || s.File == "seg-000002.ts" {
			t.Errorf("ReadRecorded keeps %s", s.File)
		}
	}
}

func TestPackagerUnsupportedCodecs(t *testing.T) {
	p := openTest(t, t.TempDir(), Options{})
	if err := p.Video(0, []byte{0x90, 'h', 'v', 'c', '1', 0, 1}); !errors.As(err, new(streamcore.CodecError)) {
		t.Fatalf("hevc: %v", err)
	}
	p = openTest(t, t.TempDir(), Options{})
	if err := p.Audio(0, []byte{0x2F, 0xFF, 0xFB}); !errors.As(err, new(streamcore.CodecError)) {
		t.Fatalf("mp3: %v", err)
	}
	if err := p.Audio(0, aacSeqHeader); !errors.As(err, new(streamcore.CodecError)) {
		t.Fatal("errors must be sticky")
	}
}

func TestPackagerRejectsBadConfig(t *testing.T) {
	p := openTest(t, t.TempDir(), Options{})
	if err := p.Video(0, []byte{0x17, 0, 0, 0, 0, 1, 0x42}); err == nil {
		t.Fatal("truncated AVC config accepted")
	}
	p = openTest(t, t.TempDir(), Options{})
	if err := p.Audio(0, []byte{0xAF, 0, 0x12, 0x00}); err == nil { // PCE channel configuration
		t.Fatal("AAC config ADTS cannot carry accepted")
	}
}

func TestPlaylistRender(t *testing.T) {
	pdt := time.Date(2025, 3, 1, 20, 0, 0, 0, time.UTC)
	p := playlist{
		targetDuration: 4,
		mediaSequence:  7,
		discontinuity:  2,
		segments: []Segment{
			{File: "seg-000007.ts", Duration: 2, ProgramDateTime: pdt, Independent: true},
			{File: "seg-000008.ts", Duration: 1.9876, ProgramDateTime: pdt.Add(time.Hour), Discontinuity: true, Independent: true},
		},
	}
	want := `#EXTM3U
#EXT-X-VERSION:3
#EXT-X-TARGETDURATION:4
#EXT-X-MEDIA-SEQUENCE:7
#EXT-X-DISCONTINUITY-SEQUENCE:2
#EXT-X-INDEPENDENT-SEGMENTS
#EXT-X-PROGRAM-DATE-TIME:2025-03-01T20:00:00.000Z
#EXTINF:2.000,
seg-000007.ts
#EXT-X-DISCONTINUITY
#EXT-X-PROGRAM-DATE-TIME:2025-03-01T21:00:00.000Z
#EXTINF:1.988,
seg-000008.ts
`
	if got := string(p.render()); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	p.vod, p.discontinuity = true, 0
	got := string(p.render())
	if !strings.Contains(got, "#EXT-X-PLAYLIST-TYPE:VOD\n") || !strings.HasSuffix(got, "#EXT-X-ENDLIST\n") {
		t.Fatalf("vod playlist:\n%s", got)
	}
}
