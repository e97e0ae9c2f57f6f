package chat_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/onair/onair/internal/onairtest"
)

// TestTwoNodes runs two onair processes on one MySQL database and one
// Redis: a message posted on node A reaches a socket on node B, chat_users
// on A counts B's viewers, and a crashed node's viewers expire.
func TestTwoNodes(t *testing.T) {
	if os.Getenv(onairtest.MySQLEnv) == "" || os.Getenv(onairtest.RedisEnv) == "" {
		t.Skipf("needs %s and %s (CI sets both)", onairtest.MySQLEnv, onairtest.RedisEnv)
	}
	shared := []string{
		"ONAIR_DATABASE_URL=" + onairtest.FreshMySQL(t),
		"ONAIR_REDIS_URL=" + os.Getenv(onairtest.RedisEnv),
		fmt.Sprintf("ONAIR_REDIS_PREFIX=onairtest:%d:", time.Now().UnixNano()),
		"ONAIR_LOG_LEVEL=debug",
	}
	a := onairtest.NewProcess(t, shared...)
	a.Start()
	a.Run("users", "create", "--name", "Ann Node", "--email", "ann@example.com")
	annTok := strings.TrimSpace(a.Run("tokens", "create", "--user", "ann@example.com"))
	a.Run("users", "create", "--name", "Ben Node", "--email", "ben@example.com")
	benTok := strings.TrimSpace(a.Run("tokens", "create", "--user", "ben@example.com"))
	b := onairtest.NewProcess(t, shared...)
	b.Start()

	envA, envB := a.Client(), b.Client()
	showID := createShow(t, envA, annTok, nil)

	onB := dial(t, b.URL, showID, benTok, "")
	anonOnB := dial(t, b.URL, showID, "", "0d9c8b7a-6f5e-4d3c-8b2a-1f0e9d8c7b6a")
	onA := dial(t, a.URL, showID, annTok, "")
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
	b.Kill()
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
