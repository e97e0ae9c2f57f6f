//go:build unix

package testload

import (
	"fmt"
	"os"
	"syscall"
)

// lockMachine blocks until it holds an exclusive flock on path. The
// kernel drops the lock when the file is closed or the process ends, so
// a test binary killed by its timeout never leaves the others waiting.
func lockMachine(path string) (release func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("flock: %w", err)
	}
	return func() { f.Close() }, nil
}
