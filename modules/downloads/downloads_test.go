package downloads_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/broadcasttest"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/downloads"
)

// probe is what ffprobe reads of a file at a URL: its streams' codecs
// and the duration it decodes.
type probe struct {
	Streams []struct {
		CodecType string `json:"codec_type"`
		CodecName string `json:"codec_name"`
	} `json:"streams"`
	Format struct {
		FormatName string `json:"format_name"`
		Duration   string `json:"duration"`
	} `json:"format"`
}

func ffprobe(t *testing.T, url string) probe {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testload.Patience)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ffprobe", "-v", "error", "-show_streams", "-show_format", "-of", "json", url).Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v", url, err)
	}
	var p probe
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p probe) codecs() string {
	var names []string
	for _, s := range p.Streams {
		names = append(names, s.CodecType+":"+s.CodecName)
	}
	return strings.Join(names, ",")
}

func (p probe) seconds() float64 {
	d, _ := strconv.ParseFloat(p.Format.Duration, 64)
	return d
}

// get fetches url with an optional Range header.
func get(t *testing.T, url, rng string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if rng != "" {
		req.Header.Set("Range", rng)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, body
}

// awaitFile waits until the file at url is made (503 while it is).
func awaitFile(t *testing.T, url string) *http.Response {
	t.Helper()
	var resp *http.Response
	testload.Poll(t, "download "+url, func() error {
		var body []byte
		resp, body = get(t, url, "")
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%d %s", resp.StatusCode, body)
		}
		return nil
	})
	return resp
}

// TestDownloads: an archived video show offers its audio as M4A and its
// video as MP4, each decoding for the show's duration, served with its
// type, a Content-Disposition named after the show and byte ranges; the
// owner's downloadable=false takes them away.
func TestDownloads(t *testing.T) {
	broadcasttest.Require(t)
	env := onairtest.New(t, onairtest.Options{})
	_, token := env.CreateUser("Dee Jay")
	b := onairtest.CreateShow(t, env, token, map[string]any{"name": "Night/Drive: Ünïcode"})
	const seconds = 6
	s := broadcasttest.Archive(t, b, seconds, false)
	if s["downloadable"] != true {
		t.Fatalf("downloadable is not on by default: %v", s)
	}
	d, ok := s["downloads"].(map[string]any)
	if !ok || d["audio"] == nil || d["video"] == nil {
		t.Fatalf("downloads of an archived video show: %v", s["downloads"])
	}
	duration := s["duration"].(float64)
	for _, f := range []struct {
		url, ctype, codecs, ext string
	}{
		{d["audio"].(string), "audio/mp4", "audio:aac", ".m4a"},
		{d["video"].(string), "video/mp4", "video:h264,audio:aac", ".mp4"},
	} {
		resp := awaitFile(t, f.url)
		if got := resp.Header.Get("Content-Type"); got != f.ctype {
			t.Errorf("%s: Content-Type %q, want %q", f.url, got, f.ctype)
		}
		if cd := resp.Header.Get("Content-Disposition"); !strings.HasPrefix(cd, "attachment;") || !strings.Contains(cd, f.ext) ||
			!strings.Contains(cd, "Night Drive") {
			t.Errorf("%s: Content-Disposition %q", f.url, cd)
		}
		p := ffprobe(t, f.url)
		if p.codecs() != f.codecs || !strings.Contains(p.Format.FormatName, "mp4") {
			t.Errorf("%s: %s in %s, want %s in MP4", f.url, p.codecs(), p.Format.FormatName, f.codecs)
		}
		if got := p.seconds(); math.Abs(got-duration) > 1.5 {
			t.Errorf("%s decodes for %.2f s; the show lasted %v s", f.url, got, duration)
		}
		size, _ := strconv.Atoi(resp.Header.Get("Content-Length"))
		part, body := get(t, f.url, "bytes=100-199")
		if part.StatusCode != http.StatusPartialContent || len(body) != 100 ||
			part.Header.Get("Content-Range") != fmt.Sprintf("bytes 100-199/%d", size) {
			t.Errorf("%s: range answered %d %q with %d bytes", f.url, part.StatusCode, part.Header.Get("Content-Range"), len(body))
		}
		if past, _ := get(t, f.url, fmt.Sprintf("bytes=%d-", size)); past.StatusCode != http.StatusRequestedRangeNotSatisfiable {
			t.Errorf("%s: a range past the end answered %d", f.url, past.StatusCode)
		}
	}

	// The owner turns downloads off: the show offers none, the files are
	// not served.
	off := env.Do("PUT", fmt.Sprintf("/v1/shows/%d", b.ID), token, map[string]any{"downloadable": false}).Expect(t, http.StatusOK).JSON(t)["show"].(map[string]any)
	if off["downloadable"] != false || off["downloads"] != nil {
		t.Fatalf("downloads after downloadable=false: %v %v", off["downloadable"], off["downloads"])
	}
	if resp, _ := get(t, d["audio"].(string), ""); resp.StatusCode != http.StatusNotFound {
		t.Errorf("audio after downloadable=false: %d", resp.StatusCode)
	}
	if r := env.Do("PUT", fmt.Sprintf("/v1/shows/%d", b.ID), token, map[string]any{"downloadable": "maybe"}); r.Status != http.StatusBadRequest {
		t.Errorf("downloadable=maybe: %d %s", r.Status, r.Body)
	}
}

// TestPrivateAudioDownload: an audio-only private show offers audio only,
// at a signed link; the same file without the token is not served.
func TestPrivateAudioDownload(t *testing.T) {
	broadcasttest.Require(t)
	env := onairtest.New(t, onairtest.Options{})
	_, token := env.CreateUser("Radio Head")
	b := onairtest.CreateShow(t, env, token, map[string]any{"private": true, "audio_only": true})
	s := broadcasttest.Archive(t, b, 5, true)
	d, ok := s["downloads"].(map[string]any)
	if !ok || d["video"] != nil {
		t.Fatalf("downloads of an audio show: %v", s["downloads"])
	}
	audio := d["audio"].(string)
	if !strings.Contains(audio, "/t/") {
		t.Fatalf("a private show's download is not signed: %s", audio)
	}
	awaitFile(t, audio)
	if got := ffprobe(t, audio).codecs(); got != "audio:aac" {
		t.Errorf("audio streams %q", got)
	}
	plain := fmt.Sprintf("%s/downloads/shows/%d/%s", env.URL, b.ID, downloads.AudioFile)
	if resp, _ := get(t, plain, ""); resp.StatusCode != http.StatusNotFound {
		t.Errorf("a private show's audio without a token: %d", resp.StatusCode)
	}
	forged := strings.Replace(audio, "/t/", "/t/1", 1)
	if resp, _ := get(t, forged, ""); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a forged token: %d", resp.StatusCode)
	}
	if resp, _ := get(t, fmt.Sprintf("%s/downloads/shows/%d/../../etc.m4a", env.URL, b.ID), ""); resp.StatusCode != http.StatusNotFound {
		t.Errorf("another file name: %d", resp.StatusCode)
	}
}

// TestVideoOnlyDownload: a show archived without audio offers its video
// alone; the audio file is not served.
func TestVideoOnlyDownload(t *testing.T) {
	broadcasttest.Require(t)
	env := onairtest.New(t, onairtest.Options{})
	_, token := env.CreateUser("Silent Film")
	b := onairtest.CreateShow(t, env, token, map[string]any{"name": "No Sound"})
	s := broadcasttest.ArchiveMedia(t, b, 5, broadcasttest.VideoOnly)
	d, ok := s["downloads"].(map[string]any)
	if !ok || d["video"] == nil || d["audio"] != nil || s["audio_url"] != nil {
		t.Fatalf("downloads of a video-only show: %v (audio_url %v)", s["downloads"], s["audio_url"])
	}
	video := d["video"].(string)
	awaitFile(t, video)
	p := ffprobe(t, video)
	if p.codecs() != "video:h264" || math.Abs(p.seconds()-s["duration"].(float64)) > 1.5 {
		t.Errorf("video: %s for %.2f s; the show lasted %v s", p.codecs(), p.seconds(), s["duration"])
	}
	audio := fmt.Sprintf("%s/downloads/shows/%d/%s", env.URL, b.ID, downloads.AudioFile)
	if resp, _ := get(t, audio, ""); resp.StatusCode != http.StatusNotFound {
		t.Errorf("the audio of a video-only show: %d", resp.StatusCode)
	}
}

func TestDisposition(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"Night Drive", `attachment; filename="Night Drive.m4a"`},
		{`a/b\c:"d"`, `attachment; filename="a b c d.m4a"`},
		{"...", `attachment; filename="show-7.m4a"`},
		{"Café (live), 1=1", `attachment; filename="Caf_ (live), 1=1.m4a"; filename*=UTF-8''Caf%C3%A9%20%28live%29%2C%201%3D1.m4a`},
		{"Ünï set", `attachment; filename="_n_ set.m4a"; filename*=UTF-8''%C3%9Cn%C3%AF%20set.m4a`},
	} {
		if got := downloads.Disposition(tc.name, 7, downloads.AudioFile); got != tc.want {
			t.Errorf("Disposition(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestDownloadsOff: with ONAIR_DOWNLOADS=false an archived show offers
// no downloads, its files made before are not served and no file is made.
func TestDownloadsOff(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{Configure: func(c *app.Config) { c.Set(downloads.SettingEnabled, false) }})
	_, token := env.CreateUser("Quiet Station")
	b := onairtest.CreateShow(t, env, token, map[string]any{"name": "Kept Close"})
	ctx := context.Background()
	// Archived with a recording, and files made before downloads went off.
	if _, err := env.Core.DB.NewUpdate().Table("shows").Set("archive = ?, audio_url = ?", true, "/media/shows/1/archive_audio.m3u8").
		Where("id = ?", b.ID).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Core.DB.NewInsert().Model(&downloads.File{ShowID: b.ID, Ready: true, AudioSize: 10, UpdatedAt: time.Now()}).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	s := env.Do("GET", fmt.Sprintf("/v1/shows/%d", b.ID), token, nil).Expect(t, http.StatusOK).JSON(t)["show"].(map[string]any)
	if s["archive"] != true || s["downloads"] != nil {
		t.Fatalf("downloads of an archived show with downloads off: archive %v, downloads %v", s["archive"], s["downloads"])
	}
	if resp, _ := get(t, fmt.Sprintf("%s/downloads/shows/%d/%s", env.URL, b.ID, downloads.AudioFile), ""); resp.StatusCode != http.StatusNotFound {
		t.Errorf("a file with downloads off: %d", resp.StatusCode)
	}
	m, _ := onairtest.Module[*downloads.Module](env)
	if ready, err := m.Ready(ctx, []int64{b.ID}); err != nil || len(ready) != 0 {
		t.Errorf("Ready with downloads off: %v %v", ready, err)
	}
}

// TestFailedMakeCounted: a show whose files cannot be made (archived
// without a recording) has its failures counted on either database, so the
// sweep gives up on it after maxAttempts instead of retrying for ever.
func TestFailedMakeCounted(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env := onairtest.New(t, onairtest.Options{Backend: backend})
		_, token := env.CreateUser("Mute Button")
		b := onairtest.CreateShow(t, env, token, map[string]any{"name": "No Sound"})
		m, _ := onairtest.Module[*downloads.Module](env)
		// Archived as far as the database says, with no recording at all.
		if _, err := env.Core.DB.NewUpdate().Table("shows").Set("archive = ?", true).Where("id = ?", b.ID).Exec(context.Background()); err != nil {
			t.Fatal(err)
		}
		for want := 1; want <= 2; want++ {
			m.MakeLogged(context.Background(), b.ID)
			var f downloads.File
			if err := env.Core.DB.NewSelect().Model(&f).Where("show_id = ?", b.ID).Scan(context.Background()); err != nil {
				t.Fatalf("attempt %d not recorded: %v", want, err)
			}
			if f.Attempts != want || f.Ready {
				t.Errorf("after %d failed makes: attempts %d, ready %v", want, f.Attempts, f.Ready)
			}
		}
	})
}

// TestDeletedWhileMade: a show deleted while its files are made, after the
// live module removed its media and before a file reaches the store,
// keeps nothing in the store and no row, whether that file is then
// stored (it is removed once stored) or fails to be (as when the removal
// takes the file being written; no failure row is recorded). The old
// code left shows/{id}/downloads/ behind, a failure row, and the row of
// every deleted show.
func TestDeletedWhileMade(t *testing.T) {
	broadcasttest.Require(t)
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env := onairtest.New(t, onairtest.Options{Backend: backend})
		m := quiet(t, env)
		m.DropEvents(true) // only the test makes the files
		_, token := env.CreateUser("Gone Soon")
		ctx := context.Background()
		for _, storeErr := range []error{nil, errors.New("the disk went away")} {
			b := onairtest.CreateShow(t, env, token, nil)
			broadcasttest.Archive(t, b, 4, false)
			prefix := fmt.Sprintf("shows/%d/", b.ID)
			deleted := 0
			m.BeforeStore(func(id int64) error {
				if deleted++; deleted > 1 {
					return nil
				}
				env.Do("DELETE", fmt.Sprintf("/v1/shows/%d", id), token, nil).Expect(t, http.StatusOK)
				// The removal done: no object, no working directory.
				dir := filepath.Join(env.Core.Config.DataDir, "media", "shows", strconv.FormatInt(id, 10))
				testload.Poll(t, "the live module to remove the show's media", func() error {
					left, err := env.Core.Store.List(ctx, prefix)
					if err != nil || len(left) > 0 {
						return fmt.Errorf("%d objects left (%v)", len(left), err)
					}
					if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
						return fmt.Errorf("%s: %v", dir, err)
					}
					return nil
				})
				return storeErr
			})
			m.MakeLogged(ctx, b.ID)
			m.BeforeStore(nil)
			if deleted == 0 {
				t.Fatal("no file was stored: the test deleted nothing")
			}
			left, err := env.Core.Store.List(ctx, prefix)
			if err != nil {
				t.Fatal(err)
			}
			if len(left) > 0 {
				t.Errorf("store error %v: the deleted show's objects left in the store: %v", storeErr, left)
			}
			if f, ok := file(t, env, b.ID); ok {
				t.Errorf("store error %v: the deleted show's downloads row left: %+v", storeErr, f)
			}
		}

		// A show deleted with its row there (a failed try recorded)
		// takes the row in its own transaction.
		bare := archiveBare(t, env, token)
		m.MakeLogged(ctx, bare)
		if f, ok := file(t, env, bare); !ok || f.Attempts != 1 {
			t.Fatalf("a show without a recording: row %+v (%v), want one failed try", f, ok)
		}
		env.Do("DELETE", fmt.Sprintf("/v1/shows/%d", bare), token, nil).Expect(t, http.StatusOK)
		if f, ok := file(t, env, bare); ok {
			t.Errorf("a deleted show's downloads row left: %+v", f)
		}
	})
}
