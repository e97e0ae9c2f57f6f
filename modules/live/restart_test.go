package live_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/onair/onair/internal/onairtest"
)

// process is a real `onair serve`, so a test can kill it mid-show.
type process struct {
	t    *testing.T
	bin  string
	env  []string
	http string
	rtmp string
	cmd  *exec.Cmd
	log  bytes.Buffer
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func buildOnair(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "onair")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/onair/onair").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

func newProcess(t *testing.T, bin string, extra ...string) *process {
	p := &process{t: t, bin: bin, http: freePort(t), rtmp: freePort(t)}
	data := t.TempDir()
	p.env = append([]string{
		"ONAIR_DATA_DIR=" + data, "ONAIR_HTTP_ADDR=" + p.http, "ONAIR_PUBLIC_URL=http://" + p.http,
		"ONAIR_RTMP_ADDR=" + p.rtmp, "ONAIR_RTMP_URL=rtmp://" + p.rtmp + "/live",
	}, extra...)
	t.Cleanup(func() {
		if p.cmd != nil && p.cmd.ProcessState == nil {
			p.cmd.Process.Signal(syscall.SIGTERM)
			p.cmd.Wait()
		}
		if t.Failed() {
			t.Logf("server log:\n%s", p.log.String())
		}
	})
	return p
}

func (p *process) run(args ...string) string {
	p.t.Helper()
	cmd := exec.Command(p.bin, args...)
	cmd.Env = append(os.Environ(), p.env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		p.t.Fatalf("onair %v: %v\n%s", args, err, errb.String())
	}
	return out.String()
}

func (p *process) start() {
	p.t.Helper()
	p.cmd = exec.Command(p.bin, "serve")
	p.cmd.Env = append(os.Environ(), p.env...)
	p.cmd.Stdout, p.cmd.Stderr = &p.log, &p.log
	if err := p.cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		if resp, err := http.Get("http://" + p.http + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	p.t.Fatalf("server not ready:\n%s", p.log.String())
}

func (p *process) kill() {
	p.cmd.Process.Kill()
	p.cmd.Wait()
}

// setup creates a user, a token and a show, and returns the broadcast.
func (p *process) setup(t *testing.T) *broadcast {
	p.run("users", "create", "--name", "Crash Test", "--email", "crash@example.com")
	token := strings.TrimSpace(p.run("tokens", "create", "--user", "crash@example.com"))
	env := &onairtest.Env{T: t, URL: "http://" + p.http, Client: &http.Client{Timeout: 10 * time.Second}}
	r := env.Do("POST", "/v1/shows", token, map[string]any{"name": "Crash Set", "description": "restarts"})
	var body struct {
		Show struct {
			ID        int64  `json:"id"`
			StreamKey string `json:"stream_key"`
		} `json:"show"`
	}
	json.Unmarshal(r.Body, &body)
	return &broadcast{env: env, token: token, id: body.Show.ID, key: body.Show.StreamKey, rtmp: "rtmp://" + p.rtmp + "/live"}
}

// TestRestartMidShowResumes kills the process in the middle of a live
// show: after the restart the show is still live and resumable, and the
// archive keeps every segment finished before the crash.
func TestRestartMidShowResumes(t *testing.T) {
	requireTools(t, "ffmpeg")
	p := newProcess(t, buildOnair(t))
	p.start()
	b := p.setup(t)
	_, done := publish(t, b.rtmp+"/"+b.key, 30, false)
	first := b.await(t, "live", 10*time.Second, isLive)
	time.Sleep(5 * time.Second)
	p.kill()
	<-done

	p.start()
	s := b.show(t)
	if !isLive(s) || s["start"] != first["start"] {
		t.Fatalf("after the restart: live %v start %v, want live since %v", s["live"], s["start"], first["start"])
	}
	_, done = publish(t, b.rtmp+"/"+b.key, 3, false)
	if err := <-done; err != nil {
		t.Fatalf("resume after restart: %v", err)
	}
	b.env.Do("POST", fmt.Sprintf("/v1/shows/%d/stop", b.id), b.token, nil).Expect(t, http.StatusOK)
	s = b.await(t, "archived", 10*time.Second, func(s map[string]any) bool { return s["archive"] == true })
	_, _, vod := fetch(t, s["video_url"].(string))
	// About 5 s before the crash (less the segment in progress) and 3 s after.
	if d := playlistSeconds(vod); d < 5 || d > 10 {
		t.Errorf("archive lasts %.2f s:\n%s", d, vod)
	}
	if !strings.Contains(vod, "#EXT-X-DISCONTINUITY") {
		t.Errorf("no discontinuity between before and after the crash:\n%s", vod)
	}
}

// TestRestartAfterWindowArchives: when nobody comes back within the
// reconnect window after a restart, the show completes and is archived.
func TestRestartAfterWindowArchives(t *testing.T) {
	requireTools(t, "ffmpeg")
	p := newProcess(t, buildOnair(t), "ONAIR_RECONNECT_WINDOW=2s")
	p.start()
	b := p.setup(t)
	_, done := publish(t, b.rtmp+"/"+b.key, 30, false)
	b.await(t, "live", 10*time.Second, isLive)
	time.Sleep(5 * time.Second)
	p.kill()
	<-done
	p.start()
	s := b.await(t, "archived", 20*time.Second, func(s map[string]any) bool { return s["archive"] == true })
	if s["complete"] != true || s["duration"] == nil {
		t.Fatalf("show after the window: %v", s)
	}
	_, _, vod := fetch(t, s["video_url"].(string))
	if d := playlistSeconds(vod); d < 3 {
		t.Errorf("archive lost the segments before the crash (%.2f s):\n%s", d, vod)
	}
}
