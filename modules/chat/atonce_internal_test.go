package chat

import (
	"testing"
	"time"
)

// TestAtOnce: b runs while a does (a waits for b to begin), and a panic
// in b reaches the caller's goroutine, where a request's recovery can
// answer it, after a finished.
func TestAtOnce(t *testing.T) {
	began := make(chan struct{})
	aDone := false
	atOnce(func() {
		select {
		case <-began:
			aDone = true
		case <-time.After(10 * time.Second):
			t.Error("b did not begin while a ran")
		}
	}, func() { close(began) })
	if !aDone {
		t.Fatal("a did not finish")
	}

	aDone = false
	func() {
		defer func() {
			if r := recover(); r != "b failed" {
				t.Errorf("recovered %v, want b's panic", r)
			}
		}()
		atOnce(func() { aDone = true }, func() { panic("b failed") })
		t.Error("atOnce returned after b panicked")
	}()
	if !aDone {
		t.Error("a did not run")
	}
}
