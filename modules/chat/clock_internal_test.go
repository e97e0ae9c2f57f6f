package chat

import (
	"runtime"
	"testing"
	"time"
)

// The room's fan-out clock is a token bucket: a quiet room flushes at
// once, flushBurst times back to back at most, then once every every;
// messages at about the room's rate go out at once rather than on a
// fixed tick.
func TestFlushCredit(t *testing.T) {
	const every = 50 * time.Millisecond
	var r room
	t0 := time.Unix(1_000_000, 0)
	for i := range flushBurst {
		if wait := r.takeFlush(t0, every); wait != 0 {
			t.Fatalf("flush %d of a quiet room waits %v", i+1, wait)
		}
	}
	if wait := r.takeFlush(t0, every); wait != every {
		t.Fatalf("a flush past the burst waits %v, want %v", wait, every)
	}
	if wait := r.takeFlush(t0.Add(every/5), every); wait != every*4/5 {
		t.Fatalf("a fifth of a period later the wait is %v, want %v", wait, every*4/5)
	}
	// Messages every period, each a little late or early: each goes out
	// at once (a fixed spacing from the last flush would hold the early
	// ones back).
	r = room{}
	at := t0
	for i := range 20 {
		jitter := time.Duration(i%3-1) * every / 10
		if wait := r.takeFlush(at.Add(jitter), every); wait != 0 {
			t.Fatalf("message %d, %v off its period: waits %v", i, jitter, wait)
		}
		at = at.Add(every)
	}
	// Above the rate, the bucket runs dry: the average is held to one
	// flush an every.
	r = room{}
	flushes := 0
	for ms := range 1000 {
		if r.takeFlush(t0.Add(time.Duration(ms)*time.Millisecond), every) == 0 {
			flushes++
		}
	}
	if want := 1000/int(every/time.Millisecond) + flushBurst; flushes > want {
		t.Fatalf("%d flushes in 1 s of a message a millisecond, want at most %d", flushes, want)
	}
}

// A flush keeps every core for at most about fanHoldAll; a bigger room's
// leaves one free. A small room is written by as many workers as it has
// stretches.
func TestFanWorkers(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, c := range []struct{ procs, sockets, want int }{
		{1, 10_000, 1},
		{2, 100, 1},
		{2, 300, 2},
		{2, 5_000, 2},  // 25 ms on each core
		{2, 5_001, 1},  // over: one core stays free
		{2, 10_000, 1}, // 100 ms of writes on one core
		{4, 10_000, 4},
		{4, 20_000, 3},
	} {
		runtime.GOMAXPROCS(c.procs)
		if got := fanWorkers(c.sockets); got != c.want {
			t.Errorf("GOMAXPROCS %d, %d sockets: %d workers, want %d", c.procs, c.sockets, got, c.want)
		}
	}
}
