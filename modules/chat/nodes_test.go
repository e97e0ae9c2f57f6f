package chat_test

import (
	"bytes"
	"context"
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

// node is one real `onair serve` process.
type node struct {
	url string
	cmd *exec.Cmd
	log *bytes.Buffer
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func startNode(t *testing.T, bin string, env []string) *node {
	t.Helper()
	addr := freeAddr(t)
	n := &node{url: "http://" + addr, log: &bytes.Buffer{}}
	n.cmd = exec.Command(bin, "serve")
	n.cmd.Env = append(append(os.Environ(), env...),
		"ONAIR_HTTP_ADDR="+addr, "ONAIR_PUBLIC_URL="+n.url, "ONAIR_RTMP_ADDR="+freeAddr(t), "ONAIR_DATA_DIR="+t.TempDir())
	n.cmd.Stdout, n.cmd.Stderr = n.log, n.log
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		n.cmd.Process.Signal(syscall.SIGTERM)
		n.cmd.Wait()
		if t.Failed() {
			t.Logf("node %s log:\n%s", n.url, n.log)
		}
	})
	for i := 0; i < 100; i++ {
		if resp, err := http.Get(n.url + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return n
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("node %s not ready:\n%s", n.url, n.log)
	return nil
}

// cli runs an onair command with the shared settings and returns stdout.
func cli(t *testing.T, bin string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(append(os.Environ(), env...), "ONAIR_DATA_DIR="+t.TempDir())
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("onair %v: %v\n%s", args, err, errb.String())
	}
	return out.String()
}

// TestTwoNodes runs two onair processes on one MySQL database and one
// Redis: a message posted on node A reaches a socket on node B, chat_users
// on A counts B's viewers, and a crashed node's viewers expire.
func TestTwoNodes(t *testing.T) {
	if os.Getenv(onairtest.MySQLEnv) == "" || os.Getenv(onairtest.RedisEnv) == "" {
		t.Skipf("needs %s and %s (CI sets both)", onairtest.MySQLEnv, onairtest.RedisEnv)
	}
	bin := filepath.Join(t.TempDir(), "onair")
	build := exec.Command("go", "build", "-o", bin, "github.com/onair/onair")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	shared := []string{
		"ONAIR_DATABASE_URL=" + onairtest.FreshMySQL(t),
		"ONAIR_REDIS_URL=" + os.Getenv(onairtest.RedisEnv),
		fmt.Sprintf("ONAIR_REDIS_PREFIX=onairtest:%d:", time.Now().UnixNano()),
		"ONAIR_LOG_LEVEL=debug",
	}
	a := startNode(t, bin, shared)
	var created struct {
		User struct{ ID int64 } `json:"user"`
	}
	json.Unmarshal([]byte(cli(t, bin, shared, "users", "create", "--name", "Ann Node", "--email", "ann@example.com")), &created)
	annTok := strings.TrimSpace(cli(t, bin, shared, "tokens", "create", "--user", "ann@example.com"))
	cli(t, bin, shared, "users", "create", "--name", "Ben Node", "--email", "ben@example.com")
	benTok := strings.TrimSpace(cli(t, bin, shared, "tokens", "create", "--user", "ben@example.com"))
	b := startNode(t, bin, shared)

	envA := &onairtest.Env{T: t, URL: a.url, Client: &http.Client{Timeout: 10 * time.Second}}
	envB := &onairtest.Env{T: t, URL: b.url, Client: &http.Client{Timeout: 10 * time.Second}}
	showID := createShow(t, envA, annTok, nil)

	onB := dial(t, b.url, showID, benTok, "")
	anonOnB := dial(t, b.url, showID, "", "0d9c8b7a-6f5e-4d3c-8b2a-1f0e9d8c7b6a")
	onA := dial(t, a.url, showID, annTok, "")
	roomNames(t, envA, annTok, showID, []string{"Ann Node", "Ben Node", "Guest 0d9c"})
	roomNames(t, envB, benTok, showID, []string{"Ann Node", "Ben Node", "Guest 0d9c"})

	envA.Do("POST", fmt.Sprintf("/v1/shows/%d/chats", showID), annTok, map[string]any{"message": "from A"}).Expect(t, http.StatusCreated)
	for _, s := range []*socket{onB, anonOnB, onA} {
		if ev := s.await("chat.created", nil); ev["chat"].(map[string]any)["message"] != "from A" {
			t.Errorf("got %v", ev)
		}
	}
	envB.Do("POST", fmt.Sprintf("/v1/shows/%d/chats", showID), benTok, map[string]any{"message": "from B"}).Expect(t, http.StatusCreated)
	if ev := onA.await("chat.created", nil); ev["chat"].(map[string]any)["message"] != "from B" {
		t.Errorf("A got %v", ev)
	}
	// The per-user rate limit is shared: a second post on the other node
	// within a second is refused.
	envA.Do("POST", fmt.Sprintf("/v1/shows/%d/chats", showID), benTok, map[string]any{"message": "again"}).Expect(t, http.StatusTooManyRequests)

	// Node B crashes: its viewers expire from A's chat_users.
	b.cmd.Process.Kill()
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		body := envA.Do("GET", fmt.Sprintf("/v1/shows/%d/chat_users", showID), annTok, nil).Expect(t, http.StatusOK).JSON(t)
		if int(body["count"].(float64)) == 1 {
			return
		}
		time.Sleep(time.Second)
	}
	t.Fatalf("node B's viewers did not expire")
}
