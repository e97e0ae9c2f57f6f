package live_test

import (
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/faulttest"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/live"
	"github.com/onair/onair/modules/shows"
)

// unavailableWithin is how long an API request may take to answer while
// the database is away: a refused connection is known at once, so far
// less than the request deadline (30 s).
const unavailableWithin = 10 * time.Second

// expectUnavailable checks that an API request answers 503 with
// Retry-After and code "unavailable", and does so promptly.
func expectUnavailable(t *testing.T, env *onairtest.Env, method, path, token string, body any) {
	t.Helper()
	began := time.Now()
	r := env.Do(method, path, token, body)
	took := time.Since(began)
	if r.Status != http.StatusServiceUnavailable || r.ErrorCode(t) != "unavailable" || r.Header.Get("Retry-After") == "" {
		t.Errorf("%s %s with the database away: %d %s (Retry-After %q), want 503 unavailable with Retry-After",
			method, path, r.Status, r.Body, r.Header.Get("Retry-After"))
	}
	if took > unavailableWithin {
		t.Errorf("%s %s with the database away took %s", method, path, took)
	}
}

// TestDatabaseAwayMidShow takes the show's MariaDB away between the
// publisher's admission and its first segment, and brings it back after
// the publisher has left. Meanwhile the publisher keeps streaming and its
// segments keep appearing in the live playlist, the API answers 503
// unavailable with Retry-After at once, and /readyz names the database.
// When the database returns, the show's state catches up in order (it
// goes live, its publisher leaves, the reconnect window ends it) and its
// archive holds every second that was sent.
func TestDatabaseAwayMidShow(t *testing.T) {
	requireTools(t, "ffmpeg")
	db := faulttest.StartMariaDB(t)
	env := onairtest.New(t, onairtest.Options{DatabaseURL: db.URL(), Configure: func(c *app.Config) {
		c.Set(shows.SettingReconnectWindow, 3*time.Second)
	}})
	_, token := env.CreateUser("Away Database")
	b := onairtest.CreateShow(t, env, token, nil)
	m, _ := onairtest.Module[*live.Module](env)

	const seconds = 24
	_, done := publish(t, b.RTMP+"/"+b.Key, seconds, false)
	// Admitted (the key was checked against the database): now the
	// database goes, before the first segment (2 s of media) is cut.
	testload.Poll(t, "the publisher admitted", func() error {
		if m.Streams() != 1 {
			return fmt.Errorf("%d publishers", m.Streams())
		}
		return nil
	})
	db.Kill()
	// A failure below ends the test with the database away: it comes
	// back before the server is shut down.
	t.Cleanup(func() {
		if !db.Running() {
			db.Start()
		}
	})

	// The playlist is the one the show would announce; the media routes
	// keep answering from what they knew of the show.
	master := fmt.Sprintf("%s/media/shows/%d/master.m3u8", env.URL, b.ID)
	var text string
	testload.Poll(t, "the master playlist", func() error {
		var status int
		if status, _, text = getText(t, master); status != http.StatusOK {
			return fmt.Errorf("status %d: %s", status, text)
		}
		return nil
	})
	variant := firstVariant(t, master, text)
	awaitSegments(t, variant, 6)

	show := fmt.Sprintf("/v1/shows/%d", b.ID)
	expectUnavailable(t, env, "GET", show, token, nil)
	expectUnavailable(t, env, "POST", "/v1/shows", token, map[string]any{"name": "While Away", "description": "no database"})
	expectUnavailable(t, env, "POST", show+"/stop", token, nil)
	r := env.Do("GET", "/readyz", "", nil)
	if r.Status != http.StatusServiceUnavailable || r.JSON(t)["checks"].(map[string]any)["database"] != "unavailable" {
		t.Errorf("/readyz with the database away: %d %s", r.Status, r.Body)
	}

	if err := exited(t, "ffmpeg", done); err != nil {
		t.Fatalf("the publisher was cut off while the database was away: %v", err)
	}
	// The live window slides: its last segment (2 s each, numbered from
	// 0) says how far the recording went while the database was away.
	testload.Poll(t, "the last segments in the live playlist", func() error {
		_, _, text := getText(t, variant)
		last := mediaSequence(text) + strings.Count(text, "#EXTINF:") - 1
		if last < seconds/2-2 {
			return fmt.Errorf("last segment %d of about %d:\n%s", last, seconds/2, text)
		}
		return nil
	})

	db.Start()
	s := b.Await(t, "archived", func(s map[string]any) bool { return s["archive"] == true })
	if s["complete"] != true || s["start"] == nil {
		t.Errorf("show after the database returned: %v", s)
	}
	if d, _ := s["duration"].(float64); math.Abs(d-seconds) > 1 {
		t.Errorf("archived duration %v s, published %d s", s["duration"], seconds)
	}
	_, _, vod := fetch(t, s["video_url"].(string))
	if d := playlistSeconds(vod); math.Abs(d-seconds) > 1 {
		t.Errorf("archive lasts %.2f s, published %d s:\n%s", d, seconds, vod)
	}
	// Going live waited for the database (logged once when it began and
	// once when it ended); the publisher's leave waited behind it, in
	// order, and found the database back.
	logs := env.Logs()
	waits := strings.Count(logs, "the database does not answer; the show's state will be written when it does")
	if waits != 1 || !strings.Contains(logs, `write="go live" err=`) {
		t.Errorf("%d log lines of a state write waiting for the database, want 1 (going live)", waits)
	}
	if n := strings.Count(logs, "the database answers again"); n != 1 {
		t.Errorf("%d log lines of state written after the database returned, want 1", n)
	}
}
