package outbox

import (
	"io"
	"log/slog"
	"testing"
)

// TestSeenSet: the dedupe remembers the last n ids; an id pushed out by n
// newer ones counts as new again.
func TestSeenSet(t *testing.T) {
	s := newSeenSet(3)
	for _, id := range []int64{1, 2, 3} {
		if !s.add(id) {
			t.Fatalf("%d is new", id)
		}
	}
	if s.add(1) || s.add(3) {
		t.Fatal("a remembered id counted as new")
	}
	if !s.add(4) { // pushes 1 out
		t.Fatal("4 is new")
	}
	if !s.add(1) {
		t.Fatal("1 was pushed out by three newer ids, so it is new again")
	}
	if s.add(4) || len(s.ids) != 3 {
		t.Fatalf("holds %d ids, want 3", len(s.ids))
	}
}

// TestRelayQueueFull: a commit never waits for the relay; rows beyond the
// queue are left to the outbox sweep, but are still this node's own (the
// reader will not deliver them back).
func TestRelayQueueFull(t *testing.T) {
	o := &Outbox{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	r := newRelay(o, nil, "test:events", 100)
	r.queue = make(chan []Row, 1)
	r.committed([]Row{{ID: 1}})
	r.committed([]Row{{ID: 2}}) // the queue is full: returns at once
	if len(r.queue) != 1 {
		t.Fatalf("queue holds %d batches, want 1", len(r.queue))
	}
	if r.seen.add(1) || r.seen.add(2) {
		t.Fatal("a committed row is not marked as this node's")
	}
}
