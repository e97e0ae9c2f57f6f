package live_test

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/live"
	"github.com/onair/onair/modules/shows"
)

// The storm a node restart causes (issue 29): every encoder reconnects at
// once.
const (
	stormPublishers = 300
	stormSpread     = 15 * time.Second
)

// 300 publishers from one address, each to its own show, connecting
// within 15 s: every publish is accepted at the first attempt (the key
// check neither queues behind the shows going live nor runs out the
// admission deadline), and every show goes live with a playlist to play.
// The RTMP limits are set as docs/operations.md tells an operator with
// 300 encoders behind one address to set them.
func TestPublisherStorm(t *testing.T) {
	requireTools(t, "ffmpeg")
	// A small stream: 160x96 at 10 fps with a keyframe every second.
	rec := recordFLV(t, 4, "-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-pix_fmt", "yuv420p",
		"-s", "160x96", "-r", "10", "-g", "10", "-b:v", "64k")
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env := onairtest.New(t, onairtest.Options{Backend: backend, Configure: func(c *app.Config) {
			c.Set(live.SettingRTMPMaxConns, 512)
			c.Set(live.SettingRTMPMaxPending, 512)
			c.Set(live.SettingRTMPMaxPendingPerIP, 512)
			c.Set(live.SettingRTMPMaxPublishersPerIP, 512)
		}})
		_, token := env.CreateUser("Storm Chaser")
		casts := make([]*onairtest.Show, stormPublishers)
		for i := range casts {
			casts[i] = onairtest.CreateShow(t, env, token, nil)
		}

		stop := make(chan struct{})
		var wg sync.WaitGroup
		defer func() { close(stop); wg.Wait() }()
		refused := make(chan error, stormPublishers)
		var mu sync.Mutex
		var lastAccepted time.Duration
		start := time.Now()
		for i, b := range casts {
			at := start.Add(time.Duration(i) * stormSpread / stormPublishers)
			wg.Go(func() {
				time.Sleep(time.Until(at))
				p, answer, err := connectPublisher(t, b.RTMP, b.Key)
				if err == nil && answer["code"] != "NetStream.Publish.Start" {
					err = fmt.Errorf("publish answered %v", answer)
				}
				if err != nil {
					refused <- fmt.Errorf("show %d: %w", b.ID, err)
					return
				}
				mu.Lock()
				lastAccepted = max(lastAccepted, time.Since(start))
				mu.Unlock()
				p.loop(rec, stop)
			})
		}

		// Every show live, as the list of live shows tells (the poll
		// itself must not be a storm).
		want := map[int64]bool{}
		for _, b := range casts {
			want[b.ID] = true
		}
		videoURL := map[int64]string{}
		testload.Poll(t, "every show live", func() error {
			select {
			case err := <-refused:
				t.Fatalf("a publisher was refused: %v (the server's admission: %v evicted, %v timed out)", err,
					metric(t, env, "onair_rtmp_evicted_total"), metric(t, env, "onair_rtmp_admission_timeouts_total"))
			default:
			}
			clear(videoURL)
			for page := 1; ; page++ {
				r := env.Do("GET", fmt.Sprintf("/v1/shows?live=true&page=%d", page), token, nil).Expect(t, http.StatusOK).JSON(t)
				list, _ := r["shows"].([]any)
				for _, item := range list {
					s := item.(map[string]any)
					if id := onairtest.ID(s); want[id] && isLive(s) {
						videoURL[id], _ = s["video_url"].(string)
					}
				}
				if len(list) < shows.PageSize {
					break
				}
			}
			if len(videoURL) < len(want) {
				return fmt.Errorf("%d of %d shows live", len(videoURL), len(want))
			}
			return nil
		})
		allLive := time.Since(start)
		mu.Lock()
		t.Logf("%s: %d publishers started over %v; the last accepted after %v; all live after %v", backend,
			stormPublishers, stormSpread, lastAccepted.Round(time.Millisecond), allLive.Round(time.Millisecond))
		mu.Unlock()
		for _, b := range casts {
			status, _, text := fetch(t, videoURL[b.ID])
			if status != http.StatusOK || !segmentURI.MatchString(text) {
				t.Fatalf("show %d: playlist %s: %d\n%s", b.ID, videoURL[b.ID], status, text)
			}
		}
		// What 300 live shows cost: the CPU and memory of the test's
		// process (the node and the 300 publishers together, so an upper
		// bound on the node's) over 10 s.
		if cpu0, ok := processCPU(); ok {
			time.Sleep(10 * time.Second)
			if cpu1, ok := processCPU(); ok {
				t.Logf("%s: with %d live shows the node and its publishers use %.2f cores and %s resident", backend,
					stormPublishers, (cpu1-cpu0).Seconds()/10, residentSize())
			}
		}
		// No publisher was refused or timed out while it waited for its
		// key check. (A go-live write that a busy database answers late
		// is retried and logged as such; every show going live above is
		// what counts for it.)
		for _, bad := range []string{"publish refused", "authorize: context"} {
			if strings.Contains(env.Logs(), bad) {
				t.Errorf("the server logged %q during the storm", bad)
			}
		}
		if n := metric(t, env, "onair_live_publishers"); n != stormPublishers {
			t.Errorf("onair_live_publishers %v, want %d", n, stormPublishers)
		}
	})
}

// loop sends the recording over and over, paced on its timestamps, until
// stop is closed or the connection fails; the sequence headers go first
// and once, as an encoder sends them.
func (p *rtmpPublisher) loop(rec flvTags, stop <-chan struct{}) {
	first := mergeTags(rec.audio, rec.video)
	again := mergeTags(rec.audio[1:], rec.video[1:])
	// One loop lasts until the last video frame's timestamp plus a frame.
	length := rec.video[len(rec.video)-1].Timestamp + 100
	begin := time.Now()
	for n := uint32(0); ; n++ {
		tags := first
		if n > 0 {
			tags = again
		}
		for _, tag := range tags {
			tag.Timestamp += n * length
			select {
			case <-stop:
				return
			case <-time.After(time.Until(begin.Add(time.Duration(tag.Timestamp) * time.Millisecond))):
			}
			if err := p.tag(tag); err != nil {
				return
			}
		}
	}
}

// processCPU is the CPU time the process has used (Linux).
func processCPU() (time.Duration, bool) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, false
	}
	// The fields after the command's closing parenthesis: utime and stime
	// are the 12th and 13th, in clock ticks of 1/100 s.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, true
}

// residentSize is the process's VmRSS line (Linux).
func residentSize() string {
	b, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}
