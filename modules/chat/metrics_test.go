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
// the end of the flush after which every socket has it
// (onair_chat_delivery_seconds).
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
	// Counted from here: another event of the room (a show change
	// committed before the sockets came but delivered after, on a busy
	// machine) may have been timed already, and is counted below.
	flushes, deliveries := count("onair_chat_flush_seconds"), count("onair_chat_delivery_seconds")
	env.Do("POST", chatPath(showID, "/chats"), tok, map[string]any{"message": "timed"}).Expect(t, http.StatusCreated)
	var others []any // the room's other events that socket a heard meanwhile
	for {
		ev := a.await("", nil)
		if ev["type"] == "chat.created" {
			break
		}
		if ev["type"] != "presence" {
			others = append(others, ev["type"])
		}
	}
	// The flush is timed once every socket has been written: just after
	// the socket above read it. One delivery timed for the message, not
	// one a socket (two here).
	testload.Poll(t, "one delivery timed", func() error {
		switch n := count("onair_chat_delivery_seconds") - deliveries; {
		case n > 1+len(others):
			t.Fatalf("%d deliveries timed for one message to two sockets (the room's other events meanwhile: %v)", n, others)
		case n < 1:
			return fmt.Errorf("%d deliveries timed", n)
		}
		if n := count("onair_chat_flush_seconds"); n <= flushes {
			return fmt.Errorf("flushes timed: %d, %d before the message", n, flushes)
		}
		return nil
	})
}
