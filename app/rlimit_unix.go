//go:build unix

package app

import "syscall"

// descriptorLimit returns the soft and hard RLIMIT_NOFILE of the process.
func descriptorLimit() (soft, hard uint64) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, 0
	}
	return uint64(rl.Cur), uint64(rl.Max)
}

// raiseDescriptorLimit lifts the soft RLIMIT_NOFILE to the hard one and
// returns both as they are afterwards. (The Go runtime already does this at
// start-up on Linux; doing it here makes it hold wherever onair runs and
// gives the log line real numbers.)
func raiseDescriptorLimit() (soft, hard uint64, err error) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, 0, err
	}
	if rl.Cur < rl.Max {
		want := rl
		want.Cur = rl.Max
		if err = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err == nil {
			rl = want
		}
	}
	return uint64(rl.Cur), uint64(rl.Max), err
}
