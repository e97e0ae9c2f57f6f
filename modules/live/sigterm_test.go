package live_test

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/onair/onair/internal/miniotest"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
)

// sentSeconds is how much media ffmpeg sent, from the last out_time_us
// of its -progress file.
func sentSeconds(t *testing.T, progress string) float64 {
	t.Helper()
	data, err := os.ReadFile(progress)
	if err != nil {
		t.Fatal(err)
	}
	last := -1.0
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "out_time_us="); ok {
			if us, err := strconv.ParseFloat(v, 64); err == nil {
				last = us / 1e6
			}
		}
	}
	if last < 0 {
		t.Fatalf("no out_time_us in ffmpeg's progress:\n%s", data)
	}
	return last
}

// TestSigtermMidShow stops a node with SIGTERM in the middle of a show
// kept in an S3 store: the node stops accepting connections at once, the
// blocking LL-HLS playlist reload in flight is answered, the chat socket
// is closed with 1001 (going away), the node exits 0, and a new node that
// has none of the first one's files archives the show from the store at
// the length ffmpeg sent: every finished segment was uploaded before the
// node let go.
func TestSigtermMidShow(t *testing.T) {
	requireTools(t, "ffmpeg", "ffprobe")
	s3 := miniotest.Start(t)
	db := filepath.Join(t.TempDir(), "onair.db")
	shared := []string{"ONAIR_STORAGE_URL=" + s3.URL("sigterm"), "ONAIR_DATABASE_URL=sqlite://" + db, "ONAIR_RECONNECT_WINDOW=3s"}
	p := onairtest.NewProcess(t, shared...)
	p.Start()
	b := setup(t, p)

	progress := filepath.Join(t.TempDir(), "progress")
	args := append([]string{"-progress", progress}, ffmpegArgs(b.RTMP+"/"+b.Key, 120, false)...)
	ffmpeg := exec.Command("ffmpeg", args...)
	var ffmpegErr strings.Builder
	ffmpeg.Stderr = &ffmpegErr
	if err := ffmpeg.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ffmpeg.Process.Kill() })
	done := make(chan error, 1)
	go func() { done <- ffmpeg.Wait() }()

	live := b.Await(t, "live", isLive)
	variant := variantOf(t, live["video_url"].(string))
	awaitSegments(t, variant, 6)

	// A chat socket, open when the node stops.
	ws := "ws" + strings.TrimPrefix(p.URL, "http") + fmt.Sprintf("/v1/shows/%d/chat/socket", b.ID)
	conn, resp, err := websocket.DefaultDialer.Dial(ws, http.Header{"Authorization": {"Bearer " + b.Token}})
	if err != nil {
		t.Fatalf("dial %s: %v (%v)", ws, err, resp)
	}
	defer conn.Close()
	closed := make(chan error, 1)
	go func() {
		for {
			if _, _, err := conn.ReadMessage(); err != nil {
				closed <- err
				return
			}
		}
	}()

	// A blocking playlist reload for a part two segments ahead: the node
	// holds it for seconds, and must answer it while it shuts down.
	_, _, text := getText(t, variant)
	seg, _, _ := newestOf(t, text)
	want := seg + 2
	type answer struct {
		status int
		body   string
		err    error
	}
	reload := make(chan answer, 1)
	go func() {
		resp, err := http.Get(fmt.Sprintf("%s?_HLS_msn=%d&_HLS_part=0", variant, want))
		if err != nil {
			reload <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		var body strings.Builder
		_, err = io.Copy(&body, resp.Body)
		reload <- answer{status: resp.StatusCode, body: body.String(), err: err}
	}()
	testload.Poll(t, "the playlist reload held", func() error {
		if n := metric(t, b.Env, "onair_hls_blocking_requests"); n < 1 {
			return fmt.Errorf("%v blocking requests", n)
		}
		return nil
	})

	p.Signal(syscall.SIGTERM)
	awaitLog(t, p, "shutting down")
	// New connections are refused at once, on both ports, while the
	// reload (and the publisher) carry on.
	for _, addr := range []string{strings.TrimPrefix(p.URL, "http://"), p.RTMP} {
		testload.Poll(t, "connections to "+addr+" refused", func() error {
			c, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				return nil
			}
			c.Close()
			return errors.New("a new connection was accepted during the shutdown")
		})
	}
	if len(reload) > 0 {
		t.Error("the reload was answered before new connections were refused")
	}
	select {
	case <-done:
		t.Error("ffmpeg was cut off before the requests in flight were drained")
	default:
	}

	{
		select {
		case a := <-reload:
			if a.err != nil || a.status != http.StatusOK {
				t.Fatalf("blocking reload in flight: %d %v\n%s", a.status, a.err, a.body)
			}
			if !strings.Contains(a.body, fmt.Sprintf("-%06d-p0.ts", want)) && !strings.Contains(a.body, fmt.Sprintf("-%06d.ts", want)) {
				t.Errorf("the reload's answer lacks part 0 of segment %d:\n%s", want, a.body)
			}
		case <-time.After(testload.Patience):
			t.Fatal("the blocking reload in flight got no answer")
		}
	}

	select {
	case err := <-closed:
		var ce *websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != websocket.CloseGoingAway {
			t.Errorf("chat socket ended with %v, want close 1001", err)
		}
	case <-time.After(testload.Patience):
		t.Fatal("the chat socket was not closed")
	}
	if st := p.Wait(20*time.Second + testload.Patience); !st.Success() {
		t.Fatalf("onair exited %v on SIGTERM:\n%s", st, p.Logs())
	}
	select {
	case <-done:
	case <-time.After(testload.Patience):
		t.Fatal("ffmpeg still publishing after the node stopped")
	}
	sent := sentSeconds(t, progress)

	// Another node, without the first one's files, finishes the show.
	q := onairtest.NewProcess(t, shared...)
	q.Start()
	qb := &onairtest.Show{Env: q.Client(), Token: b.Token, ID: b.ID}
	s := qb.Await(t, "archived", func(s map[string]any) bool { return s["archive"] == true })
	vodVariant := variantOf(t, s["video_url"].(string))
	_, _, vod := getText(t, vodVariant)
	got := probeDuration(t, vodVariant)
	if math.Abs(got-sent) > 1.5 {
		t.Errorf("archive plays %.2f s; ffmpeg sent %.2f s\n%s", got, sent, vod)
	}
	if d, _ := s["duration"].(float64); math.Abs(d-sent) > 1.5 {
		t.Errorf("show duration %.2f s; ffmpeg sent %.2f s", d, sent)
	}
}
