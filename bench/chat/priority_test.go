package main

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

func TestParseAutogroup(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int{"/autogroup-85 nice 0\n": 0, "/autogroup-18 nice -10": -10, "/autogroup-3 nice 19\n": 19} {
		if got, err := parseAutogroup(in); err != nil || got != want {
			t.Errorf("parseAutogroup(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "/autogroup-85 nice", "/autogroup-85 nice x", "autogroup-85 nice 0", "/autogroup-85 prio 0", "/autogroup-1 nice 0 extra"} {
		if _, err := parseAutogroup(in); err == nil {
			t.Errorf("parseAutogroup(%q): no error", in)
		}
	}
}

// TestNiceServicesGivesBack: a process in a session of its own (its own
// autogroup, as a service's) gets the nice asked and, after restoreNice,
// the one it had; raising a nice needs no privilege. Where the kernel
// has no autogroups the run is refused with the way to do it instead.
func TestNiceServicesGivesBack(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("sleep", "300")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	pid := cmd.Process.Pid
	if b, err := os.ReadFile("/proc/sys/kernel/sched_autogroup_enabled"); err != nil || strings.TrimSpace(string(b)) != "1" {
		_, err := niceServices([]watched{{name: "sleep", pid: pid}}, 7)
		if err == nil || !strings.Contains(err.Error(), "CPUWeight") {
			t.Fatalf("without autogroups: err = %v, want the CPUWeight advice", err)
		}
		return
	}
	was, err := autogroupNice(pid)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := niceServices([]watched{{name: "sleep", pid: pid}}, was+7)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := autogroupNice(pid); got != was+7 {
		t.Fatalf("autogroup nice %d after niceServices, want %d", got, was+7)
	}
	if d := describeNice(ps, was+7); !strings.Contains(d, "sleep (") || !strings.Contains(d, "autogroup nice") {
		t.Errorf("describeNice = %q", d)
	}
	restoreNice(ps)
	if got, _ := autogroupNice(pid); got != was {
		t.Fatalf("autogroup nice %d after restoreNice, want %d back", got, was)
	}
	if _, err := niceServices(nil, -10); err == nil {
		t.Error("niceServices with no process: no error")
	}
}
