package live_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/miniotest"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/live"
	"github.com/onair/onair/modules/shows"
)

// cluster is two nodes of one install in this process: one MySQL
// database, one Redis (one key prefix).
type cluster struct {
	a, b   *onairtest.Env
	ma, mb *live.Module
	prefix string
}

func newCluster(t *testing.T, configure func(*app.Config)) *cluster {
	t.Helper()
	if os.Getenv(onairtest.MySQLEnv) == "" || os.Getenv(onairtest.RedisEnv) == "" {
		testload.Skip(t, "needs %s and %s (the README's test command sets both)", onairtest.MySQLEnv, onairtest.RedisEnv)
	}
	c := &cluster{prefix: fmt.Sprintf("onairtest:%d:", time.Now().UnixNano())}
	opts := onairtest.Options{DatabaseURL: onairtest.FreshMySQL(t), Redis: true, RedisPrefix: c.prefix, Configure: configure}
	c.a = onairtest.New(t, opts)
	c.b = onairtest.New(t, opts)
	t.Cleanup(func() { c.a.Core.Redis.Del(context.Background(), c.prefix+shows.EventsStream) })
	c.ma, _ = onairtest.Module[*live.Module](c.a)
	c.mb, _ = onairtest.Module[*live.Module](c.b)
	return c
}

func (c *cluster) get(t *testing.T, key string) string {
	t.Helper()
	v, err := c.a.Core.Redis.Get(context.Background(), c.prefix+key).Result()
	if err != nil && err.Error() != "redis: nil" {
		t.Fatal(err)
	}
	return v
}

func (c *cluster) owner(t *testing.T, show int64) string {
	return c.get(t, fmt.Sprintf("live:owner:%d", show))
}

// onB rewrites a media URL of node A to node B.
func (c *cluster) onB(u string) string { return strings.Replace(u, c.a.URL, c.b.URL, 1) }

// TestClusterNodesRegister: each node registers its internal URL with a
// TTL and removes it when it stops.
func TestClusterNodesRegister(t *testing.T) {
	c := newCluster(t, nil)
	idA, idB := c.ma.NodeID(), c.mb.NodeID()
	if idA == "" || idB == "" || idA == idB {
		t.Fatalf("node ids %q and %q", idA, idB)
	}
	if got := c.get(t, "node:"+idA); got != c.a.URL {
		t.Errorf("node A registered %q, want %q", got, c.a.URL)
	}
	if got := c.get(t, "node:"+idB); got != c.b.URL {
		t.Errorf("node B registered %q, want %q", got, c.b.URL)
	}
	ttl := c.a.Core.Redis.TTL(context.Background(), c.prefix+"node:"+idA).Val()
	if ttl <= 0 || ttl > 10*time.Second {
		t.Errorf("node key TTL %s, want within 10 s", ttl)
	}
	if err := c.b.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if got := c.get(t, "node:"+idB); got != "" {
		t.Errorf("node B still registered after it stopped: %q", got)
	}
}

// TestNodeURL: ONAIR_NODE_URL wins; otherwise the HTTP listen address
// gives it, with a host other nodes can reach.
func TestNodeURL(t *testing.T) {
	host, _ := os.Hostname()
	wildcard := "http://127.0.0.1:8080"
	if addrs, err := net.LookupHost(host); err == nil && len(addrs) > 0 {
		wildcard = "http://" + net.JoinHostPort(host, "8080")
	}
	for _, tc := range []struct {
		name, setting, addr, want string
		fails                     bool
	}{
		{"setting", "http://10.0.0.5:9000", ":8080", "http://10.0.0.5:9000", false},
		{"listen host", "", "10.1.2.3:8080", "http://10.1.2.3:8080", false},
		{"every interface", "", ":8080", wildcard, false},
		{"every interface, explicit", "", "0.0.0.0:8080", wildcard, false},
		{"ipv6 host", "", "[fd00::1]:8080", "http://[fd00::1]:8080", false},
		{"port 0 cannot be reached", "", "127.0.0.1:0", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := live.NodeURLFor(tc.setting, tc.addr)
			if (err != nil) != tc.fails || got != tc.want {
				t.Fatalf("got %q, %v; want %q (fails %v)", got, err, tc.want, tc.fails)
			}
			if tc.fails && !strings.Contains(err.Error(), "ONAIR_NODE_URL") {
				t.Errorf("error does not name the setting: %v", err)
			}
		})
	}
	for _, bad := range []string{"10.0.0.5:9000", "ftp://x:1", "http://", "http://x:1/path", "http://x:1/?q=1"} {
		if _, err := live.ParseNodeURL(bad); err == nil {
			t.Errorf("ONAIR_NODE_URL=%q accepted", bad)
		}
	}
	if v, err := live.ParseNodeURL("http://node-a:8080/"); err != nil || v != "http://node-a:8080" {
		t.Errorf("http://node-a:8080/ gives %v, %v", v, err)
	}
}

// TestClusterProxyForwards: a node asked for the live media of a show
// another node holds forwards the request there with its query string
// (blocking playlist reloads), marks it so it is never forwarded again,
// drops hop-by-hop headers, relays the answer, and answers from its own
// files (here: none, 404) when the owner does not answer. The owner is a
// plain HTTP server registered the way a node registers, so the test sees
// exactly what arrives.
func TestClusterProxyForwards(t *testing.T) {
	c := newCluster(t, nil)
	_, token := c.a.CreateUser("Proxy Pat")
	b := onairtest.CreateShow(t, c.a, token, nil)

	var mu sync.Mutex
	var got []*http.Request
	owner := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Clone(context.Background()))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/vnd.apple.mpegurl")
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("Keep-Alive", "timeout=5")
		io.WriteString(w, "#EXTM3U\n#EXT-X-VERSION:6\n")
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go owner.Serve(ln)
	t.Cleanup(func() { owner.Close() })
	rdb := c.a.Core.Redis
	ctx := context.Background()
	rdb.Set(ctx, c.prefix+"node:elsewhere", "http://"+ln.Addr().String(), time.Minute)
	rdb.Set(ctx, c.prefix+fmt.Sprintf("live:owner:%d", b.ID), "elsewhere", time.Minute)

	path := fmt.Sprintf("/media/shows/%d/index.m3u8?_HLS_msn=12&_HLS_part=3", b.ID)
	req, _ := http.NewRequest("GET", c.b.URL+path, nil)
	req.Header.Set("Proxy-Authorization", "Basic c2VjcmV0")
	req.Header.Set("Te", "trailers")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(string(body), "#EXTM3U") || resp.Header.Get("Cache-Control") != "no-cache" ||
		resp.Header.Get("Content-Type") != "application/vnd.apple.mpegurl" || resp.Header.Get("Keep-Alive") != "" {
		t.Fatalf("through node B: %d %v\n%s", resp.StatusCode, resp.Header, body)
	}
	mu.Lock()
	if len(got) != 1 {
		t.Fatalf("owner got %d requests", len(got))
	}
	r := got[0]
	mu.Unlock()
	if r.URL.RequestURI() != path {
		t.Errorf("owner got %s, want %s", r.URL.RequestURI(), path)
	}
	if r.Header.Get("X-Onair-Node") != c.mb.NodeID() {
		t.Errorf("forwarded request marked %q, want node B's id %q", r.Header.Get("X-Onair-Node"), c.mb.NodeID())
	}
	for _, h := range []string{"Proxy-Authorization", "Te"} {
		if r.Header.Get(h) != "" {
			t.Errorf("hop-by-hop header %s forwarded", h)
		}
	}
	if r.Header.Get("X-Forwarded-For") != "127.0.0.1" {
		t.Errorf("X-Forwarded-For %q", r.Header.Get("X-Forwarded-For"))
	}

	// Already forwarded once: answered here (no such file: 404).
	req, _ = http.NewRequest("GET", c.b.URL+path, nil)
	req.Header.Set("X-Onair-Node", "someone")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("a forwarded request: %v %v", resp, err)
	}
	// The owner is gone: the node answers from what it has.
	// (Asked through node A, whose owner cache is empty.)
	owner.Close()
	if status, _, _ := fetch(t, c.a.URL+path); status != http.StatusNotFound {
		t.Fatalf("owner gone: %d, want 404 from the node's own files", status)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 {
		t.Errorf("owner got %d requests, want 1", len(got))
	}
}

// TestClusterLiveOnEveryNode publishes to node A: node B serves the live
// playlists and segments (forwarded to A); a publisher of the same key on
// node B takes the show over (A's publisher is cut off, the lease moves,
// the show never leaves the air); a stop then ends it on B and the lease
// is gone. It also measures what forwarding adds to a playlist request.
func TestClusterLiveOnEveryNode(t *testing.T) {
	requireTools(t, "ffmpeg", "ffprobe")
	c := newCluster(t, nil)
	_, token := c.a.CreateUser("Two Nodes")
	b := onairtest.CreateShow(t, c.a, token, nil)
	_, doneA := publish(t, b.RTMP+"/"+b.Key, 60, false)
	s := b.Await(t, "live", isLive)
	if got := c.owner(t, b.ID); got != c.ma.NodeID() {
		t.Fatalf("live lease %q, want node A %q", got, c.ma.NodeID())
	}
	if got := metric(t, c.a, "onair_live_leases"); got != 1 {
		t.Errorf("node A reports %v leases, want 1", got)
	}
	videoA := s["video_url"].(string)
	awaitSegments(t, videoA, 2)
	videoB, audioB := c.onB(videoA), c.onB(s["audio_url"].(string))
	status, h, text := fetch(t, videoB)
	if status != 200 || h.Get("Content-Type") != "application/vnd.apple.mpegurl" || h.Get("Cache-Control") != "no-cache" ||
		!strings.Contains(text, "#EXTINF") {
		t.Fatalf("live playlist through B: %d %v\n%s", status, h, text)
	}
	// One player (this test's HTTP client, by address and User-Agent) on
	// both nodes is one viewer; ffprobe below is another player.
	if c.mb.Viewers(b.ID) != 1 || c.ma.Viewers(b.ID) != 1 {
		t.Errorf("viewers A %d B %d: one player on both nodes is one viewer", c.ma.Viewers(b.ID), c.mb.Viewers(b.ID))
	}
	if got := ffprobe(t, videoB); got != "aac,h264" {
		t.Errorf("video through B streams %q", got)
	}
	if got := ffprobe(t, audioB); got != "aac" {
		t.Errorf("audio through B streams %q", got)
	}
	var seg string
	for _, line := range strings.Split(text, "\n") {
		if strings.HasSuffix(line, ".ts") {
			seg = line
		}
	}
	segURL := videoA[:strings.LastIndex(videoA, "/")+1] + seg
	_, _, fromA := fetch(t, segURL)
	status, h, fromB := fetch(t, c.onB(segURL))
	if status != 200 || h.Get("Content-Type") != "video/mp2t" || fromB != fromA || len(fromA) == 0 {
		t.Errorf("segment through B: %d %v, %d bytes (A: %d)", status, h, len(fromB), len(fromA))
	}
	direct, through := medianLatency(t, videoA), medianLatency(t, videoB)
	t.Logf("playlist request, median of 200: %s from A, %s through B (+%s)", direct, through, through-direct)

	// The encoder reconnects to node B: it takes over.
	rtmpB := "rtmp://" + c.mb.RTMPAddr() + "/live/" + b.Key
	_, doneB := publish(t, rtmpB, 60, false)
	testload.Poll(t, "node B holds the lease", func() error {
		if got := c.owner(t, b.ID); got != c.mb.NodeID() {
			return fmt.Errorf("lease %q", got)
		}
		return nil
	})
	exited(t, "node A's publisher after the takeover", doneA)
	if !strings.Contains(c.a.Logs(), "publisher replaced on another node") {
		t.Errorf("node A did not log the takeover")
	}
	if now := b.Get(t); !isLive(now) || now["start"] != s["start"] {
		t.Fatalf("show after the takeover: %v (before: %v)", now, s)
	}
	awaitSegments(t, c.a.URL+fmt.Sprintf("/media/shows/%d/index.m3u8", b.ID), 1)

	// Stop through B (the owner now): its publisher is cut, the lease goes.
	sent := time.Now()
	c.b.Do("POST", fmt.Sprintf("/v1/shows/%d/stop", b.ID), token, nil).Expect(t, http.StatusOK)
	exited(t, "node B's publisher after the stop", doneB)
	if took := time.Since(sent); took > 2*time.Second {
		t.Errorf("publisher cut %s after the stop", took)
	}
	testload.Poll(t, "lease released", func() error {
		if got := c.owner(t, b.ID); got != "" {
			return fmt.Errorf("lease %q", got)
		}
		return nil
	})
	b.Await(t, "archived", func(s map[string]any) bool { return s["archive"] == true })
}

// medianLatency is the median time of 200 GETs of url.
func medianLatency(t *testing.T, url string) time.Duration {
	t.Helper()
	client := &http.Client{Timeout: testload.Patience}
	took := make([]time.Duration, 0, 200)
	for range 200 {
		start := time.Now()
		resp, err := client.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d", url, resp.StatusCode)
		}
		took = append(took, time.Since(start))
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	return took[len(took)/2]
}

// TestClusterJanitorEndsOrphans: a live show whose owner lease lapses (its
// node died) gets its reconnect window started by the nodes' janitor, and
// the shows janitor then ends it; while a lease is held, nothing happens.
func TestClusterJanitorEndsOrphans(t *testing.T) {
	c := newCluster(t, func(cfg *app.Config) { cfg.Set(shows.SettingReconnectWindow, time.Second) })
	_, token := c.a.CreateUser("Orphan Olga")
	b := onairtest.CreateShow(t, c.a, token, nil)
	svc := shows.From(c.a.Core)
	ctx := context.Background()
	// A node that is not one of these two streams the show.
	key := c.prefix + fmt.Sprintf("live:owner:%d", b.ID)
	c.a.Core.Redis.Set(ctx, key, "elsewhere", 10*time.Second)
	if _, err := svc.GoLive(ctx, b.ID, shows.Media{}); err != nil {
		t.Fatal(err)
	}
	// Renewed by "its node" for 12 s (more than a lease period plus a
	// janitor round): the show stays live.
	for range 6 {
		c.a.Core.Redis.Set(ctx, key, "elsewhere", 10*time.Second)
		time.Sleep(2 * time.Second)
		if s := b.Get(t); !isLive(s) {
			t.Fatalf("show ended while its lease was held: %v", s)
		}
	}
	// The node dies: no renewal; the lease lapses after 10 s, the janitor
	// waits another lease period, the window (1 s) passes.
	died := time.Now()
	s := b.Await(t, "ended", func(s map[string]any) bool { return s["complete"] == true })
	if took := time.Since(died); took < 10*time.Second {
		t.Errorf("ended %s after its node died, before its lease could lapse", took)
	}
	if s["live"] != false {
		t.Errorf("ended show: %v", s)
	}
	if n := metric(t, c.a, "onair_live_orphaned_total") + metric(t, c.b, "onair_live_orphaned_total"); n < 1 {
		t.Errorf("onair_live_orphaned_total: %v across the nodes", n)
	}
}

// TestClusterReconnectToAnotherNode: the encoder drops from node A and
// comes back, inside the reconnect window, to node B (one MinIO bucket):
// the show resumes with its start, B continues the recording from the
// index A left in the bucket, and the archive, made once, holds both parts.
func TestClusterReconnectToAnotherNode(t *testing.T) {
	requireTools(t, "ffmpeg")
	srv := miniotest.Start(t)
	bk := bucket(t, srv, "reconnect")
	c := newCluster(t, func(cfg *app.Config) { cfg.StorageURL = srv.URL("reconnect") })
	_, token := c.a.CreateUser("Hop Nodes")
	b := onairtest.CreateShow(t, c.a, token, nil)
	_, done := publish(t, b.RTMP+"/"+b.Key, 4, false)
	first := b.Await(t, "live", isLive)
	if err := exited(t, "the publisher on A", done); err != nil {
		t.Fatal(err)
	}
	testload.Poll(t, "A let go of the lease", func() error {
		if got := c.owner(t, b.ID); got != "" {
			return fmt.Errorf("lease %q", got)
		}
		return nil
	})
	onA := len(storedIndex(t, bk, b.ID))
	_, done = publish(t, "rtmp://"+c.mb.RTMPAddr()+"/live/"+b.Key, 4, false)
	testload.Poll(t, "node B holds the lease", func() error {
		if got := c.owner(t, b.ID); got != c.mb.NodeID() {
			return fmt.Errorf("lease %q", got)
		}
		return nil
	})
	if err := exited(t, "the publisher on B", done); err != nil {
		t.Fatal(err)
	}
	if s := b.Get(t); !isLive(s) || s["start"] != first["start"] {
		t.Fatalf("after reconnecting to B: live %v start %v (first start %v)", s["live"], s["start"], first["start"])
	}
	if segs := storedIndex(t, bk, b.ID); len(segs) <= onA {
		t.Fatalf("the stored index has %d segments after B, %d after A", len(segs), onA)
	}
	c.b.Do("POST", fmt.Sprintf("/v1/shows/%d/stop", b.ID), token, nil).Expect(t, http.StatusOK)
	s := b.Await(t, "archived", func(s map[string]any) bool { return s["archive"] == true })
	_, _, vod := fetch(t, c.onB(s["video_url"].(string)))
	if !strings.Contains(vod, "#EXT-X-DISCONTINUITY") {
		t.Errorf("archive of a show resumed on another node has no discontinuity:\n%s", vod)
	}
	if d := playlistSeconds(vod); d < 7 || d > 9 {
		t.Errorf("archive of two 4 s parts on two nodes lasts %.2f s:\n%s", d, vod)
	}
	if n := strings.Count(c.a.Logs(), "show archived") + strings.Count(c.b.Logs(), "show archived"); n != 1 {
		t.Errorf("archived %d times across the nodes", n)
	}
	// B, the last to ingest it, archives: A's working files end where A's
	// part did (A archiving from them lost B's part, once, in CI).
	if strings.Count(c.b.Logs(), "show archived") != 1 {
		t.Error("the show was not archived by the last node to ingest it")
	}
}
