package chat

import (
	"fmt"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/onair/onair/internal/testload"
)

// A message that comes while a room's flush is under way reaches, in that
// flush, the sockets the flush has not written yet; the next flush gives
// it to those written before it came. So a message waits for at most one
// flush of a big room, not for the rest of one and then a whole other.
// The room here has a stretch of fanStretch sockets and one socket after
// it; message 2 comes as the flush takes that last socket's stretch. The
// last socket must have both messages before the second flush begins;
// every socket ends with 1 then 2, each once.
func TestMessageJoinsFlushUnderWay(t *testing.T) {
	h := NewLocalHub(slog.New(slog.DiscardHandler))
	const showID = 3
	r := &room{clients: map[*client]struct{}{}, viewers: map[string]int{}, audience: -1}
	h.rooms[showID] = r
	const n = fanStretch + 1
	got := map[*client]chan int{}
	for i := range n {
		server, peer := net.Pipe()
		c := newClient(Viewer{AnonID: fmt.Sprint(i)}, nil, server, time.Minute)
		r.clients[c] = struct{}{}
		ch := make(chan int, 4)
		got[c] = ch
		go readEvents(peer, ch)
		t.Cleanup(func() { c.drop(nil); peer.Close() })
	}
	// The list in the order the flushes take it (kept while no one joins
	// or leaves): the last socket is the one alone in the second stretch.
	list := h.sockets(showID, r)
	lastGot := got[list[n-1]]
	event := func(n int) []byte { return []byte(fmt.Sprintf(`{"type":"chat.created","n":%d,"pad":""}`, n)) }

	var (
		mu       sync.Mutex
		flushes  int
		appended bool
	)
	h.stretchHook = func(start int) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case start == fanStretch && !appended:
			appended = true
			h.deliver(showID, event(2))
		case start == 0:
			flushes++
			if flushes == 2 {
				// The second flush begins: the last socket has had both.
				for _, want := range []int{1, 2} {
					select {
					case n := <-lastGot:
						if n != want {
							t.Errorf("the last socket got message %d, want %d", n, want)
						}
					case <-time.After(testload.Patience):
						t.Errorf("the second flush began before the last socket had message %d", want)
						return
					}
				}
			}
		}
	}
	h.deliver(showID, event(1))

	for i, c := range list[:n-1] {
		for _, want := range []int{1, 2} {
			select {
			case n := <-got[c]:
				if n != want {
					t.Fatalf("socket %d got message %d, want %d", i, n, want)
				}
			case <-time.After(testload.Patience):
				t.Fatalf("socket %d never got message %d", i, want)
			}
		}
	}
	testload.Poll(t, "the room's flushes ended", func() error {
		r.fmu.Lock()
		defer r.fmu.Unlock()
		if r.flushing || r.timed {
			return fmt.Errorf("flushing %v, timed %v", r.flushing, r.timed)
		}
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	if flushes != 2 {
		t.Errorf("%d flushes, want 2", flushes)
	}
	r.fmu.Lock()
	defer r.fmu.Unlock()
	if len(r.log) != 0 {
		t.Errorf("the log still holds %d bytes every socket has", len(r.log))
	}
	for i, c := range list {
		select {
		case n := <-got[c]:
			t.Errorf("socket %d got message %d again", i, n)
		default:
		}
	}
}
