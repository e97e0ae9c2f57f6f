// Package testload lets the test suite pass on a small, busy machine.
//
// `go test ./...` runs the test binaries of as many packages at once as
// the machine has CPUs, often beside a compiler or other work. Two rules
// keep that honest:
//
//   - Tests that run encoders, players or browsers (ffmpeg, GStreamer,
//     Chromium) call Heavy first: they take turns machine-wide, so two of
//     them never starve each other of the CPU they need in real time,
//     while light packages run beside them.
//   - Tests wait for the event they expect (Poll, or a channel with
//     Patience as its deadline), never for a fixed sleep sized for an idle
//     machine. A deadline bounds a hang; it is not a measure of speed.
//
// The package depends on nothing of OnAir, so any package's tests may
// import it.
package testload

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Patience is how long a test waits for something that should happen
// soon: an event, a process's "listening" line, an external tool's run. It
// only ends a hang, so it is generous for a loaded two-core machine.
const Patience = 2 * time.Minute

// Poll calls cond until it returns nil, with short pauses that lengthen
// to half a second, and fails the test if cond still fails after
// Patience. cond's last error says what was seen instead.
func Poll(t testing.TB, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(Patience)
	pause := 10 * time.Millisecond
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, Patience, err)
		}
		time.Sleep(pause)
		pause = min(2*pause, 500*time.Millisecond)
	}
}

// Skip skips a test that cannot run here (a tool or a server it needs is
// missing), except under CI (the CI variable set, as CI services and
// .ci/run set it), where a suite that does not run is a defect: there it
// fails the test.
func Skip(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("CI is set, so this fails rather than skips: "+format, args...)
	}
	t.Skipf(format, args...)
}

// LockFile is the file whose lock is the machine-wide turn of the heavy
// tests (of every test binary, of any checkout of OnAir on the machine).
func LockFile() string { return filepath.Join(os.TempDir(), "onair-heavy-tests.lock") }

// The process's turn: one heavy test of this test binary at a time, and
// the name of the test holding it (its subtests share it).
var (
	turn   = make(chan struct{}, 1)
	mu     sync.Mutex
	holder string
)

// Heavy waits until no other heavy test runs on the machine and keeps
// the turn until t (with its subtests) ends. Call it at the start of a
// test that runs ffmpeg, GStreamer or Chromium, before any deadline
// starts. A second call within the same test or its subtests returns at
// once.
func Heavy(t testing.TB) {
	t.Helper()
	name := t.Name()
	mu.Lock()
	if holder != "" && (name == holder || strings.HasPrefix(name, holder+"/")) {
		mu.Unlock()
		return
	}
	mu.Unlock()

	begin := time.Now()
	turn <- struct{}{}
	release, err := lockMachine(LockFile())
	if err != nil {
		<-turn
		t.Fatalf("testload: the heavy tests' lock %s: %v", LockFile(), err)
	}
	mu.Lock()
	holder = name
	mu.Unlock()
	if waited := time.Since(begin); waited > time.Second {
		t.Logf("waited %s for the turn of the heavy tests", waited.Round(time.Second))
	}
	t.Cleanup(func() {
		mu.Lock()
		holder = ""
		mu.Unlock()
		release()
		<-turn
	})
}

// FreeAddr returns a 127.0.0.1 address that was free a moment ago, for a
// child process (onair, MinIO) that must be told its port in advance.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
