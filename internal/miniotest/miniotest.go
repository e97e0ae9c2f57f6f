// Package miniotest starts a real MinIO server for tests: an S3-compatible
// object store on 127.0.0.1 with its data in a temporary directory.
//
// The binary is $ONAIR_TEST_MINIO when set (then a missing or broken binary
// fails the test), otherwise `minio` on PATH or in $(go env GOPATH)/bin
// (then its absence skips the test with a hint, or fails it under CI, see
// testload.Skip). .ci/run installs it with go install into GOPATH/bin.
package miniotest

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onair/onair/internal/testload"
)

// Server is one running MinIO.
type Server struct {
	Addr      string // host:port of the S3 API
	AccessKey string
	SecretKey string
	t         testing.TB
	bin, dir  string
	console   string
	cmd       *exec.Cmd
	exited    chan error
	mu        sync.Mutex
	log       bytes.Buffer
}

// Binary finds the minio binary, or reports why there is none. required
// tells whether the caller asked for it explicitly (ONAIR_TEST_MINIO).
func Binary() (path string, required bool, err error) {
	if p := os.Getenv("ONAIR_TEST_MINIO"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", true, fmt.Errorf("ONAIR_TEST_MINIO=%s: %w", p, err)
		}
		return p, true, nil
	}
	if p, err := exec.LookPath("minio"); err == nil {
		return p, false, nil
	}
	gopath, err := exec.Command("go", "env", "GOPATH").Output()
	if err == nil {
		for _, dir := range filepath.SplitList(strings.TrimSpace(string(gopath))) {
			p := filepath.Join(dir, "bin", "minio")
			if _, err := os.Stat(p); err == nil {
				return p, false, nil
			}
		}
	}
	return "", false, fmt.Errorf("no minio binary: go install github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c, or set ONAIR_TEST_MINIO")
}

// Start runs MinIO for the test and stops it at the test's end. Without a
// binary it skips the test, unless ONAIR_TEST_MINIO asked for one or CI is
// set.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, required, err := Binary()
	if err != nil {
		if required {
			t.Fatal(err)
		}
		testload.Skip(t, "%v", err)
	}
	s := &Server{Addr: testload.FreeAddr(t), AccessKey: "onairtest", SecretKey: "onairtest-secret-key",
		t: t, bin: bin, dir: t.TempDir(), console: testload.FreeAddr(t)}
	t.Cleanup(s.Stop)
	s.run()
	return s
}

// run starts the server on s.Addr and s.dir and waits until it answers.
func (s *Server) run() {
	t := s.t
	t.Helper()
	cmd := exec.Command(s.bin, "server", s.dir, "--address", s.Addr, "--console-address", s.console, "--quiet")
	cmd.Env = append(os.Environ(),
		"MINIO_ROOT_USER="+s.AccessKey, "MINIO_ROOT_PASSWORD="+s.SecretKey,
		"MINIO_BROWSER=off", "MINIO_UPDATE=off")
	cmd.Stdout, cmd.Stderr = &lockedWriter{s}, &lockedWriter{s}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start minio: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	s.cmd, s.exited = cmd, exited
	// Ready when the liveness probe answers; a busy machine may take a
	// while, so the deadline only bounds a hang.
	deadline := time.Now().Add(testload.Patience)
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		resp, err := client.Get("http://" + s.Addr + "/minio/health/live")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case err := <-exited:
			s.exited <- err
			t.Fatalf("minio exited (%v):\n%s", err, s.Log())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("minio did not answer on %s within %s:\n%s", s.Addr, testload.Patience, s.Log())
		}
	}
}

// Stop kills the server (an outage); Restart brings it back with its data.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

// Restart runs the stopped server again, on the same address and data.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.run()
}

// URL is the ONAIR_STORAGE_URL of a bucket on this server.
func (s *Server) URL(bucket string) string {
	return fmt.Sprintf("s3://%s:%s@%s/%s?secure=false", s.AccessKey, s.SecretKey, s.Addr, bucket)
}

// Log is what MinIO printed so far.
func (s *Server) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

type lockedWriter struct{ s *Server }

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	return w.s.log.Write(p)
}
