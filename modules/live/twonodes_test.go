package live_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/onair/onair/internal/miniotest"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/live/hls"
	"github.com/onair/onair/modules/shows"
)

// TestTwoNodeProcesses is issue 13's deployment with the real binary: two
// `onair serve` processes on one MariaDB database, one Redis and one MinIO
// bucket. A show published to node A plays from node B while live (video
// and audio), a stop sent to B cuts A's publisher off within 2 s, and the
// archive plays from B. A second show: A is killed with SIGKILL mid-show;
// B ends the show after the reconnect window, its archive (what A had
// uploaded) plays from B with that duration, and a delete through B
// empties the show's objects in the bucket.
func TestTwoNodeProcesses(t *testing.T) {
	if os.Getenv(onairtest.MySQLEnv) == "" || os.Getenv(onairtest.RedisEnv) == "" {
		testload.Skip(t, "needs %s and %s (the README's test command sets both)", onairtest.MySQLEnv, onairtest.RedisEnv)
	}
	requireTools(t, "ffmpeg", "ffprobe")
	srv := miniotest.Start(t)
	tag := make([]byte, 4)
	rand.Read(tag)
	name := "nodes-" + hex.EncodeToString(tag)
	bk := bucket(t, srv, name)
	shared := []string{
		"ONAIR_DATABASE_URL=" + onairtest.FreshMySQL(t),
		"ONAIR_REDIS_URL=" + os.Getenv(onairtest.RedisEnv),
		"ONAIR_REDIS_PREFIX=onairtest:" + hex.EncodeToString(tag) + ":",
		"ONAIR_STORAGE_URL=" + srv.URL(name),
		"ONAIR_RECONNECT_WINDOW=3s",
		"ONAIR_LOG_LEVEL=debug",
	}
	ropts, err := redis.ParseURL(os.Getenv(onairtest.RedisEnv))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		rdb := redis.NewClient(ropts)
		defer rdb.Close()
		rdb.Del(context.Background(), "onairtest:"+hex.EncodeToString(tag)+":"+shows.EventsStream)
	})
	a := onairtest.NewProcess(t, shared...)
	a.Start()
	b := onairtest.NewProcess(t, shared...)
	b.Start()
	a.Run("users", "create", "--name", "Two Nodes", "--email", "nodes@example.com")
	token := strings.TrimSpace(a.Run("tokens", "create", "--user", "nodes@example.com"))
	envB := b.Client()
	// Each process has its own ONAIR_PUBLIC_URL here (a load balancer's
	// in production): a URL node A wrote is asked of node B by its path.
	onB := func(u string) string { return b.URL + u[strings.Index(u, "/media/"):] }
	newShow := func(title string) *onairtest.Show {
		sh := onairtest.CreateShow(t, envB, token, map[string]any{"name": title, "description": "two nodes"})
		// Read back through node B: every later look is B's.
		return &onairtest.Show{Env: envB, Token: token, ID: sh.ID, Key: sh.Key, RTMP: "rtmp://" + a.RTMP + "/live"}
	}

	// Show 1: published to A, played from B, stopped through B.
	one := newShow("Across The Nodes")
	_, done := publish(t, one.RTMP+"/"+one.Key, 120, false)
	live := one.Await(t, "live", isLive)
	videoB, audioB := onB(live["video_url"].(string)), onB(live["audio_url"].(string))
	awaitSegments(t, videoB, 2)
	awaitSegments(t, audioB, 2)
	if got := ffprobe(t, videoB); got != "aac,h264" {
		t.Errorf("live video through B: %q", got)
	}
	if got := ffprobe(t, audioB); got != "aac" {
		t.Errorf("live audio through B: %q", got)
	}
	// What forwarding adds to a playlist request (docs/deploy.md).
	direct, through := medianLatency(t, live["video_url"].(string)), medianLatency(t, videoB)
	t.Logf("live playlist, median of 200 requests: %s from A, %s through B (+%s)", direct, through, through-direct)
	sent := time.Now()
	envB.Do("POST", fmt.Sprintf("/v1/shows/%d/stop", one.ID), token, nil).Expect(t, http.StatusOK)
	select {
	case <-done:
		if took := time.Since(sent); took > 2*time.Second {
			t.Errorf("A's publisher was cut %s after the stop sent to B", took)
		}
	case <-time.After(testload.Patience):
		t.Fatalf("A's publisher still streams %s after the stop sent to B", testload.Patience)
	}
	archived := one.Await(t, "archived", func(s map[string]any) bool { return s["archive"] == true })
	if got := ffprobe(t, onB(archived["video_url"].(string))); got != "aac,h264" {
		t.Errorf("archived video from B: %q", got)
	}
	if got := ffprobe(t, onB(archived["audio_url"].(string))); got != "aac" {
		t.Errorf("archived audio from B: %q", got)
	}
	if n := strings.Count(a.Logs(), "show archived") + strings.Count(b.Logs(), "show archived"); n != 1 {
		t.Errorf("the show was archived %d times across the nodes", n)
	}

	// Show 2: node A dies mid-show; B ends it and serves its archive.
	two := newShow("Node Down")
	_, done = publish(t, two.RTMP+"/"+two.Key, 120, false)
	two.Await(t, "live", isLive)
	testload.Poll(t, "4 s of show 2 in the bucket", func() error {
		if _, span := hls.Span(storedIndex(t, bk, two.ID)); span < 4*time.Second {
			return fmt.Errorf("%s stored", span)
		}
		return nil
	})
	a.Kill()
	killed := time.Now()
	exited(t, "ffmpeg after node A was killed", done)
	segs := storedIndex(t, bk, two.ID)
	_, span := hls.Span(segs)
	ended := two.Await(t, "archived by node B", func(s map[string]any) bool { return s["archive"] == true })
	t.Logf("show ended and archived by B %s after A was killed", time.Since(killed).Round(time.Second))
	if !strings.Contains(b.Logs(), "live show lost its node") {
		t.Errorf("node B's janitor did not notice the show lost its node")
	}
	if d := ended["duration"].(float64); d != span.Round(time.Second).Seconds() {
		t.Errorf("duration %v s, the bucket holds %s", d, span)
	}
	_, _, vod := fetch(t, onB(ended["video_url"].(string)))
	if n := strings.Count(vod, "#EXTINF"); n != countRendition(segs, hls.RenditionAV) {
		t.Errorf("archive lists %d segments, the bucket %d:\n%s", n, countRendition(segs, hls.RenditionAV), vod)
	}
	if got := ffprobe(t, onB(ended["video_url"].(string))); got != "aac,h264" {
		t.Errorf("archive of the lost node's show from B: %q", got)
	}

	// A delete through B removes the show's objects.
	prefix := fmt.Sprintf("shows/%d/", two.ID)
	if len(keysOf(t, bk, prefix)) == 0 {
		t.Fatalf("no objects under %s before the delete", prefix)
	}
	envB.Do("DELETE", fmt.Sprintf("/v1/shows/%d", two.ID), token, nil).Expect(t, http.StatusOK)
	testload.Poll(t, "show 2's objects removed", func() error {
		if keys := keysOf(t, bk, prefix); len(keys) > 0 {
			return fmt.Errorf("%d objects left: %v", len(keys), keys)
		}
		return nil
	})
}
