package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"
)

// -services-nice: on one box the database and Redis share the two cores
// with the nodes' fan-out and the viewers' processes, and a POST waits
// on the database's threads finding a core (sched.go measures it).
// docs/operations.md ("One box: the database first") has the operator
// give MariaDB and Redis a larger CPU weight. Where the kernel groups
// each session's processes (autogroups, which this machine has on), a
// thread's own nice ranks it only within its session: each session
// weighs the same at the top, so `renice` of mariadbd moves nothing
// (2026-11-30c) and the weight to set is the session's,
// /proc/PID/autogroup. The run sets it for the processes named mariadbd,
// mysqld and redis-server and gives them back what they had at its end.

// databaseServices are the command names whose autogroup -services-nice
// sets.
var databaseServices = []string{"mariadbd", "mysqld", "redis-server"}

// autogroupFile is a process's autogroup, "/autogroup-N nice K".
func autogroupFile(pid int) string { return fmt.Sprintf("/proc/%d/autogroup", pid) }

// parseAutogroup reads the nice of an autogroup file's text.
func parseAutogroup(s string) (int, error) {
	f := strings.Fields(s)
	if len(f) != 3 || f[1] != "nice" || !strings.HasPrefix(f[0], "/autogroup-") {
		return 0, fmt.Errorf("autogroup %q: not \"/autogroup-N nice K\"", strings.TrimSpace(s))
	}
	return strconv.Atoi(f[2])
}

func autogroupNice(pid int) (int, error) {
	b, err := os.ReadFile(autogroupFile(pid))
	if err != nil {
		return 0, err
	}
	return parseAutogroup(string(b))
}

func setAutogroupNice(pid, nice int) error {
	if err := os.WriteFile(autogroupFile(pid), []byte(strconv.Itoa(nice)), 0); err != nil {
		return err
	}
	got, err := autogroupNice(pid)
	if err == nil && got != nice {
		err = fmt.Errorf("process %d: autogroup nice is %d after setting %d", pid, got, nice)
	}
	return err
}

// niced is a process whose autogroup nice the run changed, and what it was.
type niced struct {
	watched
	was int
}

// niceServices gives each process of ps the autogroup nice n and returns
// them with what they had, for restoreNice. On an error it has put back
// what it changed.
func niceServices(ps []watched, n int) ([]niced, error) {
	if b, err := os.ReadFile("/proc/sys/kernel/sched_autogroup_enabled"); err != nil || strings.TrimSpace(string(b)) != "1" {
		return nil, errors.New("-services-nice: the kernel's autogroups are off (or absent) here: give the database its CPU weight as docs/operations.md says (systemd CPUWeight=)")
	}
	if len(ps) == 0 {
		return nil, fmt.Errorf("-services-nice: no process named %s on this machine", strings.Join(databaseServices, ", "))
	}
	var done []niced
	for _, p := range ps {
		was, err := autogroupNice(p.pid)
		if err == nil {
			err = setAutogroupNice(p.pid, n)
		}
		if err != nil {
			restoreNice(done)
			return nil, fmt.Errorf("-services-nice: %s (%d): %w (lowering a nice needs root)", p.name, p.pid, err)
		}
		done = append(done, niced{p, was})
	}
	return done, nil
}

// restoreNice gives each process back the autogroup nice it had.
func restoreNice(ps []niced) {
	for _, p := range ps {
		if err := setAutogroupNice(p.pid, p.was); err != nil {
			fmt.Fprintf(os.Stderr, "chat: %s (%d): could not give back autogroup nice %d: %v\n", p.name, p.pid, p.was, err)
		}
	}
}

// describeNice is the report's words for the processes the run niced.
func describeNice(ps []niced, n int) string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = fmt.Sprintf("%s (%d)", p.name, p.pid)
	}
	return fmt.Sprintf("%s at autogroup nice %d for the run (-services-nice; docs/operations.md, \"One box: the database first\")", strings.Join(names, ", "), n)
}

// servicesToNice is the machine's database and Redis processes.
func servicesToNice(fs procfs.FS) []watched { return servicePIDs(fs, databaseServices...) }
