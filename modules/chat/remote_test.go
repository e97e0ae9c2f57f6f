package chat_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/shows"
)

// TestRemoteShowEventInRoom: a show change made on node B reaches a room
// socket on node A exactly once. B publishes show.updated to the room and
// the hub fans it out over Redis; A's copy of the show event, which comes
// through the events stream (Remote), is not published again.
func TestRemoteShowEventInRoom(t *testing.T) {
	if os.Getenv(onairtest.MySQLEnv) == "" || os.Getenv(onairtest.RedisEnv) == "" {
		testload.Skip(t, "needs %s and %s (the README's test command sets both)", onairtest.MySQLEnv, onairtest.RedisEnv)
	}
	db := onairtest.FreshMySQL(t)
	prefix := fmt.Sprintf("onairtest:%d:", time.Now().UnixNano())
	a := onairtest.New(t, onairtest.Options{DatabaseURL: db, Redis: true, RedisPrefix: prefix})
	b := onairtest.New(t, onairtest.Options{DatabaseURL: db, Redis: true, RedisPrefix: prefix})
	t.Cleanup(func() { a.Core.Redis.Del(context.Background(), prefix+shows.EventsStream) })
	_, annTok := a.CreateUser("Ann Remote")
	_, benTok := a.CreateUser("Ben Remote")
	showID := onairtest.CreateShow(t, a, annTok, nil).ID

	// Subscribed after chat: once A's subscriber has the remote event,
	// chat's handler on A has run for it.
	var mu sync.Mutex
	remote := 0
	shows.From(a.Core).Subscribe(func(_ context.Context, ev shows.Event) {
		if ev.Show.ID == showID && ev.Type == shows.EventUpdated && ev.Remote {
			mu.Lock()
			remote++
			mu.Unlock()
		}
	})

	onA := dial(t, a.URL, showID, benTok, "")
	roomNames(t, a, annTok, showID, []string{"Ben Remote"})
	b.Do("PUT", fmt.Sprintf("/v1/shows/%d", showID), annTok, map[string]any{"description": "changed on B"}).Expect(t, http.StatusOK)
	testload.Poll(t, "the remote event on A", func() error {
		mu.Lock()
		defer mu.Unlock()
		if remote != 1 {
			return fmt.Errorf("%d remote events", remote)
		}
		return nil
	})
	// A message posted on A travels the room's bus after anything A's
	// handler published: every show.updated is in before it.
	a.Do("POST", fmt.Sprintf("/v1/shows/%d/chats", showID), benTok, map[string]any{"message": "sentinel"}).Expect(t, http.StatusCreated)
	updates := 0
	deadline := time.After(testload.Patience)
	for done := false; !done; {
		select {
		case ev, ok := <-onA.events:
			if !ok {
				t.Fatal("socket closed")
			}
			switch ev["type"] {
			case "show.updated":
				if ev["state"] == shows.EventCreated {
					// The show's creation on A, published to the room's
					// bus before the socket joined, may pass it after it
					// joined on a busy machine: not the change on B.
					continue
				}
				updates++
				if sh, _ := ev["show"].(map[string]any); sh == nil || sh["description"] != "changed on B" || ev["state"] != shows.EventUpdated {
					t.Errorf("show.updated on A: %v", ev)
				}
			case "chat.created":
				done = ev["chat"].(map[string]any)["message"] == "sentinel"
			}
		case <-deadline:
			t.Fatal("no sentinel message on A")
		}
	}
	if updates != 1 {
		t.Fatalf("the socket on A got show.updated %d times for one change on B, want once", updates)
	}
}
