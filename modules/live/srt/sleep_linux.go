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
	return &sleeper{f: f, rc: rc}, nil
}

// sleep returns after d, or with an error once stop was called.
func (s *sleeper) sleep(d time.Duration) error {
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(max(d, time.Microsecond).Nanoseconds())}
	var armed syscall.Errno
	var buf [8]byte
	err := s.rc.Read(func(fd uintptr) bool {
		if spec.Value.Sec|spec.Value.Nsec != 0 {
			_, _, armed = unix.RawSyscall6(unix.SYS_TIMERFD_SETTIME, fd, 0, uintptr(unsafe.Pointer(&spec)), 0, 0, 0)
			spec = unix.ItimerSpec{}
			if armed != 0 {
				return true
			}
		}
		_, _, errno := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
		return errno != unix.EAGAIN
	})
	if err != nil {
		return errSocketClosed
	}
	if armed != 0 {
		return armed
	}
	return nil
}

// stop ends the current and every later sleep.
func (s *sleeper) stop() { s.f.Close() }
