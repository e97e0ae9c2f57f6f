package hls

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/onair/onair/modules/live/flv"
)

func TestSPSResolution(t *testing.T) {
	for _, tc := range []struct {
		sps  string
		w, h int
	}{
		{"6764001facd9405005bb0110000003001000000303c0f1831960", 1280, 720},  // x264 high
		{"6742c00dd90141fb0110000003001000000303c0f142a480", 320, 240},       // baseline
		{"674d4028eca03c0113f2e022000003000200000300781e30632c", 1920, 1080}, // main, cropped from 1088
		{"67f4001f919b281b07bc5f8088000003000800000301e078c18cb0", 854, 480}, // high 4:4:4, cropped
		{hex.EncodeToString(avcRecord[8:17]), 0, 0},                          // the tests' toy SPS
	} {
		b, _ := hex.DecodeString(tc.sps)
		w, h, err := spsResolution(b)
		if tc.w == 0 {
			if err == nil && (w <= 0 || h <= 0) {
				t.Errorf("%s: %dx%d without error", tc.sps, w, h)
			}
			continue
		}
		if err != nil || w != tc.w || h != tc.h {
			t.Errorf("%s: %dx%d %v, want %dx%d", tc.sps, w, h, err, tc.w, tc.h)
		}
	}
	for _, bad := range []string{"", "67", "6764001f", "6764001fffffffffffffffff"} {
		b, _ := hex.DecodeString(bad)
		if _, _, err := spsResolution(b); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func FuzzSPSResolution(f *testing.F) {
	for _, s := range []string{"6764001facd9405005bb0110000003001000000303c0f1831960", "67f4001f919b281b07bc5f8088000003000800000301e078c18cb0"} {
		b, _ := hex.DecodeString(s)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if w, h, err := spsResolution(b); err == nil && (w <= 0 || h <= 0 || w > 16384 || h > 32768) {
			t.Fatalf("%dx%d", w, h)
		}
	})
}

func TestCodecStrings(t *testing.T) {
	if got := avcCodec(&flv.AVCConfig{Profile: 100, Compatibility: 0, Level: 31}); got != "avc1.64001f" {
		t.Errorf("avc %s", got)
	}
	for _, tc := range []struct {
		cfg  flv.AudioSpecificConfig
		want string
	}{
		{flv.AudioSpecificConfig{ObjectType: 2}, "mp4a.40.2"},
		{flv.AudioSpecificConfig{ObjectType: 2, ExtensionType: flv.AOTSBR}, "mp4a.40.5"},
		{flv.AudioSpecificConfig{ObjectType: 2, ExtensionType: flv.AOTPS}, "mp4a.40.29"},
	} {
		if got := aacCodec(&tc.cfg); got != tc.want {
			t.Errorf("%+v: %s, want %s", tc.cfg, got, tc.want)
		}
	}
}

var streamInf = regexp.MustCompile(`(?m)^#EXT-X-STREAM-INF:BANDWIDTH=(\d+),AVERAGE-BANDWIDTH=(\d+),CODECS="([^"]+)"(?:,RESOLUTION=(\d+x\d+))?(?:,FRAME-RATE=([0-9.]+))?\n(\S+)$`)

// TestMasterPlaylists: the live masters list the A/V rendition with its
// codecs, bandwidth, resolution and frame rate and the audio-only one as
// the alternative; the archive's masters the same over the VOD playlists,
// and an audio-only recording gets no A/V master.
func TestMasterPlaylists(t *testing.T) {
	dir := t.TempDir()
	p := openTest(t, dir, Options{})
	feed(t, p, 0, 6100, 2000, true)
	check := func(name string, want ...string) {
		t.Helper()
		text := readFile(t, filepath.Join(dir, name))
		m := streamInf.FindAllStringSubmatch(text, -1)
		if len(m) != len(want) {
			t.Fatalf("%s: %d variants, want %d:\n%s", name, len(m), len(want), text)
		}
		for i, v := range m {
			got := strings.Join([]string{v[3], v[4], v[5], v[6]}, " ")
			peak, _ := strconv.Atoi(v[1])
			avg, _ := strconv.Atoi(v[2])
			if got != want[i] || avg < 1000 || peak < avg {
				t.Errorf("%s variant %d: %q (bandwidth %s, average %s), want %q", name, i, got, v[1], v[2], want[i])
			}
		}
	}
	av := "avc1.42c00d,mp4a.40.2 320x240 25.000 "
	check(MasterAV, av+PlaylistAV, "mp4a.40.2   "+PlaylistAudio)
	check(MasterAudio, "mp4a.40.2   "+PlaylistAudio)
	p.Close()
	if err := Finalize(dir, Options{}); err != nil {
		t.Fatal(err)
	}
	check(ArchiveMasterAV, av+ArchiveAV, "mp4a.40.2   "+ArchiveAudio)
	check(ArchiveMasterAudio, "mp4a.40.2   "+ArchiveAudio)

	audioOnly := t.TempDir()
	p = openTest(t, audioOnly, Options{})
	feed(t, p, 0, 5000, 0, true)
	p.Close()
	if err := Finalize(audioOnly, Options{}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{MasterAV, ArchiveMasterAV} {
		if _, err := os.Stat(filepath.Join(audioOnly, f)); err == nil {
			t.Errorf("an audio-only recording has %s", f)
		}
	}
	dir = audioOnly
	check(ArchiveMasterAudio, "mp4a.40.2   "+ArchiveAudio)
}

// TestMasterStale: a live master is rewritten when what players choose by
// changes, not for every drift of the average bandwidth.
func TestMasterStale(t *testing.T) {
	base := variant{uri: PlaylistAV, peak: 3_000_000, avg: 2_500_000, codecs: "avc1.64001f,mp4a.40.2", resolution: "1280x720", frameRate: 30}
	with := func(f func(v *variant)) []variant {
		v := base
		f(&v)
		return []variant{v}
	}
	old := []variant{base}
	for _, c := range []struct {
		name string
		now  []variant
		want bool
	}{
		{"unchanged", with(func(*variant) {}), false},
		{"average within a tenth", with(func(v *variant) { v.avg = 2_700_000 }), false},
		{"average a tenth higher", with(func(v *variant) { v.avg = 2_800_000 }), true},
		{"average a tenth lower", with(func(v *variant) { v.avg = 2_200_000 }), true},
		{"lower peak", with(func(v *variant) { v.peak = 2_900_000 }), false},
		{"higher peak", with(func(v *variant) { v.peak = 3_000_001 }), true},
		{"frame rate jitter", with(func(v *variant) { v.frameRate = 29.97 }), false},
		{"frame rate change", with(func(v *variant) { v.frameRate = 25 }), true},
		{"resolution", with(func(v *variant) { v.resolution = "640x360" }), true},
		{"codecs", with(func(v *variant) { v.codecs = "avc1.64001f" }), true},
		{"a variant more", append(with(func(*variant) {}), variant{uri: PlaylistAudio}), true},
		{"first", nil, true},
	} {
		o := old
		if c.now == nil {
			o, c.now = nil, old
		}
		if got := stale(o, c.now); got != c.want {
			t.Errorf("%s: stale = %v, want %v", c.name, got, c.want)
		}
	}
}
