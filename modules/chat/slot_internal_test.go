package chat

import "testing"

// A socket's place is taken before the upgrade and given back exactly
// once: by the socket when it ends, by prepareSocket when the upgrade
// fails, or by the grace timer when an answered upgrade never starts its
// socket (then the socket may not claim it any more).
func TestSocketSlots(t *testing.T) {
	a := &addrCount{n: map[string]int{}}
	s1, s2 := a.reserve("203.0.113.7", 2, nil), a.reserve("203.0.113.7", 2, nil)
	if s1 == nil || s2 == nil {
		t.Fatal("places under the cap refused")
	}
	if a.reserve("203.0.113.7", 2, nil) != nil {
		t.Fatal("a third place of two given")
	}
	if a.reserve("203.0.113.8", 2, nil) == nil {
		t.Fatal("another address refused")
	}
	if !s1.claim() {
		t.Fatal("a fresh place could not be claimed")
	}
	s1.expire() // a claimed place does not expire
	s1.release()
	s1.release()
	if got := a.n["203.0.113.7"]; got != 1 {
		t.Fatalf("%d places held after one release (twice), want 1", got)
	}
	s2.expire()
	if s2.claim() {
		t.Fatal("an expired place was claimed")
	}
	s2.release()
	if _, ok := a.n["203.0.113.7"]; ok {
		t.Fatalf("places left: %v", a.n)
	}
}
