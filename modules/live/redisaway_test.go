package live_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/redis/go-redis/v9"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/faulttest"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/live"
)

// redisNoise counts a node's log lines at warning level or above about
// Redis or what asks it in the background (the heartbeat, leases, the
// janitor, viewers, presence, the token cache, the events stream).
func redisNoise(logs string) (n int, lines []string) {
	for _, l := range strings.Split(logs, "\n") {
		if !strings.Contains(l, "level=WARN") && !strings.Contains(l, "level=ERROR") {
			continue
		}
		low := strings.ToLower(l)
		for _, w := range []string{"redis", "heartbeat", "lease", "janitor", "viewers", "presence", "token cache", "events stream", "dial"} {
			if strings.Contains(low, w) {
				lines = append(lines, l)
				break
			}
		}
	}
	return len(lines), lines
}

// chatSocket opens the show's chat socket on a node and hands over the
// messages it hears.
func chatSocket(t *testing.T, env *onairtest.Env, show int64, token string) <-chan string {
	t.Helper()
	url := "ws" + strings.TrimPrefix(env.URL, "http") + fmt.Sprintf("/v1/shows/%d/chat/socket", show)
	conn, _, err := websocket.DefaultDialer.Dial(url, http.Header{"Authorization": {"Bearer " + token}})
	if err != nil {
		t.Fatalf("chat socket: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	heard := make(chan string, 256)
	go func() {
		defer close(heard)
		for {
			_, data, err := conn.ReadMessage()
			if err != nil {
				return
			}
			var ev struct {
				Type string `json:"type"`
				Chat struct {
					Message string `json:"message"`
				} `json:"chat"`
			}
			if json.Unmarshal(data, &ev) == nil && ev.Type == "chat.created" {
				heard <- ev.Chat.Message
			}
		}
	}()
	return heard
}

// awaitHeard waits for msg on a chat socket.
func awaitHeard(t *testing.T, heard <-chan string, msg string) {
	t.Helper()
	deadline := time.After(testload.Patience)
	for {
		select {
		case m, ok := <-heard:
			if !ok {
				t.Fatalf("chat socket closed before %q", msg)
			}
			if m == msg {
				return
			}
		case <-deadline:
			t.Fatalf("%q did not reach the chat socket within %s", msg, testload.Patience)
		}
	}
}

// heardWithin posts msg after the chat's post rate window and tells
// whether the socket hears it within 5 s.
func heardWithin(heard <-chan string, post func(string), msg string) bool {
	time.Sleep(1100 * time.Millisecond)
	post(msg)
	wait := time.After(5 * time.Second)
	for {
		select {
		case m := <-heard:
			if m == msg {
				return true
			}
		case <-wait:
			return false
		}
	}
}

// newestMedia fetches the newest segment and the newest LL-HLS part of a
// live playlist and checks each is MPEG-TS; it returns the segment's
// media sequence number.
func newestMedia(t *testing.T, playlist string) uint64 {
	t.Helper()
	_, _, text := getText(t, playlist)
	seg, _, _ := newestOf(t, text)
	segs := lastSegURI.FindAllString(text, -1)
	uris := []string{segs[len(segs)-1]}
	if parts := partURI.FindAllStringSubmatch(text, -1); len(parts) > 0 {
		last := parts[len(parts)-1]
		uris = append(uris, fmt.Sprintf("%s-%s-p%s.ts", last[1], last[2], last[3]))
	}
	for _, u := range uris {
		status, _, body := getText(t, resolve(t, playlist, u))
		if status != http.StatusOK || len(body) < 188 || body[0] != 0x47 {
			t.Errorf("%s: %d, %d bytes (want MPEG-TS)", u, status, len(body))
		}
	}
	return seg
}

// TestRedisAwayMidShow kills the cluster's Redis while node A ingests a
// show from ffmpeg and starts it again. Meanwhile node A keeps the show
// going on its own: the live playlist keeps advancing and its newest
// segment and part are served, the show stays live, a chat message
// reaches a socket on A. A second publisher of that show, on node B, is
// refused at once with a message the encoder shows (B cannot tell which
// node holds it), while a new show publishes to B. Each node logs the
// outage once and nothing else about Redis at warning level. When Redis
// returns (empty), each node logs it once and writes its registration and
// its leases again.
func TestRedisAwayMidShow(t *testing.T) {
	if os.Getenv(onairtest.MySQLEnv) == "" {
		testload.Skip(t, "needs %s (the README's test command sets it): two nodes share one database", onairtest.MySQLEnv)
	}
	requireTools(t, "ffmpeg")
	rds := faulttest.StartRedis(t)
	const prefix = "away:"
	opts := onairtest.Options{DatabaseURL: onairtest.FreshMySQL(t), Configure: func(c *app.Config) {
		c.RedisURL, c.RedisPrefix = rds.URL(), prefix
	}}
	a, b := onairtest.New(t, opts), onairtest.New(t, opts)
	ma, _ := onairtest.Module[*live.Module](a)
	mb, _ := onairtest.Module[*live.Module](b)
	_, token := a.CreateUser("Away Redis")

	one := onairtest.CreateShow(t, a, token, nil)
	encoder, done := publish(t, one.RTMP+"/"+one.Key, 240, false)
	s := one.Await(t, "live", isLive)
	playlist := resolve(t, s["video_url"].(string), "index.m3u8")
	awaitSegments(t, playlist, 2)
	heard := chatSocket(t, a, one.ID, token)
	post := func(msg string) {
		a.Do("POST", fmt.Sprintf("/v1/shows/%d/chats", one.ID), token, map[string]any{"message": msg}).Expect(t, http.StatusCreated)
	}
	post("before")
	awaitHeard(t, heard, "before")

	rds.Kill()
	t.Cleanup(func() {
		if !rds.Running() {
			rds.Start()
		}
	})
	killed := newestMedia(t, playlist)
	testload.Poll(t, "both nodes see Redis away", func() error {
		if !a.Core.RedisState.Down() || !b.Core.RedisState.Down() {
			return errors.New("not yet")
		}
		return nil
	})
	// Playback: the playlist advances three segments (6 s of media) past
	// the outage, and its newest segment and part are served.
	testload.Poll(t, "the live playlist advancing with Redis away", func() error {
		if seg := newestMedia(t, playlist); seg < killed+3 {
			return fmt.Errorf("newest segment %d, %d when Redis went", seg, killed)
		}
		return nil
	})
	if s := one.Get(t); s["live"] != true {
		t.Errorf("show with Redis away: %v", s)
	}
	post("during")
	awaitHeard(t, heard, "during")

	// Node B cannot tell whether A still streams show one: it refuses a
	// second publisher of it at once, with a reason the encoder prints.
	began := time.Now()
	_, other := publish(t, "rtmp://"+mb.RTMPAddr()+"/live/"+one.Key, 30, false)
	err := exited(t, "the second publisher of show one", other)
	if err == nil || !strings.Contains(err.Error(), "Another server is receiving this show") {
		t.Errorf("a publisher of show one on node B with Redis away: %v", err)
	}
	t.Logf("node B refused the second publisher after %s", time.Since(began).Round(time.Millisecond))
	select {
	case err := <-done:
		t.Fatalf("the publisher on node A ended with Redis away: %v", err)
	default:
	}
	// The encoder of show one drops and comes back to node A within the
	// reconnect window: A takes the show back on its own, and the
	// recording goes on.
	encoder.Process.Kill()
	<-done
	testload.Poll(t, "show one's encoder gone from node A", func() error {
		if n := ma.Streams(); n != 0 {
			return fmt.Errorf("%d publishers", n)
		}
		return nil
	})
	dropped := newestMedia(t, playlist)
	_, done = publish(t, one.RTMP+"/"+one.Key, 240, false)
	testload.Poll(t, "show one's recording going on after its encoder came back", func() error {
		if seg := newestMedia(t, playlist); seg < dropped+2 {
			return fmt.Errorf("newest segment %d, %d when the encoder dropped", seg, dropped)
		}
		return nil
	})
	if !strings.Contains(a.Logs(), "this node takes the show on its own") {
		t.Errorf("node A did not log taking show one back with Redis away")
	}
	// A show nobody streams: node B takes it on its own.
	two := onairtest.CreateShow(t, b, token, nil)
	_, _ = publish(t, "rtmp://"+mb.RTMPAddr()+"/live/"+two.Key, 240, false)
	s2 := two.Await(t, "live on node B", isLive)
	playlist2 := resolve(t, s2["video_url"].(string), "index.m3u8")
	playlist2 = b.URL + playlist2[strings.Index(playlist2, "/media/"):]
	awaitSegments(t, playlist2, 2)
	newestMedia(t, playlist2)

	for name, env := range map[string]*onairtest.Env{"A": a, "B": b} {
		logs := env.Logs()
		if n := strings.Count(logs, "redis unavailable: this node works on its own"); n != 1 {
			t.Errorf("node %s logged the outage %d times, want once", name, n)
		}
		if n, lines := redisNoise(logs); n != 1 {
			t.Errorf("node %s: %d log lines about Redis at warning level, want the one of the outage:\n%s", name, n, strings.Join(lines, "\n"))
		}
	}

	// Redis returns empty: each node registers again and takes its
	// leases again within a heartbeat or two.
	rds.Start()
	ropts, _ := redis.ParseURL(rds.URL())
	rdb := redis.NewClient(ropts)
	defer rdb.Close()
	want := map[string]string{
		"node:" + ma.NodeID():                a.URL,
		"node:" + mb.NodeID():                b.URL,
		fmt.Sprintf("live:owner:%d", one.ID): ma.NodeID(),
		fmt.Sprintf("live:owner:%d", two.ID): mb.NodeID(),
		fmt.Sprintf("live:last:%d", one.ID):  ma.NodeID(),
		fmt.Sprintf("live:last:%d", two.ID):  mb.NodeID(),
	}
	testload.Poll(t, "the nodes' keys in Redis again", func() error {
		for k, v := range want {
			got, err := rdb.Get(context.Background(), prefix+k).Result()
			if err != nil || got != v {
				return fmt.Errorf("%s: %q, %v; want %q", k, got, err, v)
			}
		}
		return nil
	})
	testload.Poll(t, "both nodes see Redis back", func() error {
		if a.Core.RedisState.Down() || b.Core.RedisState.Down() {
			return errors.New("not yet")
		}
		return nil
	})
	// Healed: the chat goes through Redis again (the node subscribes again
	// moments after Redis's return; a post before that is not heard here,
	// so the test posts again), both shows still play and are live.
	for attempt := 1; !heardWithin(heard, post, fmt.Sprintf("after %d", attempt)); attempt++ {
		if attempt == 20 {
			t.Fatal("no chat message reached the socket through Redis after its return")
		}
	}
	healed := newestMedia(t, playlist)
	testload.Poll(t, "the live playlist advancing after Redis returned", func() error {
		if seg := newestMedia(t, playlist); seg <= healed {
			return fmt.Errorf("newest segment %d", seg)
		}
		return nil
	})
	select {
	case err := <-done:
		t.Errorf("show one's publisher on node A ended after Redis returned: %v", err)
	default:
	}
	for _, sh := range []*onairtest.Show{one, two} {
		if s := sh.Get(t); s["live"] != true {
			t.Errorf("show %d after Redis returned: %v", sh.ID, s)
		}
	}
	for name, env := range map[string]*onairtest.Env{"A": a, "B": b} {
		logs := env.Logs()
		if n := strings.Count(logs, "redis answers again"); n != 1 {
			t.Errorf("node %s logged Redis's return %d times, want once", name, n)
		}
		if n, lines := redisNoise(logs); n != 1 {
			t.Errorf("node %s: %d log lines about Redis at warning level, want the one of the outage:\n%s", name, n, strings.Join(lines, "\n"))
		}
	}
}
