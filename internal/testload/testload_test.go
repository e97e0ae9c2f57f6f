//go:build unix

package testload

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// held reports whether some open file description holds the machine-wide
// lock, by trying to take it without waiting on a description of our own.
func held(t *testing.T) bool {
	t.Helper()
	f, err := os.OpenFile(LockFile(), os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if err == nil {
		return false
	}
	if !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Fatal(err)
	}
	return true
}

func TestHeavyHoldsTheMachineLockUntilTheTestEnds(t *testing.T) {
	t.Run("holder", func(t *testing.T) {
		Heavy(t)
		if !held(t) {
			t.Fatal("Heavy returned without the lock held")
		}
		t.Run("subtest", func(t *testing.T) {
			Heavy(t) // the parent's turn: returns at once instead of waiting on itself
			Heavy(t)
		})
	})
	mu.Lock()
	h := holder
	mu.Unlock()
	if h != "" || len(turn) != 0 {
		t.Fatalf("after the test ended the turn is still taken (holder %q)", h)
	}
	// A later test takes its turn again (after any other test binary's).
	t.Run("next", func(t *testing.T) { Heavy(t) })
}

func TestPoll(t *testing.T) {
	calls := 0
	Poll(t, "the third call", func() error {
		if calls++; calls < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if calls != 3 {
		t.Fatalf("cond called %d times", calls)
	}
}

// TestSkipFailsUnderCI runs itself as a child: a test that cannot run
// skips on a workstation and fails under CI.
func TestSkipFailsUnderCI(t *testing.T) {
	if os.Getenv("TESTLOAD_CHILD") == "1" {
		Skip(t, "a tool is missing")
		return
	}
	for ci, want := range map[string]string{"": "--- SKIP", "true": "--- FAIL"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSkipFailsUnderCI$", "-test.v")
		cmd.Env = append(os.Environ(), "TESTLOAD_CHILD=1", "CI="+ci)
		out, err := cmd.CombinedOutput()
		if !strings.Contains(string(out), want) || (err == nil) != (ci == "") {
			t.Errorf("CI=%q: %v, want %s:\n%s", ci, err, want, out)
		}
	}
}
