package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/onair/onair/bench/internal/benchkit"
)

// nginxConf is the peer: nginx with libnginx-mod-rtmp packaging HLS with
// the same fragment length as OnAir, and its http server serving that
// directory (/hls/) and a directory of copied files (/static/).
const nginxConf = `load_module %[1]s;
%[2]s
worker_processes %[3]d;
pid %[4]s/nginx.pid;
error_log %[4]s/logs/error.log warn;
events { worker_connections 4096; }
rtmp {
  server {
    listen %[5]s;
    chunk_size 4096;
    application live {
      live on;
      hls on;
      hls_path %[4]s/hls;
      hls_fragment 2s;
      hls_playlist_length 12s;
    }
  }
}
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 1000000;
  client_body_temp_path %[4]s/tmp/body;
  proxy_temp_path %[4]s/tmp/proxy;
  fastcgi_temp_path %[4]s/tmp/fastcgi;
  uwsgi_temp_path %[4]s/tmp/uwsgi;
  scgi_temp_path %[4]s/tmp/scgi;
  types { application/vnd.apple.mpegurl m3u8; video/mp2t ts; }
  server {
    listen %[6]s;
    location /hls/ {
      alias %[4]s/hls/;
      add_header Cache-Control no-cache;
      add_header Access-Control-Allow-Origin *;
    }
    location /static/ {
      alias %[4]s/static/;
      add_header Access-Control-Allow-Origin *;
    }
  }
}
`

// nginx is one running nginx with its temporary prefix.
type nginx struct {
	prefix   string
	rtmpAddr string
	httpAddr string
	cmd      *exec.Cmd
	exited   chan error
	confText string
}

func startNginx(prefix, module string, workers int) (*nginx, error) {
	rtmpAddr, err := benchkit.FreeAddr()
	if err != nil {
		return nil, err
	}
	httpAddr, err := benchkit.FreeAddr()
	if err != nil {
		return nil, err
	}
	for _, d := range []string{"conf", "logs", "hls", "static", "tmp"} {
		if err := os.MkdirAll(filepath.Join(prefix, d), 0o755); err != nil {
			return nil, err
		}
	}
	user := "" // workers keep the caller's user unless nginx starts as root
	if os.Geteuid() == 0 {
		user = "user root;"
	}
	n := &nginx{prefix: prefix, rtmpAddr: rtmpAddr, httpAddr: httpAddr}
	n.confText = fmt.Sprintf(nginxConf, module, user, workers, prefix, rtmpAddr, httpAddr)
	conf := filepath.Join(prefix, "conf", "nginx.conf")
	if err := os.WriteFile(conf, []byte(n.confText), 0o644); err != nil {
		return nil, err
	}
	n.cmd = exec.Command("nginx", "-p", prefix, "-c", conf, "-e", filepath.Join(prefix, "logs", "error.log"), "-g", "daemon off;")
	out, err := os.Create(filepath.Join(prefix, "logs", "stderr.log"))
	if err != nil {
		return nil, err
	}
	n.cmd.Stdout, n.cmd.Stderr = out, out
	if err := n.cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("start nginx: %w", err)
	}
	n.exited = make(chan error, 1)
	go func() { n.exited <- n.cmd.Wait(); out.Close() }()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-n.exited:
			log, _ := os.ReadFile(filepath.Join(prefix, "logs", "stderr.log"))
			elog, _ := os.ReadFile(filepath.Join(prefix, "logs", "error.log"))
			return nil, fmt.Errorf("nginx exited at start-up: %v\n%s%s", err, log, elog)
		default:
		}
		if listening(rtmpAddr) && listening(httpAddr) {
			return n, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	n.stop()
	return nil, fmt.Errorf("nginx did not listen within 10 s")
}

func listening(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// pids are the master and its workers.
func (n *nginx) pids() []int {
	master := n.cmd.Process.Pid
	return append([]int{master}, benchkit.ChildPIDs(master)...)
}

func (n *nginx) stop() {
	if n.exited == nil {
		return
	}
	n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.exited:
	case <-time.After(10 * time.Second):
		n.cmd.Process.Kill()
		<-n.exited
	}
	n.exited = nil
}
