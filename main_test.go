package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
)

// TestNewUserPath is the README's first five minutes, with the real binary:
// start it on an empty SQLite database, read the first-run hint, create a
// user and a token with the CLI, call /v1/users/me with the token, stop it
// with SIGTERM.
func TestNewUserPath(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	bin := onairtest.Binary(t)
	// A clean environment: only what a shell would have, no ONAIR_* of the
	// CI around us, and the data in ./data of the working directory.
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "ONAIR_HTTP_ADDR=127.0.0.1:0", "ONAIR_RTMP_ADDR=127.0.0.1:0"}
	onair := func(args ...string) *exec.Cmd {
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		cmd.Env = env
		return cmd
	}

	server := onair()
	var serverErr onairtest.LockedBuffer
	server.Stderr = &serverErr
	server.Stdout = io.Discard
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- server.Wait() }()
	t.Cleanup(func() { server.Process.Kill() }) // no-op once it has exited

	addrRE := regexp.MustCompile(`msg="onair serving".* http=(\S+)`)
	var base string
	for deadline := time.Now().Add(testload.Patience); base == "" && time.Now().Before(deadline); {
		select {
		case err := <-exited:
			t.Fatalf("onair exited (%v):\n%s", err, serverErr.String())
		case <-time.After(25 * time.Millisecond):
		}
		if m := addrRE.FindStringSubmatch(serverErr.String()); m != nil {
			base = "http://" + m[1]
		}
	}
	if base == "" {
		t.Fatalf("onair did not say where it listens:\n%s", serverErr.String())
	}
	for _, want := range []string{"OnAir has no users yet", "/signup", "/admin", "onair users create", "onair tokens create --user"} {
		if !strings.Contains(serverErr.String(), want) {
			t.Fatalf("first-run hint lacks %q:\n%s", want, serverErr.String())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "onair.db")); err != nil {
		t.Fatalf("no SQLite database in ./data: %v", err)
	}

	run := func(args ...string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		cmd := onair(args...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("onair %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		return stdout.String()
	}
	var created struct {
		User struct {
			ID    int64  `json:"id"`
			Email string `json:"email"`
		} `json:"user"`
	}
	if err := json.Unmarshal([]byte(run("users", "create", "--name", "Nina New", "--email", "nina@example.com")), &created); err != nil || created.User.ID == 0 {
		t.Fatalf("users create: %v %+v", err, created)
	}
	token := strings.TrimSuffix(run("tokens", "create", "--user", "nina@example.com"), "\n")

	req, _ := http.NewRequest("GET", base+"/v1/users/me", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var me struct {
		User struct {
			ID   int64  `json:"id"`
			Name string `json:"name"`
		} `json:"user"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(body, &me) != nil || me.User.ID != created.User.ID || me.User.Name != "Nina New" {
		t.Fatalf("GET /v1/users/me: %d %s", resp.StatusCode, body)
	}

	server.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("onair did not exit cleanly on SIGTERM: %v\n%s", err, serverErr.String())
		}
	case <-time.After(testload.Patience):
		t.Fatalf("onair did not stop on SIGTERM within %s:\n%s", testload.Patience, serverErr.String())
	}
}
