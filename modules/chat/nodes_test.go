package chat_test

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
)

// TestTwoNodes runs two onair processes on one MySQL database and one
// Redis: a message posted on node A reaches a socket on node B, chat_users
// on A counts B's viewers, and a crashed node's viewers expire.
func TestTwoNodes(t *testing.T) {
	if os.Getenv(onairtest.MySQLEnv) == "" || os.Getenv(onairtest.RedisEnv) == "" {
		testload.Skip(t, "needs %s and %s (the README's test command sets both)", onairtest.MySQLEnv, onairtest.RedisEnv)
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
	showID := onairtest.CreateShow(t, envA, annTok, nil).ID

	onB := dial(t, b.URL, showID, benTok, "")
	// The viewer cookie node A issues is good on node B (one secret per
	// install): the viewer has the same id in the room from either node.
	first := dial(t, a.URL, showID, "", "")
	id := roomAnonIDs(t, envA, annTok, showID, 1)[0]
	first.conn.Close()
	testload.Poll(t, "the viewer gone from the room", func() error {
		if ids := roomAnonIDs(t, envA, annTok, showID, -1); len(ids) != 0 {
			return fmt.Errorf("still %v", ids)
		}
		return nil
	})
	anonOnB := dial(t, b.URL, showID, "", first.cookie)
	if anonOnB.cookie != first.cookie {
		t.Errorf("node B replaced node A's viewer cookie")
	}
	onA := dial(t, a.URL, showID, annTok, "")
	roomNames(t, envA, annTok, showID, []string{"Ann Node", "Ben Node", "Guest " + id[:4]})
	roomNames(t, envB, benTok, showID, []string{"Ann Node", "Ben Node", "Guest " + id[:4]})
	if got := roomAnonIDs(t, envB, benTok, showID, 1); got[0] != id {
		t.Errorf("the viewer is %s through node B, %s through node A", got[0], id)
	}

	envA.Do("POST", fmt.Sprintf("/v1/shows/%d/chats", showID), annTok, map[string]any{"message": "from A"}).Expect(t, http.StatusCreated)
	for _, s := range []*socket{onB, anonOnB, onA} {
		if ev := s.await("chat.created", nil); ev["chat"].(map[string]any)["message"] != "from A" {
			t.Errorf("got %v", ev)
		}
	}
	// The per-user rate limit is shared: a second post on the other node
	// within a second is refused. A pair of posts that a loaded machine
	// spreads over more than the second proves nothing either way; it is
	// tried again.
	for attempt := 1; ; attempt++ {
		sent := time.Now()
		envB.Do("POST", fmt.Sprintf("/v1/shows/%d/chats", showID), benTok, map[string]any{"message": "from B"}).Expect(t, http.StatusCreated)
		r := envA.Do("POST", fmt.Sprintf("/v1/shows/%d/chats", showID), benTok, map[string]any{"message": "again"})
		if r.Status == http.StatusTooManyRequests {
			break
		}
		if took := time.Since(sent); took < time.Second || attempt == 5 {
			t.Fatalf("a second post %s after the first, on the other node: %d %s", took, r.Status, r.Body)
		}
		time.Sleep(1100 * time.Millisecond) // the window of the post that went through passes
	}
	fromB := func(ev map[string]any) bool { return ev["chat"].(map[string]any)["message"] == "from B" }
	onA.await("chat.created", fromB)

	// Node B crashes: its viewers expire from A's chat_users.
	b.Kill()
	testload.Poll(t, "node B's viewers expired from chat_users", func() error {
		body := envA.Do("GET", fmt.Sprintf("/v1/shows/%d/chat_users", showID), annTok, nil).Expect(t, http.StatusOK).JSON(t)
		if n := int(body["count"].(float64)); n != 1 {
			return fmt.Errorf("count %d", n)
		}
		return nil
	})
}
