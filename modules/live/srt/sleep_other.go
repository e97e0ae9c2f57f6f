//go:build !linux

package srt

import "time"

// sleeper waits out the listener's ticks on a Go timer.
type sleeper struct {
	t      *time.Timer
	closed chan struct{}
}

func newSleeper() (*sleeper, error) {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &sleeper{t: t, closed: make(chan struct{})}, nil
}

// sleep returns after d, or with an error once stop was called.
func (s *sleeper) sleep(d time.Duration) error {
	s.t.Reset(d)
	select {
	case <-s.closed:
		s.t.Stop()
		return errSocketClosed
	case <-s.t.C:
		return nil
	}
}

// stop ends the current and every later sleep.
func (s *sleeper) stop() { close(s.closed) }
