package live_test

import (
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/live"
)

var (
	canSkip  = regexp.MustCompile(`(?m)^#EXT-X-SERVER-CONTROL:.*CAN-SKIP-UNTIL=([0-9.]+)`)
	skipLine = regexp.MustCompile(`(?m)^#EXT-X-SKIP:SKIPPED-SEGMENTS=(\d+)$`)
)

// segmentsOf lists a playlist's segment URIs.
func segmentsOf(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, line)
		}
	}
	return out
}

// TestDVR publishes three shows for 40 s with ffmpeg, one per
// ONAIR_DVR_WINDOW: by default (4 h), 30 s into the show its live
// playlists (video and audio-only) still start at its first segment,
// which is still served though out of memory, offer CAN-SKIP-UNTIL, and
// answer _HLS_skip=YES (with a blocking reload too) with a smaller delta
// update whose segments are the tail of the full playlist; with 0 the
// playlist is the short sliding window as before, without delta updates;
// with 20 s the oldest segments leave.
func TestDVR(t *testing.T) {
	requireTools(t, "ffmpeg")
	type setup struct {
		name   string
		window time.Duration
		b      *onairtest.Show
		mod    *live.Module
		done   <-chan error
	}
	setups := []*setup{{name: "default"}, {name: "off", window: 0}, {name: "20s", window: 20 * time.Second}}
	for _, s := range setups {
		opts := onairtest.Options{}
		if s.name != "default" {
			opts.Configure = func(c *app.Config) { c.Set(live.SettingDVRWindow, s.window) }
		}
		env := onairtest.New(t, opts)
		_, token := env.CreateUser("DVR " + s.name)
		s.b = onairtest.CreateShow(t, env, token, nil)
		s.mod, _ = onairtest.Module[*live.Module](env)
	}
	for _, s := range setups {
		_, s.done = publish(t, s.b.RTMP+"/"+s.b.Key, 45, false)
	}
	for _, s := range setups {
		s.b.Await(t, "live", isLive)
	}
	base := func(s *setup) string { return fmt.Sprintf("%s/media/shows/%d/", s.b.Env.URL, s.b.ID) }
	// 30 s into each show: its 15th segment (2 s each) is listed.
	for _, s := range setups {
		for _, list := range []string{"index.m3u8", "audio.m3u8"} {
			testload.Poll(t, "30 s of "+s.name+" "+list, func() error {
				status, _, text := getText(t, base(s)+list)
				if seg, _, _ := newestOf(t, text); status != http.StatusOK || seg < 15 {
					return fmt.Errorf("status %d:\n%s", status, text)
				}
				return nil
			})
		}
	}

	t.Run("the default window reaches back to the first segment", func(t *testing.T) {
		s := setups[0]
		for _, list := range []string{"index.m3u8", "audio.m3u8"} {
			_, _, full := getText(t, base(s)+list)
			uris := segmentsOf(full)
			if n := mediaSequence(full); n != 0 || len(uris) == 0 || !strings.HasSuffix(uris[0], "-000000.ts") {
				t.Fatalf("%s starts at media sequence %d with %v, want 0 and the first segment:\n%s", list, n, uris[:1], full)
			}
			if secs := playlistSeconds(full); secs < 30 {
				t.Errorf("%s lists %.1f s, want the 30 s of the show", list, secs)
			}
			if m := canSkip.FindStringSubmatch(full); m == nil {
				t.Errorf("%s offers no CAN-SKIP-UNTIL:\n%s", list, full)
			} else if v, _ := strconv.ParseFloat(m[1], 64); v < 12 {
				t.Errorf("CAN-SKIP-UNTIL=%s, under 6 target durations", m[1])
			}
			// The first segment left memory and is served from disk.
			if s.mod.InMemory(s.b.ID, uris[0]) {
				t.Errorf("%s: the first segment %s is still in memory", list, uris[0])
			}
			if !s.mod.InMemory(s.b.ID, uris[len(uris)-1]) {
				t.Errorf("%s: the newest segment %s is not in memory", list, uris[len(uris)-1])
			}
			status, h, body := getText(t, base(s)+uris[0])
			if status != http.StatusOK || h.Get("Content-Type") != "video/mp2t" || len(body) < 1000 {
				t.Errorf("%s: the first segment answers %d %s, %d bytes", list, status, h.Get("Content-Type"), len(body))
			}

			status, h, delta := getText(t, base(s)+list+"?_HLS_skip=YES")
			m := skipLine.FindStringSubmatch(delta)
			if status != http.StatusOK || m == nil || h.Get("Content-Type") != "application/vnd.apple.mpegurl" {
				t.Fatalf("%s?_HLS_skip=YES: %d, no EXT-X-SKIP:\n%s", list, status, delta)
			}
			skipped, _ := strconv.Atoi(m[1])
			kept := segmentsOf(delta)
			// A segment may have been finished between the two requests.
			if mediaSequence(delta) != 0 || skipped < 1 || len(kept) < len(uris)-skipped ||
				strings.Join(kept[:len(uris)-skipped], ",") != strings.Join(uris[skipped:], ",") {
				t.Errorf("%s: the delta skips %d and keeps %v; the full playlist lists %v", list, skipped, kept, uris)
			}
			// Each skipped segment is three lines of the full playlist
			// (program date time, EXTINF, URI): 60 bytes and more.
			if len(delta) > len(full)-60*skipped+40 {
				t.Errorf("%s: the delta update is %d bytes, the full playlist %d", list, len(delta), len(full))
			}
			t.Logf("%s: %d segments, %d bytes; the delta update skips %d: %d bytes", list, len(uris), len(full), skipped, len(delta))

			// A blocking reload for the next segment, as a delta.
			last, _ := strconv.Atoi(strings.TrimSuffix(uris[len(uris)-1][strings.LastIndex(uris[len(uris)-1], "-")+1:], ".ts"))
			status, _, blocked := getText(t, fmt.Sprintf("%s%s?_HLS_msn=%d&_HLS_skip=YES", base(s), list, last+1))
			if status != http.StatusOK || !skipLine.MatchString(blocked) || !strings.Contains(blocked, fmt.Sprintf("-%06d.ts\n", last+1)) {
				t.Errorf("%s: blocking delta reload for %d: %d\n%s", list, last+1, status, blocked)
			}
		}
		if status, _, body := getText(t, base(s)+"index.m3u8?_HLS_skip=maybe"); status != http.StatusBadRequest {
			t.Errorf("_HLS_skip=maybe: %d %s", status, body)
		}
	})

	t.Run("ONAIR_DVR_WINDOW=0 keeps the short window", func(t *testing.T) {
		s := setups[1]
		for _, list := range []string{"index.m3u8", "audio.m3u8"} {
			_, _, full := getText(t, base(s)+list)
			if n := mediaSequence(full); n == 0 || canSkip.MatchString(full) || playlistSeconds(full) > 18 {
				t.Errorf("%s: media sequence %d, %.1f s listed, CAN-SKIP-UNTIL %v; want the 12 s window:\n%s", list, n, playlistSeconds(full), canSkip.MatchString(full), full)
			}
			if _, _, delta := getText(t, base(s)+list+"?_HLS_skip=YES"); skipLine.MatchString(delta) {
				t.Errorf("%s: a delta update without DVR:\n%s", list, delta)
			}
		}
	})

	t.Run("a window shorter than the show drops the oldest", func(t *testing.T) {
		s := setups[2]
		_, _, full := getText(t, base(s)+"index.m3u8")
		uris := segmentsOf(full)
		first, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(uris[0], "seg-"), ".ts"))
		if n := mediaSequence(full); n == 0 || n != first || playlistSeconds(full) < 20 || playlistSeconds(full) > 26 {
			t.Errorf("media sequence %d from %s, %.1f s listed; want the last 20 s:\n%s", n, uris[0], playlistSeconds(full), full)
		}
	})
	for _, s := range setups {
		s.b.Env.Do("POST", fmt.Sprintf("/v1/shows/%d/stop", s.b.ID), s.b.Token, nil)
		exited(t, "ffmpeg "+s.name, s.done)
	}
}
