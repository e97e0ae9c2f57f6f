package live_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/miniotest"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/store"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/live"
	"github.com/onair/onair/modules/live/hls"
	"github.com/onair/onair/modules/shows"
)

// bucket opens the test's bucket directly, to look at what the nodes put
// there.
func bucket(t *testing.T, srv *miniotest.Server, name string) *store.S3 {
	t.Helper()
	cfg, err := store.ParseS3URL(srv.URL(name))
	if err != nil {
		t.Fatal(err)
	}
	s, err := store.NewS3(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func keysOf(t *testing.T, s store.Store, prefix string) map[string]int64 {
	t.Helper()
	list, err := s.List(context.Background(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, i := range list {
		out[strings.TrimPrefix(i.Key, prefix)] = i.Size
	}
	return out
}

// storedIndex is the segment index a show has in the bucket.
func storedIndex(t *testing.T, s store.Store, id int64) []hls.Segment {
	t.Helper()
	key := fmt.Sprintf("shows/%d/%s", id, hls.IndexFile)
	// The ingesting node replaces the index after each segment it
	// uploads; ReadAll reads the new one when that happens mid-read.
	data, err := store.ReadAll(context.Background(), s, key)
	if store.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var segs []hls.Segment
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var seg hls.Segment
		if err := json.Unmarshal(line, &seg); err != nil {
			t.Fatalf("stored index line %q: %v", line, err)
		}
		segs = append(segs, seg)
	}
	return segs
}

func s3Options(url string, db string, more func(*app.Config)) onairtest.Options {
	return onairtest.Options{DatabaseURL: db, Configure: func(c *app.Config) {
		c.StorageURL = url
		if more != nil {
			more(c)
		}
	}}
}

func get(t *testing.T, url string, header http.Header, method string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	client := &http.Client{Timeout: testload.Patience, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, body
}

// TestS3Broadcast: a node on an S3 store (real MinIO) uploads the
// recording while live, archives into the bucket and serves the archive
// from it; a second node with an empty data dir on the same database and
// bucket serves it too, with byte ranges, validators and presigned
// redirects; a delete empties the show's prefix.
func TestS3Broadcast(t *testing.T) {
	requireTools(t, "ffmpeg", "ffprobe")
	srv := miniotest.Start(t)
	bk := bucket(t, srv, "media")
	a := onairtest.New(t, s3Options(srv.URL("media"), "", nil))
	_, token := a.CreateUser("Es Three")
	b := onairtest.CreateShow(t, a, token, nil)
	prefix := fmt.Sprintf("shows/%d/", b.ID)
	const seconds = 9
	_, done := publish(t, b.RTMP+"/"+b.Key, seconds, false)
	b.Await(t, "live", isLive)

	testload.Poll(t, "segments in the bucket while live", func() error {
		if segs := storedIndex(t, bk, b.ID); len(segs) < 2 {
			return fmt.Errorf("%d segments indexed in the bucket", len(segs))
		}
		return nil
	})
	if !isLive(b.Get(t)) {
		t.Fatal("the show ended before its segments were checked")
	}
	for _, s := range storedIndex(t, bk, b.ID) {
		if size := keysOf(t, bk, prefix)[s.File]; size == 0 {
			t.Errorf("the index lists %s before the bucket has it", s.File)
		}
	}
	if err := exited(t, "ffmpeg", done); err != nil {
		t.Fatal(err)
	}
	a.Do("POST", fmt.Sprintf("/v1/shows/%d/stop", b.ID), token, nil).Expect(t, http.StatusOK)
	s := b.Await(t, "archived", func(s map[string]any) bool { return s["archive"] == true })

	keys := keysOf(t, bk, prefix)
	for _, want := range []string{hls.ArchiveAV, hls.ArchiveAudio, hls.IndexFile, hls.PlaylistAV, hls.PlaylistAudio} {
		if keys[want] == 0 {
			t.Errorf("bucket lacks %s: %v", want, keys)
		}
	}
	segs := storedIndex(t, bk, b.ID)
	_, span := hls.Span(segs)
	if d := s["duration"].(float64); d != span.Round(time.Second).Seconds() || d < seconds-1 || d > seconds+1 {
		t.Errorf("duration %v, stored recording spans %s, published %d s", d, span, seconds)
	}
	// The archive node let go of its working files: what it serves now
	// comes from the bucket.
	m, _ := onairtest.Module[*live.Module](a)
	m.Wait()
	if _, err := os.Stat(filepath.Join(a.Core.Config.DataDir, "media", "shows", strconv.FormatInt(b.ID, 10))); !os.IsNotExist(err) {
		t.Errorf("working directory kept after the archive reached the store (%v)", err)
	}
	if got := ffprobe(t, s["video_url"].(string)); got != "aac,h264" {
		t.Errorf("archive from the store: %q", got)
	}
	s = b.Await(t, "thumbnailed", func(s map[string]any) bool { return s["gif_url"] != nil })
	if keys := keysOf(t, bk, prefix); keys["thumb.jpg"] == 0 || keys["preview.gif"] == 0 {
		t.Errorf("thumbnails not in the bucket: %v", keys)
	}

	// A second node, empty data dir, same database and bucket.
	c := onairtest.New(t, s3Options(srv.URL("media"), a.Core.Config.DatabaseURL, nil))
	onB := func(u string) string { return c.URL + strings.TrimPrefix(u, a.URL) }
	if got := ffprobe(t, onB(s["video_url"].(string))); got != "aac,h264" {
		t.Errorf("archive from the second node: %q", got)
	}
	if got := ffprobe(t, onB(s["audio_url"].(string))); got != "aac" {
		t.Errorf("audio archive from the second node: %q", got)
	}
	if resp, _ := get(t, onB(s["image_url"].(string)), nil, "GET"); resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/jpeg" {
		t.Errorf("thumbnail from the second node: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	seg := segs[len(segs)/2].File
	whole, err := store.ReadAll(context.Background(), bk, prefix+seg)
	if err != nil {
		t.Fatal(err)
	}
	segURL := fmt.Sprintf("%s/media/shows/%d/%s", c.URL, b.ID, seg)
	resp, body := get(t, segURL, nil, "GET")
	etag := resp.Header.Get("ETag")
	if resp.StatusCode != 200 || !bytes.Equal(body, whole) || resp.Header.Get("Content-Type") != "video/mp2t" ||
		resp.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" || etag == "" || resp.Header.Get("Last-Modified") == "" {
		t.Fatalf("segment from the store: %d, %d bytes of %d, %v", resp.StatusCode, len(body), len(whole), resp.Header)
	}
	resp, body = get(t, segURL, http.Header{"Range": {"bytes=100-299"}}, "GET")
	if resp.StatusCode != 206 || !bytes.Equal(body, whole[100:300]) ||
		resp.Header.Get("Content-Range") != fmt.Sprintf("bytes 100-299/%d", len(whole)) {
		t.Errorf("range: %d %q, %d bytes", resp.StatusCode, resp.Header.Get("Content-Range"), len(body))
	}
	resp, body = get(t, segURL, http.Header{"Range": {"bytes=-188"}}, "GET")
	if resp.StatusCode != 206 || !bytes.Equal(body, whole[len(whole)-188:]) {
		t.Errorf("suffix range: %d, %d bytes", resp.StatusCode, len(body))
	}
	resp, _ = get(t, segURL, http.Header{"Range": {fmt.Sprintf("bytes=%d-", len(whole))}}, "GET")
	if resp.StatusCode != 416 || resp.Header.Get("Content-Range") != fmt.Sprintf("bytes */%d", len(whole)) {
		t.Errorf("range past the end: %d %q", resp.StatusCode, resp.Header.Get("Content-Range"))
	}
	if resp, _ = get(t, segURL, http.Header{"If-None-Match": {etag}}, "GET"); resp.StatusCode != 304 {
		t.Errorf("If-None-Match: %d", resp.StatusCode)
	}
	resp, body = get(t, segURL, nil, "HEAD")
	if resp.StatusCode != 200 || len(body) != 0 || resp.ContentLength != int64(len(whole)) {
		t.Errorf("HEAD: %d, length %d, body %d", resp.StatusCode, resp.ContentLength, len(body))
	}
	if resp, _ := get(t, fmt.Sprintf("%s/media/shows/%d/seg-999999.ts", c.URL, b.ID), nil, "GET"); resp.StatusCode != 404 {
		t.Errorf("a segment the store lacks: %d", resp.StatusCode)
	}

	// A node whose clients reach the bucket: redirects to presigned URLs,
	// which play.
	d := onairtest.New(t, s3Options(srv.URL("media"), a.Core.Config.DatabaseURL, func(c *app.Config) {
		c.Set(live.SettingStoragePublicURL, "http://"+srv.Addr)
	}))
	resp, _ = get(t, fmt.Sprintf("%s/media/shows/%d/%s", d.URL, b.ID, seg), nil, "GET")
	if loc := resp.Header.Get("Location"); resp.StatusCode != 302 || !strings.HasPrefix(loc, "http://"+srv.Addr+"/media/"+prefix+seg+"?") {
		t.Errorf("presigned redirect: %d %q", resp.StatusCode, loc)
	} else if resp, body := get(t, loc, http.Header{"Range": {"bytes=0-187"}}, "GET"); resp.StatusCode != 206 || !bytes.Equal(body, whole[:188]) {
		t.Errorf("presigned URL: %d, %d bytes", resp.StatusCode, len(body))
	}
	// video_url names the archive's master; fetch follows it to the media
	// playlist, both served by the node.
	if status, _, body := fetch(t, d.URL+strings.TrimPrefix(s["video_url"].(string), a.URL)); status != 200 ||
		!strings.Contains(body, "#EXT-X-ENDLIST") {
		t.Errorf("archive playlist with a public store URL: %d (playlists are never redirected)\n%s", status, body)
	}
	if got := ffprobe(t, d.URL+strings.TrimPrefix(s["video_url"].(string), a.URL)); got != "aac,h264" {
		t.Errorf("archive through presigned redirects: %q", got)
	}

	text := string(a.Do("GET", "/metrics", "", nil).Expect(t, 200).Body)
	if !strings.Contains(text, `onair_store_operation_duration_seconds_count{kind="s3",op="put"}`) {
		t.Error("/metrics lacks the s3 upload latency")
	}

	a.Do("DELETE", fmt.Sprintf("/v1/shows/%d", b.ID), token, nil).Expect(t, http.StatusOK)
	m.Wait()
	if keys := keysOf(t, bk, prefix); len(keys) != 0 {
		t.Errorf("objects left after delete: %v", keys)
	}
}

// TestS3NodeLostMidShow: a node on an S3 store is killed mid-show and
// comes back with an empty data dir (its disk lost): the show ends after
// the reconnect window and is archived from the bucket, with the duration
// of what the bucket holds.
func TestS3NodeLostMidShow(t *testing.T) {
	requireTools(t, "ffmpeg", "ffprobe")
	srv := miniotest.Start(t)
	bk := bucket(t, srv, "media")
	p := onairtest.NewProcess(t, "ONAIR_STORAGE_URL="+srv.URL("media"), "ONAIR_RECONNECT_WINDOW=2s",
		"ONAIR_DATABASE_URL=sqlite://"+filepath.Join(t.TempDir(), "onair.db"))
	p.Start()
	b := setup(t, p)
	_, done := publish(t, b.RTMP+"/"+b.Key, 30, false)
	b.Await(t, "live", isLive)
	testload.Poll(t, "4 s of segments in the bucket", func() error {
		if _, span := hls.Span(storedIndex(t, bk, b.ID)); span < 4*time.Second {
			return fmt.Errorf("%s stored", span)
		}
		return nil
	})
	p.Kill()
	exited(t, "ffmpeg after the server was killed", done)
	segs := storedIndex(t, bk, b.ID)
	_, span := hls.Span(segs)

	p.Env = append(p.Env, "ONAIR_DATA_DIR="+t.TempDir())
	p.Start()
	s := b.Await(t, "archived", func(s map[string]any) bool { return s["archive"] == true })
	if d := s["duration"].(float64); d != span.Round(time.Second).Seconds() {
		t.Errorf("duration %v, the bucket holds %s", d, span)
	}
	_, _, vod := fetch(t, s["video_url"].(string))
	if n := strings.Count(vod, "#EXTINF"); n != countRendition(segs, hls.RenditionAV) {
		t.Errorf("archive lists %d segments, the bucket %d:\n%s", n, countRendition(segs, hls.RenditionAV), vod)
	}
	if got := ffprobe(t, s["video_url"].(string)); got != "aac,h264" {
		t.Errorf("archive after the node was lost: %q", got)
	}
}

func countRendition(segs []hls.Segment, r string) int {
	n := 0
	for _, s := range segs {
		if s.Rendition == r {
			n++
		}
	}
	return n
}

// TestS3Outage: MinIO stops mid-show for several segments. /readyz names
// the store; once MinIO is back the uploads go through (minio-go's and the
// uploader's retries) and the bucket's index lists every segment finished
// meanwhile, each of them in the bucket.
func TestS3Outage(t *testing.T) {
	requireTools(t, "ffmpeg")
	srv := miniotest.Start(t)
	bk := bucket(t, srv, "media")
	env := onairtest.New(t, s3Options(srv.URL("media"), "", nil))
	_, token := env.CreateUser("Out Age")
	b := onairtest.CreateShow(t, env, token, nil)
	_, done := publish(t, b.RTMP+"/"+b.Key, 14, false)
	b.Await(t, "live", isLive)
	var before int
	testload.Poll(t, "a segment in the bucket", func() error {
		if before = len(storedIndex(t, bk, b.ID)); before == 0 {
			return fmt.Errorf("none yet")
		}
		return nil
	})
	srv.Stop()
	r := env.Do("GET", "/readyz", "", nil).Expect(t, http.StatusServiceUnavailable)
	var ready struct{ Checks map[string]string }
	r.Decode(t, &ready)
	if ready.Checks["store"] == "ok" || ready.Checks["database"] != "ok" {
		t.Errorf("readyz checks %v: the store should be the one named", ready.Checks)
	}
	local := filepath.Join(env.Core.Config.DataDir, "media", "shows", strconv.FormatInt(b.ID, 10))
	var finished int
	testload.Poll(t, "segments finished while the store is down", func() error {
		segs, err := hls.ReadIndex(local)
		if finished = len(segs); err != nil || finished < before+6 {
			return fmt.Errorf("%d segments (%v)", finished, err)
		}
		return nil
	})
	srv.Restart()
	env.Do("GET", "/readyz", "", nil).Expect(t, http.StatusOK)
	testload.Poll(t, "the uploader catching up", func() error {
		if n := len(storedIndex(t, bk, b.ID)); n < finished {
			return fmt.Errorf("%d of %d segments indexed", n, finished)
		}
		return nil
	})
	keys := keysOf(t, bk, fmt.Sprintf("shows/%d/", b.ID))
	for _, s := range storedIndex(t, bk, b.ID) {
		if keys[s.File] == 0 {
			t.Errorf("indexed %s is not in the bucket", s.File)
		}
	}
	exited(t, "ffmpeg", done)
}

// TestS3ReconcileArchivesFromStore: a complete show whose recording is
// only in the bucket (its ingest node died between stop and archive) is
// archived by the next node to start, from the stored index, keeping only
// the segments the bucket holds.
func TestS3ReconcileArchivesFromStore(t *testing.T) {
	srv := miniotest.Start(t)
	bk := bucket(t, srv, "media")
	a := onairtest.New(t, s3Options(srv.URL("media"), "", nil))
	_, token := a.CreateUser("Re Concile")
	r := a.Do("POST", "/v1/shows", token, map[string]any{"name": "Orphan", "description": "stored only"})
	id := onairtest.ID(r.Expect(t, http.StatusCreated).JSON(t)["show"].(map[string]any))
	svc := shows.From(a.Core)
	ctx := context.Background()
	if _, err := svc.GoLive(ctx, id, shows.Media{}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Stop(ctx, id, nil); err != nil {
		t.Fatal(err)
	}
	m, _ := onairtest.Module[*live.Module](a)
	m.Wait() // nothing stored yet: nothing archived
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var index bytes.Buffer
	for i := range 4 {
		seg := hls.Segment{Rendition: hls.RenditionAV, Sequence: uint64(i), File: fmt.Sprintf("seg-%06d.ts", i), Duration: 2,
			ProgramDateTime: t0.Add(time.Duration(i) * 2 * time.Second), Independent: true, Target: 2}
		line, _ := json.Marshal(seg)
		index.Write(append(line, '\n'))
		if i == 3 {
			continue // listed, but the bucket never got it
		}
		if err := store.PutBytes(ctx, bk, fmt.Sprintf("shows/%d/%s", id, seg.File), bytes.Repeat([]byte{0x47}, 188), "video/mp2t"); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.PutBytes(ctx, bk, fmt.Sprintf("shows/%d/%s", id, hls.IndexFile), index.Bytes(), "application/json"); err != nil {
		t.Fatal(err)
	}
	if s := a.Do("GET", fmt.Sprintf("/v1/shows/%d", id), token, nil).JSON(t)["show"].(map[string]any); s["archive"] != false {
		t.Fatalf("archived before the recording was stored: %v", s)
	}

	b := onairtest.New(t, s3Options(srv.URL("media"), a.Core.Config.DatabaseURL, nil))
	var s map[string]any
	testload.Poll(t, "archived by the second node's reconcile", func() error {
		if s = b.Do("GET", fmt.Sprintf("/v1/shows/%d", id), token, nil).JSON(t)["show"].(map[string]any); s["archive"] != true {
			return fmt.Errorf("show %v", s)
		}
		return nil
	})
	if s["duration"] != float64(6) || s["audio_url"] != nil {
		t.Errorf("archived from 3 stored segments of 2 s: duration %v, audio_url %v", s["duration"], s["audio_url"])
	}
	_, _, body := fetch(t, s["video_url"].(string)) // the master, followed to its media playlist
	if n := strings.Count(body, "#EXTINF"); n != 3 || !strings.Contains(body, "#EXT-X-ENDLIST") {
		t.Errorf("archive playlist lists %d segments:\n%s", n, body)
	}
	if keys := keysOf(t, bk, fmt.Sprintf("shows/%d/", id)); keys[hls.ArchiveAV] == 0 || keys[hls.ArchiveMasterAV] == 0 || keys[hls.PlaylistAV] == 0 {
		t.Errorf("archive playlists not stored: %v", keys)
	}
}

// TestS3ArchiveLeavesOutSegmentLostToPowerLoss: with a media store, a
// segment the machine lost before it reached the disk (an empty file,
// never uploaded) is left out of the archive, as it is without a store,
// and not taken for the placeholder of a stored segment.
func TestS3ArchiveLeavesOutSegmentLostToPowerLoss(t *testing.T) {
	srv := miniotest.Start(t)
	bk := bucket(t, srv, "media")
	a := onairtest.New(t, s3Options(srv.URL("media"), "", nil))
	_, token := a.CreateUser("Power Cut")
	r := a.Do("POST", "/v1/shows", token, map[string]any{"name": "Lights Out", "description": "a segment lost"})
	id := onairtest.ID(r.Expect(t, http.StatusCreated).JSON(t)["show"].(map[string]any))
	svc := shows.From(a.Core)
	ctx := context.Background()
	if _, err := svc.GoLive(ctx, id, shows.Media{}); err != nil {
		t.Fatal(err)
	}
	m, _ := onairtest.Module[*live.Module](a)
	dir := m.ShowDir(id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var index bytes.Buffer
	for i := range 4 {
		body := bytes.Repeat([]byte{0x47}, 188)
		if i == 2 {
			body = nil // written to the index, its bytes never reached the disk
		}
		seg := hls.Segment{Rendition: hls.RenditionAV, Sequence: uint64(i), File: fmt.Sprintf("seg-%06d.ts", i), Duration: 2,
			ProgramDateTime: t0.Add(time.Duration(i) * 2 * time.Second), Independent: true, Target: 2, Size: 188}
		line, _ := json.Marshal(seg)
		index.Write(append(line, '\n'))
		if err := os.WriteFile(filepath.Join(dir, seg.File), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, hls.IndexFile), index.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Stop(ctx, id, nil); err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	testload.Poll(t, "archived", func() error {
		if s = a.Do("GET", fmt.Sprintf("/v1/shows/%d", id), token, nil).JSON(t)["show"].(map[string]any); s["archive"] != true {
			return fmt.Errorf("show %v", s)
		}
		return nil
	})
	_, _, body := fetch(t, s["video_url"].(string))
	if n := strings.Count(body, "#EXTINF"); n != 3 || strings.Contains(body, "seg-000002.ts") {
		t.Errorf("archive playlist lists %d segments:\n%s", n, body)
	}
	keys := keysOf(t, bk, fmt.Sprintf("shows/%d/", id))
	if _, ok := keys["seg-000002.ts"]; ok || keys["seg-000003.ts"] == 0 {
		t.Errorf("bucket: %v", keys)
	}
	if n := len(storedIndex(t, bk, id)); n != 3 {
		t.Errorf("stored index lists %d segments, want 3", n)
	}
}
