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

	"github.com/onair/onair/admin/admintest"
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
	// The README's own line, as a reader pastes it, and the banner's.
	readmeArgs := readmeQuickStart(t)
	if banner := "onair " + strings.Join(quoteArgs(readmeArgs), " "); !strings.Contains(serverErr.String(), banner) {
		t.Errorf("the README's quick start runs %q, which the first-run hint does not:\n%s", banner, serverErr.String())
	}
	if err := json.Unmarshal([]byte(run(readmeArgs...)), &created); err != nil || created.User.ID == 0 {
		t.Fatalf("users create: %v %+v", err, created)
	}
	token := strings.TrimSuffix(run("tokens", "create", "--user", created.User.Email), "\n")

	// That user opens the staff console.
	console := admintest.New(t, &onairtest.Env{T: t, URL: base, Client: &http.Client{Timeout: testload.Patience}})
	if r := console.SignIn(created.User.Email, readmeFlag(readmeArgs, "--password")); r.Status != http.StatusSeeOther {
		t.Fatalf("the README's user signing in to the console: %d %s", r.Status, r.Body)
	}
	if r := console.Get("/admin"); r.Status != http.StatusOK {
		t.Errorf("the README's user opening /admin: %d", r.Status)
	}

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
	if resp.StatusCode != 200 || json.Unmarshal(body, &me) != nil || me.User.ID != created.User.ID || me.User.Name != readmeFlag(readmeArgs, "--name") {
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

// readmeQuickStart is the `go run . users create` line of README.md's
// quick start, split as a shell would (it quotes with ' and ").
func readmeQuickStart(t *testing.T) []string {
	t.Helper()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(readme), "\n") {
		if rest, ok := strings.CutPrefix(line, "go run . users create "); ok {
			return append([]string{"users", "create"}, shellWords(t, rest)...)
		}
	}
	t.Fatal("README.md has no `go run . users create` line")
	return nil
}

func shellWords(t *testing.T, s string) []string {
	var words []string
	var cur strings.Builder
	var quote rune
	inWord := false
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ':
			if inWord {
				words, inWord = append(words, cur.String()), false
				cur.Reset()
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		t.Fatalf("unclosed quote in %q", s)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// quoteArgs writes arguments back as the README and the hint do.
func quoteArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		switch {
		case !strings.Contains(a, " "):
			out[i] = a
		case strings.HasPrefix(args[max(i-1, 0)], "--password"):
			out[i] = "'" + a + "'"
		default:
			out[i] = `"` + a + `"`
		}
	}
	return out
}

func readmeFlag(args []string, name string) string {
	for i, a := range args {
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}
