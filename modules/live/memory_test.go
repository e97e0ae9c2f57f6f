package live_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/live"
	"github.com/onair/onair/modules/shows"
)

func request(t *testing.T, method, url string, header map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

// TestLiveEdgeFromMemory: the live playlists and the segments they list
// are served from memory with the validators, ranges and HEAD answers of
// the files on disk; a show made private while it is played answers 404
// on its public URLs right after the change (its signed URLs still work),
// public again 200; once stopped and archived, the live playlist served is
// the ended one on disk.
func TestLiveEdgeFromMemory(t *testing.T) {
	requireTools(t, "ffmpeg")
	env := onairtest.New(t, onairtest.Options{})
	_, token := env.CreateUser("Mem Ory")
	b := onairtest.CreateShow(t, env, token, nil)
	_, done := publish(t, b.RTMP+"/"+b.Key, 60, false)
	b.Await(t, "live", isLive)
	m, _ := onairtest.Module[*live.Module](env)
	base := fmt.Sprintf("%s/media/shows/%d/", env.URL, b.ID)
	awaitSegments(t, base+"index.m3u8", 2)
	seg := strings.TrimPrefix(lastSegment(t, base+"index.m3u8"), base)
	for _, f := range []string{"index.m3u8", "audio.m3u8", "master.m3u8", seg} {
		if !m.InMemory(b.ID, f) {
			t.Errorf("%s is not in memory", f)
		}
	}

	// A segment: the bytes, ETag and Last-Modified of its file.
	path := filepath.Join(env.Core.Config.DataDir, "media", "shows", strconv.FormatInt(b.ID, 10), seg)
	disk, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	resp, body := request(t, "GET", base+seg, nil)
	etag := resp.Header.Get("ETag")
	if resp.StatusCode != 200 || body != string(disk) || etag == "" ||
		resp.Header.Get("Last-Modified") != fi.ModTime().UTC().Format(http.TimeFormat) ||
		resp.Header.Get("Content-Type") != "video/mp2t" || resp.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" ||
		resp.Header.Get("Access-Control-Allow-Origin") != "*" || resp.Header.Get("Accept-Ranges") != "bytes" {
		t.Fatalf("GET %s: %d, %d bytes (%d on disk), headers %v", seg, resp.StatusCode, len(body), len(disk), resp.Header)
	}
	if resp, _ := request(t, "GET", base+seg, map[string]string{"If-None-Match": etag}); resp.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match: %d", resp.StatusCode)
	}
	if resp, body := request(t, "GET", base+seg, map[string]string{"Range": "bytes=10-19"}); resp.StatusCode != http.StatusPartialContent ||
		body != string(disk[10:20]) || resp.Header.Get("Content-Range") != fmt.Sprintf("bytes 10-19/%d", len(disk)) {
		t.Errorf("Range: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	if resp, body := request(t, "GET", base+seg, map[string]string{"Range": "bytes=-5", "If-Range": etag}); resp.StatusCode != http.StatusPartialContent || body != string(disk[len(disk)-5:]) {
		t.Errorf("suffix Range with If-Range: %d %q", resp.StatusCode, body)
	}
	if resp, _ := request(t, "GET", base+seg, map[string]string{"Range": fmt.Sprintf("bytes=%d-", len(disk))}); resp.StatusCode != http.StatusRequestedRangeNotSatisfiable ||
		resp.Header.Get("Content-Range") != fmt.Sprintf("bytes */%d", len(disk)) {
		t.Errorf("Range past the end: %d %v", resp.StatusCode, resp.Header)
	}
	if resp, body := request(t, "HEAD", base+seg, nil); resp.StatusCode != 200 || body != "" || resp.ContentLength != int64(len(disk)) {
		t.Errorf("HEAD: %d, Content-Length %d, body %d bytes", resp.StatusCode, resp.ContentLength, len(body))
	}
	// The live playlist: revalidated on every poll, with an ETag.
	resp, body = request(t, "GET", base+"index.m3u8", nil)
	if resp.StatusCode != 200 || resp.Header.Get("Cache-Control") != "no-cache" || resp.Header.Get("ETag") == "" ||
		resp.Header.Get("Content-Type") != "application/vnd.apple.mpegurl" || !strings.Contains(body, "#EXTINF:") {
		t.Errorf("live playlist: %d %v\n%s", resp.StatusCode, resp.Header, body)
	}

	// Made private while played: the public URLs are gone at once.
	b.Env.Do("PUT", fmt.Sprintf("/v1/shows/%d", b.ID), token, map[string]any{"private": true}).Expect(t, http.StatusOK)
	for _, f := range []string{"index.m3u8", "master.m3u8", seg} {
		if status, _, _ := getText(t, base+f); status != http.StatusNotFound {
			t.Errorf("%s of a show just made private: %d", f, status)
		}
	}
	signed := b.Get(t)["video_url"].(string)
	if status, _, text := fetch(t, signed); status != 200 || !strings.Contains(text, "#EXTINF:") {
		t.Errorf("signed playlist of the private show: %d", status)
	}
	b.Env.Do("PUT", fmt.Sprintf("/v1/shows/%d", b.ID), token, map[string]any{"private": false}).Expect(t, http.StatusOK)
	if status, _, _ := getText(t, base+seg); status != 200 {
		t.Errorf("segment of a show public again: %d", status)
	}

	// Stopped and archived: the ended playlist on disk, nothing in memory.
	b.Env.Do("POST", fmt.Sprintf("/v1/shows/%d/stop", b.ID), token, nil).Expect(t, http.StatusOK)
	exited(t, "ffmpeg after stop", done)
	b.Await(t, "archived", func(s map[string]any) bool { return s["archive"] == true })
	m.Wait()
	if m.InMemory(b.ID, "index.m3u8") || m.InMemory(b.ID, seg) {
		t.Errorf("a stopped show's files are still in memory")
	}
	if status, _, text := getText(t, base+"index.m3u8"); status != 200 || !strings.Contains(text, "#EXT-X-ENDLIST") {
		t.Errorf("live playlist of the archived show: %d\n%s", status, text)
	}
}

// TestRemotePrivateStopsMedia: two nodes on one MariaDB database and one
// Redis, the encoder on A. A show made private through A answers 404 on
// B's public URLs as soon as the event has reached B, without waiting for
// B's cache of the show to expire; public again, it plays there again.
func TestRemotePrivateStopsMedia(t *testing.T) {
	if os.Getenv(onairtest.MySQLEnv) == "" || os.Getenv(onairtest.RedisEnv) == "" {
		testload.Skip(t, "needs %s and %s (the README's test command sets both)", onairtest.MySQLEnv, onairtest.RedisEnv)
	}
	requireTools(t, "ffmpeg")
	db := onairtest.FreshMySQL(t)
	prefix := fmt.Sprintf("onairtest:%d:", time.Now().UnixNano())
	a := onairtest.New(t, onairtest.Options{DatabaseURL: db, Redis: true, RedisPrefix: prefix})
	b := onairtest.New(t, onairtest.Options{DatabaseURL: db, Redis: true, RedisPrefix: prefix})
	t.Cleanup(func() { a.Core.Redis.Del(context.Background(), prefix+shows.EventsStream) })
	_, token := a.CreateUser("Remote Private")
	bc := onairtest.CreateShow(t, a, token, nil)
	// B's subscribers run in order: the live module's first, then this.
	updates := make(chan bool, 16)
	shows.From(b.Core).Subscribe(func(_ context.Context, ev shows.Event) {
		if ev.Remote && ev.Show.ID == bc.ID && ev.Type == shows.EventUpdated {
			updates <- ev.Show.Private
		}
	})
	_, done := publish(t, bc.RTMP+"/"+bc.Key, 60, false)
	bc.Await(t, "live", isLive)
	onB := fmt.Sprintf("%s/media/shows/%d/index.m3u8", b.URL, bc.ID)
	awaitSegments(t, onB, 1) // B forwards to A, which ingests
	for _, private := range []bool{true, false} {
		a.Do("PUT", fmt.Sprintf("/v1/shows/%d", bc.ID), token, map[string]any{"private": private}).Expect(t, http.StatusOK)
		// Other updates (the thumbnail's) come and go; B hears the
		// events in the order they were committed.
		timeout := time.After(testload.Patience)
	await:
		for {
			select {
			case got := <-updates:
				if got == private {
					break await
				}
			case <-timeout:
				t.Fatalf("B never heard of the change to private=%v", private)
			}
		}
		want := map[bool]int{true: http.StatusNotFound, false: http.StatusOK}[private]
		if status, _, _ := getText(t, onB); status != want {
			t.Errorf("B right after the show was made private=%v on A: %d, want %d", private, status, want)
		}
	}
	a.Do("POST", fmt.Sprintf("/v1/shows/%d/stop", bc.ID), token, nil).Expect(t, http.StatusOK)
	exited(t, "ffmpeg after stop", done)
}
