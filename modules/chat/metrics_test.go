package chat_test

import (
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"testing"

	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
)

// Each node measures its share of a message's delivery: the room's flush
// (onair_chat_flush_seconds) and the message's wait from its arrival to
// the end of the flush that carried it (onair_chat_delivery_seconds).
func TestDeliveryMetrics(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{})
	_, tok := env.CreateUser("Metrics Host")
	showID := onairtest.CreateShow(t, env, tok, nil).ID
	a := dial(t, env.URL, showID, tok, "")
	dial(t, env.URL, showID, "", "")

	count := func(name string) int {
		text := string(env.Do("GET", "/metrics", "", nil).Expect(t, http.StatusOK).Body)
		m := regexp.MustCompile(`(?m)^` + name + `_count (\d+)$`).FindStringSubmatch(text)
		if m == nil {
			t.Fatalf("no %s in /metrics:\n%s", name, grep(text, "onair_chat"))
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	flushes := count("onair_chat_flush_seconds")
	if n := count("onair_chat_delivery_seconds"); n != 0 {
		t.Fatalf("%d deliveries timed before any message", n)
	}
	env.Do("POST", chatPath(showID, "/chats"), tok, map[string]any{"message": "timed"}).Expect(t, http.StatusCreated)
	a.await("chat.created", nil)
	// The flush is timed once every socket has been written: just after
	// the socket above read it.
	testload.Poll(t, "one delivery timed", func() error {
		if n := count("onair_chat_delivery_seconds"); n != 1 {
			return fmt.Errorf("%d deliveries timed", n)
		}
		if n := count("onair_chat_flush_seconds"); n <= flushes {
			return fmt.Errorf("flushes timed: %d, %d before the message", n, flushes)
		}
		return nil
	})
}
