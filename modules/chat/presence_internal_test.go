package chat

import (
	"bytes"
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

// A room learns a live show's viewer figure when it changes, and again
// after the show stopped and started, whatever the figure then.
func TestAudienceSentOnChange(t *testing.T) {
	h := NewLocalHub(slog.New(slog.DiscardHandler))
	const showID = 7
	r := &room{clients: map[*client]struct{}{}, viewers: map[string]int{}, audience: -1}
	h.rooms[showID] = r
	viewers, live, asked := 2, true, 0
	h.audience = func(id int64) (int, bool) {
		if id != showID {
			t.Errorf("asked about show %d", id)
		}
		asked++
		return viewers, live
	}
	sent := func() int {
		r.fmu.Lock()
		defer r.fmu.Unlock()
		n := bytes.Count(r.log, []byte(`"type":"viewers"`))
		r.log = nil
		return n
	}
	step := func(name string, want int) {
		t.Helper()
		r.fmu.Lock()
		r.flushing = true // keep the frames in the log to count them
		r.fmu.Unlock()
		h.tellAudience()
		if got := sent(); got != want {
			t.Errorf("%s: %d viewers events, want %d", name, got, want)
		}
	}
	step("first figure", 1)
	step("same figure", 0)
	viewers = 3
	step("new figure", 1)
	live = false
	step("stopped", 0)
	live = true
	step("live again, same figure", 1)
	if r.audience != 3 || asked != 5 {
		t.Errorf("audience %d after %d asks", r.audience, asked)
	}
}
