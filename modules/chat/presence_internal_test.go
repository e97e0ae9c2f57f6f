package chat

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"
)

// A presence event names at most maxPresenceList viewers who joined and
// as many who left, however many did; its count is everyone's.
func TestPresenceListsBounded(t *testing.T) {
	h := NewLocalHub(slog.New(slog.DiscardHandler))
	const showID = 1
	r := &room{clients: map[*client]struct{}{}, viewers: map[string]int{}}
	h.rooms[showID] = r
	const arrivals = maxPresenceList + 10
	for i := range arrivals {
		v := Viewer{AnonID: fmt.Sprintf("00000000-0000-4000-8000-%012d", i)}
		r.viewers[v.Key()] = 1
		h.presenceChanged(showID, &v, nil)
		h.presenceChanged(showID, nil, &v)
	}
	h.flushPresence(showID) // before its timer: the event goes out now
	ev := <-h.bus.(*localBus).events
	var got Event
	if err := json.Unmarshal(ev.payload, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Joined) != maxPresenceList || len(got.Left) != maxPresenceList {
		t.Errorf("joined %d, left %d: want %d of each", len(got.Joined), len(got.Left), maxPresenceList)
	}
	if got.Count == nil || *got.Count != arrivals {
		t.Errorf("count %v, want %d", got.Count, arrivals)
	}
}
