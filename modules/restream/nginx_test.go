package restream_test

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/live"
	"github.com/onair/onair/modules/restream"
	"github.com/onair/onair/modules/webhooks"
)

// nginxRTMPModule is where Debian's libnginx-mod-rtmp puts the module.
const nginxRTMPModule = "/usr/lib/nginx/modules/ngx_rtmp_module.so"

// startNginxRTMP runs nginx with the RTMP module on a free port, recording
// every stream of the application "live" to dir, and returns its address.
func startNginxRTMP(t *testing.T, dir string) string {
	t.Helper()
	if _, err := exec.LookPath("nginx"); err != nil {
		testload.Skip(t, "nginx is not on PATH (apt-get install nginx libnginx-mod-rtmp)")
	}
	if _, err := os.Stat(nginxRTMPModule); err != nil {
		testload.Skip(t, "nginx's RTMP module is not installed (apt-get install libnginx-mod-rtmp)")
	}
	addr := testload.FreeAddr(t)
	conf := filepath.Join(dir, "nginx.conf")
	os.WriteFile(conf, []byte(fmt.Sprintf(`load_module %s;
daemon off;
master_process off;
pid %s/nginx.pid;
error_log %s/error.log info;
events { worker_connections 64; }
rtmp {
	server {
		listen %s;
		application live {
			live on;
			record all;
			record_path %s;
			record_unique off;
		}
	}
}
`, nginxRTMPModule, dir, dir, addr, dir)), 0o644)
	cmd := exec.Command("nginx", "-p", dir, "-c", conf)
	out := &onairtest.LockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			t.Logf("nginx:\n%s\n%s", out.String(), log)
		}
	})
	testload.Poll(t, "nginx listening", func() error {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return err
		}
		c.Close()
		return nil
	})
	return addr
}

// TestRestreamToNginxRTMP: a show is pushed to nginx-rtmp, which records
// what it receives; the recording decodes as H.264 and AAC.
func TestRestreamToNginxRTMP(t *testing.T) {
	requireTools(t, "ffmpeg", "ffprobe")
	dir := t.TempDir()
	nginx := startNginxRTMP(t, dir)

	a := onairtest.New(t, onairtest.Options{Configure: func(c *app.Config) { c.Set(webhooks.SettingAllowPrivate, true) }})
	rm, _ := onairtest.Module[*restream.Module](a)
	rm.SetBackoff(100 * time.Millisecond)
	_, tok := a.CreateUser("Dee Jay")
	const key = "nginx-stream-key-0123"
	a.Do("POST", "/v1/destinations", tok, map[string]any{"name": "nginx", "url": "rtmp://" + nginx + "/live/" + key}).Expect(t, http.StatusCreated)
	created := onairtest.CreateShow(t, a, tok, map[string]any{"name": "To nginx", "description": "restream"})
	id, showKey := created.ID, created.Key
	lm, _ := onairtest.Module[*live.Module](a)
	publish(t, "rtmp://"+lm.RTMPAddr()+"/live/"+showKey)

	testload.Poll(t, "the destination connected", func() error {
		dh := destination(health(t, a, tok, id))
		if dh == nil || dh["state"] != restream.StateConnected || dh["bitrate"].(float64) <= 0 {
			return fmt.Errorf("destination health %v", dh)
		}
		return nil
	})
	rec := filepath.Join(dir, key+".flv")
	testload.Poll(t, "nginx recording 3 s", func() error {
		out, err := exec.Command("ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", rec).Output()
		if err != nil {
			return fmt.Errorf("ffprobe: %v", err)
		}
		var d float64
		fmt.Sscan(strings.TrimSpace(string(out)), &d)
		if d < 3 {
			return fmt.Errorf("%.2f s recorded", d)
		}
		return nil
	})
	if got := probe(t, rec); !strings.Contains(got, "h264 240p") || !strings.Contains(got, "aac") {
		t.Fatalf("nginx's recording: %q", got)
	}
	if strings.Contains(a.Logs(), key) {
		t.Errorf("the key is in the log")
	}
}
