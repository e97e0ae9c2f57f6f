package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// srtFloor is a bare gosrt listener in a process of its own
// (bench/internal/srtfloor): the same SRT stream read and discarded, or
// demuxed and its units discarded, is the floor OnAir's SRT ingest is
// measured against.
type srtFloor struct {
	cmd  *exec.Cmd
	addr string
}

// startSRTFloor builds srtfloor into dir (once) and starts it.
func startSRTFloor(root, dir string, demux bool) (*srtFloor, error) {
	bin := filepath.Join(dir, "bin", "srtfloor")
	if _, err := os.Stat(bin); err != nil {
		build := exec.Command("go", "build", "-o", bin, "./bench/internal/srtfloor")
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go build srtfloor: %w\n%s", err, out)
		}
	}
	args := []string{"-addr", "127.0.0.1:0"}
	if demux {
		args = append(args, "-demux")
	}
	cmd := exec.Command(bin, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(out).ReadString('\n')
		line <- strings.TrimSpace(s)
	}()
	select {
	case addr := <-line:
		if addr == "" {
			cmd.Process.Kill()
			cmd.Wait()
			return nil, fmt.Errorf("srtfloor did not start")
		}
		return &srtFloor{cmd: cmd, addr: addr}, nil
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		return nil, fmt.Errorf("srtfloor: no address within 30 s")
	}
}

func (f *srtFloor) pids() []int { return []int{f.cmd.Process.Pid} }

func (f *srtFloor) stop() {
	f.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { f.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		f.cmd.Process.Kill()
		<-done
	}
}
