package srt

import (
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sleeper waits out the listener's ticks on a timerfd in Go's network
// poller rather than on a Go timer. A Go timer's expiry readies the
// goroutine through the scheduler, which then wakes a second thread to
// look for work (wakep) and, when the process was idle, the runtime's
// sysmon thread as well, which had slept until that timer: three thread
// wakes a tick where the poller's thread, back from epoll, runs the
// goroutine itself. The timer is armed and read with raw system calls,
// which, unlike Syscall, do not wake sysmon either.
type sleeper struct {
	f  *os.File
	rc syscall.RawConn
	// The state of the current sleep, for wake, made once: a closure of
	// it would be an allocation a tick.
	spec  unix.ItimerSpec
	armed syscall.Errno
	buf   [8]byte
	wake  func(fd uintptr) bool
}

func newSleeper() (*sleeper, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "srt-tick") // non-blocking: in the poller
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	s := &sleeper{f: f, rc: rc}
	s.wake = s.poll
	return s, nil
}

// sleep returns after d, or with an error once stop was called.
func (s *sleeper) sleep(d time.Duration) error {
	s.spec = unix.ItimerSpec{Value: unix.NsecToTimespec(max(d, time.Microsecond).Nanoseconds())}
	s.armed = 0
	if err := s.rc.Read(s.wake); err != nil {
		return errSocketClosed
	}
	if s.armed != 0 {
		return s.armed
	}
	return nil
}

// poll arms the timer on its first call of a sleep, then reports whether
// it has expired (false: the poller waits for it).
func (s *sleeper) poll(fd uintptr) bool {
	if s.spec.Value.Sec|s.spec.Value.Nsec != 0 {
		_, _, s.armed = unix.RawSyscall6(unix.SYS_TIMERFD_SETTIME, fd, 0, uintptr(unsafe.Pointer(&s.spec)), 0, 0, 0)
		s.spec = unix.ItimerSpec{}
		if s.armed != 0 {
			return true
		}
	}
	_, _, errno := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&s.buf[0])), uintptr(len(s.buf)))
	return errno != unix.EAGAIN
}

// stop ends the current and every later sleep.
func (s *sleeper) stop() { s.f.Close() }
