package app

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A request's deadline context behaves as context.WithDeadline's: its
// deadline, Done closing when it passes with DeadlineExceeded, values of
// its parent; and it ends Canceled with the handler, whether or not
// anything waited on it before.
func TestDeadlineContext(t *testing.T) {
	type key struct{}
	parent := context.WithValue(context.Background(), key{}, "v")
	at := time.Now().Add(50 * time.Millisecond)
	d := &deadlineCtx{parent: parent, deadline: at}
	if got, ok := d.Deadline(); !ok || !got.Equal(at) {
		t.Fatalf("Deadline %v %v", got, ok)
	}
	if d.Value(key{}) != "v" {
		t.Fatal("parent's value lost")
	}
	child, cancel := context.WithCancel(d)
	defer cancel()
	<-child.Done()
	if !errors.Is(d.Err(), context.DeadlineExceeded) || !errors.Is(child.Err(), context.DeadlineExceeded) {
		t.Fatalf("after the deadline: %v, child %v", d.Err(), child.Err())
	}
	d.end()
	if !errors.Is(d.Err(), context.DeadlineExceeded) {
		t.Fatalf("ended after the deadline: %v", d.Err())
	}

	// Never waited on: no timer; ended, it is Canceled.
	idle := &deadlineCtx{parent: parent, deadline: time.Now().Add(time.Hour)}
	idle.end()
	if idle.cancel != nil {
		t.Fatal("a timer was started")
	}
	select {
	case <-idle.Done():
	default:
		t.Fatal("Done not closed after end")
	}
	if !errors.Is(idle.Err(), context.Canceled) || idle.Value(key{}) != "v" {
		t.Fatalf("ended: %v", idle.Err())
	}

	// Past its deadline without anyone waiting: DeadlineExceeded, as the
	// error handler expects of a request that ran out of time.
	late := &deadlineCtx{parent: parent, deadline: time.Now()}
	late.end()
	if !errors.Is(late.Err(), context.DeadlineExceeded) {
		t.Fatalf("ended late: %v", late.Err())
	}

	// An earlier deadline of the parent wins.
	soon, stop := context.WithDeadline(context.Background(), time.Now().Add(time.Minute))
	defer stop()
	want, _ := soon.Deadline()
	if got, _ := (&deadlineCtx{parent: soon, deadline: time.Now().Add(time.Hour)}).Deadline(); !got.Equal(want) {
		t.Fatalf("Deadline %v, want the parent's %v", got, want)
	}
}
