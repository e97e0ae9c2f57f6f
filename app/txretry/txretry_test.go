package txretry_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/onair/onair/app/txretry"
)

var (
	errRace  = errors.New("a race the next try may win")
	errFault = errors.New("a fault")
)

func isRace(err error) bool { return errors.Is(err, errRace) }

// Each pause is at random between half and all of 5 ms doubled once per
// retry before it, at most 100 ms.
func TestPauseGrowsWithinItsRange(t *testing.T) {
	for attempt := 1; attempt <= 12; attempt++ {
		d := min(txretry.FirstPause<<(attempt-1), txretry.MaxPause)
		lo, hi := d, time.Duration(0)
		for range 2000 {
			p := txretry.Pause(attempt)
			lo, hi = min(lo, p), max(hi, p)
		}
		if lo < d/2 || hi > d {
			t.Errorf("pause before try %d: between %v and %v, want between %v and %v", attempt+1, lo, hi, d/2, d)
		}
		if hi-lo < d/4 {
			t.Errorf("pause before try %d: between %v and %v, hardly random", attempt+1, lo, hi)
		}
	}
}

// A race is tried again after each pause (in the bubble's fake time, the
// pauses are exact), up to the attempts; the try that wins ends it.
func TestDoRetriesARaceAfterAPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var at []time.Duration
		start := time.Now()
		err := txretry.Do(context.Background(), 10, isRace, func(attempt int) error {
			if attempt != len(at) {
				t.Fatalf("try %d told it is try %d", len(at), attempt)
			}
			at = append(at, time.Since(start))
			if attempt < 5 {
				return errRace
			}
			return nil
		})
		if err != nil || len(at) != 6 {
			t.Fatalf("Do: %v after %d tries, want nil after 6", err, len(at))
		}
		for i := 1; i < len(at); i++ {
			d := min(txretry.FirstPause<<(i-1), txretry.MaxPause)
			if p := at[i] - at[i-1]; p < d/2 || p > d {
				t.Errorf("pause before try %d: %v, want between %v and %v", i+1, p, d/2, d)
			}
		}
	})
}

// A race that lasts uses up the attempts (at least one) and returns the
// last error; a fault, or any error without a retry rule, returns at once.
func TestDoGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, c := range []struct {
			name     string
			attempts int
			retry    func(error) bool
			err      error
			tries    int
		}{
			{"a lasting race", 10, isRace, errRace, 10},
			{"no attempts", 0, isRace, errRace, 1},
			{"a fault", 10, isRace, errFault, 1},
			{"no retry rule", 10, nil, errRace, 1},
		} {
			tries := 0
			start := time.Now()
			err := txretry.Do(context.Background(), c.attempts, c.retry, func(int) error { tries++; return c.err })
			if !errors.Is(err, c.err) || tries != c.tries {
				t.Errorf("%s: %v after %d tries, want %v after %d", c.name, err, tries, c.err, c.tries)
			}
			if c.tries == 1 && time.Since(start) != 0 {
				t.Errorf("%s: returned after %v, want at once", c.name, time.Since(start))
			}
		}
	})
}

// Do stops when ctx is done: in the middle of a pause (at the deadline,
// not the pause's end), or after a try that saw it end.
func TestDoStopsWithItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		defer cancel()
		start := time.Now()
		tries := 0
		err := txretry.Do(ctx, 100, isRace, func(int) error { tries++; return errRace })
		// Tries at 0, 2.5-5, 7.5-15 and 17.5-35 ms: the deadline falls in
		// the third pause or the fourth.
		if !errors.Is(err, errRace) || time.Since(start) != 30*time.Millisecond || tries < 3 || tries > 4 {
			t.Errorf("Do with a 30 ms deadline: %v after %v and %d tries, want the race at 30 ms after 3 or 4", err, time.Since(start), tries)
		}

		ctx, cancel = context.WithCancel(context.Background())
		tries = 0
		err = txretry.Do(ctx, 100, isRace, func(int) error { tries++; cancel(); return errRace })
		if !errors.Is(err, errRace) || tries != 1 {
			t.Errorf("Do canceled during its first try: %v after %d tries, want the race after 1", err, tries)
		}
	})
}
