package hls

import (
	"path/filepath"
	"strings"
	"testing"
)

// A video track whose sequence header arrives after packaging began
// audio-only is not dropped: the A/V rendition continues with video after
// a discontinuity, keeping its numbering, and the audio-only rendition
// runs on without a break.
func TestPackagerLateVideoStartsDiscontinuity(t *testing.T) {
	dir := t.TempDir()
	p := openTest(t, dir, Options{})
	p.Metadata(map[string]any{"audiocodecid": 10.0})
	feed(t, p, 0, 5000, 0, true)
	if p.HasVideo() {
		t.Fatal("video before any video arrived")
	}
	before := segmentsOf(t, dir, RenditionAV)
	feed(t, p, 5000, 6000, 2000, true)
	if !p.HasVideo() || !p.HasAudio() {
		t.Fatalf("late video not taken: video %v audio %v", p.HasVideo(), p.HasAudio())
	}
	p.Close()

	av := segmentsOf(t, dir, RenditionAV)
	if len(av) < len(before)+3 {
		t.Fatalf("A/V rendition has %d segments, %d before the video came", len(av), len(before))
	}
	var disc int
	for i, s := range av {
		if s.Sequence != uint64(i) {
			t.Fatalf("A/V numbering broke at %d: %+v", i, s)
		}
		if s.Discontinuity {
			disc = i
		}
	}
	if disc != len(before)+1 {
		// The audio-only segment in progress when the header came is
		// finished first; the first segment with video follows it.
		t.Fatalf("discontinuity at segment %d, want %d: %+v", disc, len(before)+1, av)
	}
	live := readFile(t, filepath.Join(dir, PlaylistAV))
	if !strings.Contains(live, "#EXT-X-DISCONTINUITY\n") {
		t.Errorf("live A/V playlist has no discontinuity:\n%s", live)
	}
	for _, s := range segmentsOf(t, dir, RenditionAudio) {
		if s.Discontinuity {
			t.Errorf("audio-only rendition broke at %+v", s)
		}
	}
	if err := Finalize(dir, Options{}); err != nil {
		t.Fatal(err)
	}
	if vod := readFile(t, filepath.Join(dir, ArchiveAV)); strings.Count(vod, "#EXT-X-DISCONTINUITY\n") != 1 {
		t.Errorf("archive:\n%s", vod)
	}
}

// Late audio after a video-only start gets the same treatment, and the
// audio-only rendition appears.
func TestPackagerLateAudio(t *testing.T) {
	dir := t.TempDir()
	p := openTest(t, dir, Options{})
	p.Metadata(map[string]any{"videocodecid": 7.0})
	feed(t, p, 0, 4000, 2000, false)
	if p.HasAudio() {
		t.Fatal("audio before any audio arrived")
	}
	// Audio from 4 s on, beside video that keeps its own timeline.
	if err := p.Audio(4000, aacSeqHeader); err != nil {
		t.Fatal(err)
	}
	feed(t, p, 4000, 5000, 2000, true)
	p.Close()
	if !p.HasAudio() {
		t.Fatal("late audio not taken")
	}
	if segs := segmentsOf(t, dir, RenditionAudio); len(segs) < 2 {
		t.Fatalf("audio-only rendition: %+v", segs)
	}
	found := false
	for _, s := range segmentsOf(t, dir, RenditionAV) {
		found = found || s.Discontinuity
	}
	if !found {
		t.Fatal("A/V rendition has no discontinuity where audio joined")
	}
}
