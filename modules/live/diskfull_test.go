package live_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
)

// mountTmpfs mounts a tmpfs of size (such as "5m") on dir until the test
// ends: a disk the test can fill. It needs root (CI runs as root: there a
// test that cannot mount fails).
func mountTmpfs(t *testing.T, dir, size string) {
	t.Helper()
	if os.Geteuid() != 0 {
		testload.Skip(t, "mounting a tmpfs needs root")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount a tmpfs on %s: %v\n%s", dir, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v\n%s", dir, err, out)
			exec.Command("umount", "-l", dir).Run()
		}
	})
}

// fill appends to the file at path until the disk refuses with ENOSPC.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err = f.Write(chunk); err != nil {
			break
		}
	}
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("filling %s: %v, want ENOSPC", path, err)
	}
}

// variantOf is the URL of a master playlist's first variant.
func variantOf(t *testing.T, master string) string {
	t.Helper()
	status, _, body := getText(t, master)
	if status != http.StatusOK {
		t.Fatalf("GET %s: %d\n%s", master, status, body)
	}
	return firstVariant(t, master, body)
}

var listedSegment = regexp.MustCompile(`(?m)^([a-z]+-(\d+)\.ts)`)

// checkSegments fetches every segment a media playlist lists and asserts
// each is whole: a transport stream that ffprobe reads to about the
// duration the playlist gives it.
func checkSegments(t *testing.T, playlist, text string) {
	t.Helper()
	durations := extinf.FindAllStringSubmatch(text, -1)
	uris := listedSegment.FindAllStringSubmatch(text, -1)
	if len(uris) == 0 || len(uris) != len(durations) {
		t.Fatalf("%s lists %d segments with %d durations:\n%s", playlist, len(uris), len(durations), text)
	}
	for i, u := range uris {
		want, _ := strconv.ParseFloat(durations[i][1], 64)
		got := probeDuration(t, resolve(t, playlist, u[1]))
		if math.Abs(got-want) > 0.3 {
			t.Errorf("%s: ffprobe reads %.2f s, the playlist says %.2f s", u[1], got, want)
		}
	}
}

// probeDuration is the duration ffprobe reads from a media URL.
func probeDuration(t *testing.T, url string) float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testload.Patience)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ffprobe", "-v", "error", "-show_entries", "format=duration",
		"-of", "default=noprint_wrappers=1:nokey=1", url).Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v", url, err)
	}
	d, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
	if err != nil {
		t.Fatalf("ffprobe %s: duration %q", url, out)
	}
	return d
}

// lastSequence is the media sequence number of a playlist's last segment.
func lastSequence(t *testing.T, text string) (file string, seq int) {
	t.Helper()
	uris := listedSegment.FindAllStringSubmatch(text, -1)
	if len(uris) == 0 {
		t.Fatalf("no segment listed:\n%s", text)
	}
	last := uris[len(uris)-1]
	seq, _ = strconv.Atoi(last[2])
	return last[1], seq
}

// awaitLog waits until the server has logged want.
func awaitLog(t *testing.T, p *onairtest.Process, want string) {
	t.Helper()
	testload.Poll(t, "the log line "+strconv.Quote(want), func() error {
		if !strings.Contains(p.Logs(), want) {
			return errors.New("not logged yet")
		}
		return nil
	})
}

// TestMediaDiskFull runs a show on a media disk of 5 MB and fills it: the
// publication ends with a clear status, the segment that could not be
// written is never listed, served or archived, a new publish is refused
// before anything is written, the archive waits for room, and once there
// is room again the show is archived whole and a new show goes live.
func TestMediaDiskFull(t *testing.T) {
	requireTools(t, "ffmpeg", "ffprobe")
	data := t.TempDir()
	media := filepath.Join(data, "media")
	mountTmpfs(t, media, "5m")
	// The database stays off the small disk: this test is about media.
	p := onairtest.NewProcess(t, "ONAIR_DATA_DIR="+data, "ONAIR_MEDIA_MIN_FREE_MB=1")
	p.Start()
	b := setup(t, p)
	_, done := publish(t, b.RTMP+"/"+b.Key, 120, false)
	live := b.Await(t, "live", isLive)
	variant := variantOf(t, live["video_url"].(string))
	awaitSegments(t, variant, 4)

	filler := filepath.Join(media, "filler")
	fill(t, filler)
	err := exited(t, "ffmpeg after the disk filled", done)
	if err == nil {
		t.Fatal("ffmpeg ended cleanly; want the publication cut off")
	}
	awaitLog(t, p, "live: media disk full; the publication ends")
	if !strings.Contains(err.Error(), "media disk is full") {
		t.Logf("ffmpeg did not print the server's status (it may have seen the close first): %v", err)
	}
	// Dropping the half-written segment gave back some room: take it too.
	fill(t, filler)

	// What the live playlist lists plays whole, and the segment that
	// failed (the one after the last listed) is not served.
	_, _, text := getText(t, variant)
	checkSegments(t, variant, text)
	file, seq := lastSequence(t, text)
	next := strings.Replace(file, fmt.Sprintf("%06d", seq), fmt.Sprintf("%06d", seq+1), 1)
	if status, _, _ := getText(t, resolve(t, variant, next)); status != http.StatusNotFound {
		t.Errorf("GET %s (the segment that failed to write): %d, want 404", next, status)
	}
	showDir := filepath.Join(media, "shows", strconv.FormatInt(b.ID, 10))
	if _, err := os.Stat(filepath.Join(showDir, next)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s is still on disk (%v)", next, err)
	}

	// A new publish is refused, with a status that says why.
	pub, answer := dialPublisher(t, b.RTMP, b.Key)
	if answer["code"] != "NetStream.Publish.Rejected" || !strings.Contains(fmt.Sprint(answer["description"]), "disk is full") {
		t.Errorf("publish on a full disk answered %v", answer)
	}
	pub.nc.Close()
	awaitLog(t, p, "publish refused: media disk full")

	// Stopped while the disk is full, the show cannot be archived yet;
	// nothing half-written is offered as its archive.
	b.Env.Do("POST", fmt.Sprintf("/v1/shows/%d/stop", b.ID), b.Token, nil).Expect(t, http.StatusOK)
	awaitLog(t, p, "live: finalize archive")
	if s := b.Get(t); s["archive"] == true {
		t.Fatalf("archived on a full disk: %v", s)
	}

	// Room again: the archive goes through, whole.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	s := b.Await(t, "archived", func(s map[string]any) bool { return s["archive"] == true })
	vodVariant := variantOf(t, s["video_url"].(string))
	_, _, vod := getText(t, vodVariant)
	listed := playlistSeconds(vod)
	if !strings.Contains(vod, "#EXT-X-ENDLIST") || !strings.Contains(vod, file) || strings.Contains(vod, next) {
		t.Errorf("archive does not end at %s (without %s):\n%s", file, next, vod)
	}
	if got := probeDuration(t, vodVariant); math.Abs(got-listed) > 1 {
		t.Errorf("archive plays %.2f s; its playlist lists %.2f s", got, listed)
	}
	if d, _ := s["duration"].(float64); math.Abs(d-listed) > 1 {
		t.Errorf("show duration %.2f s; the archive lists %.2f s", d, listed)
	}

	// And a later show goes live on the node.
	r := b.Env.Do("POST", "/v1/shows", b.Token, map[string]any{"name": "After the disk", "description": "room again"})
	if r.Status/100 != 2 {
		t.Fatalf("create show: %d %s", r.Status, r.Body)
	}
	later := r.JSON(t)["show"].(map[string]any)
	_, done = publish(t, b.RTMP+"/"+later["stream_key"].(string), 4, false)
	if err := exited(t, "ffmpeg once the disk has room", done); err != nil {
		t.Fatalf("publish after the disk had room again: %v", err)
	}
	lb := &onairtest.Show{Env: b.Env, Token: b.Token, ID: onairtest.ID(later)}
	if s := lb.Get(t); s["start"] == nil || s["video_url"] == nil {
		t.Errorf("the later show did not go live: %v", s)
	}
}
