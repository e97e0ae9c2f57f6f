package onairtest

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/onair/onair/internal/testload"
)

// LockedBuffer is a bytes.Buffer that a child process (or a server's
// goroutines) may write while the test reads it.
type LockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *LockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *LockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
	buildOut  []byte
)

// Binary builds the onair binary once per test process and returns its path.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "onair-test-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binary = filepath.Join(dir, "onair")
		buildOut, buildErr = exec.Command("go", "build", "-o", binary, "github.com/onair/onair").CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("build onair: %v\n%s", buildErr, buildOut)
	}
	return binary
}

// Process is a real `onair serve` a test can start, kill and start again
// on the same ports and data directory (a crash and restart), and whose CLI
// it can run with the same settings.
type Process struct {
	t    testing.TB
	bin  string
	Env  []string // ONAIR_* settings, extra ones last
	URL  string   // http://127.0.0.1:port (also ONAIR_PUBLIC_URL)
	RTMP string   // 127.0.0.1:port of the ingest
	cmd  *exec.Cmd
	// exited is closed when the running server has exited (and been
	// waited for); nil before the first Start.
	exited chan struct{}
	log    LockedBuffer
}

// NewProcess prepares a server on free ports with its own data directory;
// extra settings ("ONAIR_DATABASE_URL=…") come after and win.
func NewProcess(t testing.TB, extra ...string) *Process {
	t.Helper()
	httpAddr, rtmpAddr := testload.FreeAddr(t), testload.FreeAddr(t)
	p := &Process{t: t, bin: Binary(t), URL: "http://" + httpAddr, RTMP: rtmpAddr}
	p.Env = append([]string{
		"ONAIR_DATA_DIR=" + t.TempDir(), "ONAIR_HTTP_ADDR=" + httpAddr, "ONAIR_PUBLIC_URL=" + p.URL,
		"ONAIR_RTMP_ADDR=" + rtmpAddr, "ONAIR_RTMP_URL=rtmp://" + rtmpAddr + "/live",
	}, extra...)
	t.Cleanup(func() {
		if p.exited != nil {
			p.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.exited:
			case <-time.After(testload.Patience):
				// A server that ignores SIGTERM is a defect: Go prints
				// every goroutine on SIGQUIT, and the log below shows it.
				p.cmd.Process.Signal(syscall.SIGQUIT)
				select {
				case <-p.exited:
				case <-time.After(10 * time.Second):
					p.cmd.Process.Kill()
					<-p.exited
				}
				t.Errorf("server %s still running %s after SIGTERM", p.URL, testload.Patience)
			}
		}
		if t.Failed() {
			DumpLog(t, "server "+p.URL, p.log.String())
		}
	})
	return p
}

// Start runs `onair serve` and waits until /readyz answers (failing at
// once if the server exits instead).
func (p *Process) Start() {
	p.t.Helper()
	cmd := exec.Command(p.bin, "serve")
	cmd.Env = append(os.Environ(), p.Env...)
	cmd.Stdout, cmd.Stderr = &p.log, &p.log
	if err := cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	p.cmd, p.exited = cmd, exited
	testload.Poll(p.t, "server "+p.URL+" ready", func() error {
		select {
		case <-exited:
			p.t.Fatalf("server %s exited (%v) before it was ready:\n%s", p.URL, cmd.ProcessState, p.log.String())
		default:
		}
		resp, err := http.Get(p.URL + "/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz answers %d; log:\n%s", resp.StatusCode, p.log.String())
		}
		return nil
	})
}

// Kill ends the server the hard way, as a crash would, and waits until it
// is gone.
func (p *Process) Kill() {
	p.cmd.Process.Kill()
	<-p.exited
	p.exited = nil
}

// Signal sends sig (syscall.SIGTERM: a graceful stop) to the running
// server; Wait then sees it exit.
func (p *Process) Signal(sig os.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatal(err)
	}
}

// Wait waits up to within for the server to exit and returns how it
// exited; it fails the test if the server is still running then.
func (p *Process) Wait(within time.Duration) *os.ProcessState {
	p.t.Helper()
	select {
	case <-p.exited:
	case <-time.After(within):
		p.t.Fatalf("server %s still running after %s", p.URL, within)
	}
	p.exited = nil
	return p.cmd.ProcessState
}

// Run runs an onair command with the server's settings and returns stdout.
func (p *Process) Run(args ...string) string {
	p.t.Helper()
	cmd := exec.Command(p.bin, args...)
	cmd.Env = append(os.Environ(), p.Env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		p.t.Fatalf("onair %v: %v\n%s", args, err, errb.String())
	}
	return out.String()
}

// Client is an Env that speaks to the process (for Do and its checks).
func (p *Process) Client() *Env {
	return &Env{T: p.t, URL: p.URL, Client: &http.Client{Timeout: testload.Patience}}
}

// Logs is what the server has printed so far, across its starts.
func (p *Process) Logs() string { return p.log.String() }

// Memory is the running server's resident set now and at its peak so
// far (VmRSS and VmHWM of /proc/PID/status), in bytes: what a test of a
// memory bound measures on the real process.
func (p *Process) Memory() (rss, peak int64) {
	p.t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		p.t.Fatalf("memory of the server: %v", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		var kb int64
		if _, err := fmt.Sscanf(line, "VmRSS: %d kB", &kb); err == nil {
			rss = kb << 10
		} else if _, err := fmt.Sscanf(line, "VmHWM: %d kB", &kb); err == nil {
			peak = kb << 10
		}
	}
	if rss == 0 || peak == 0 {
		p.t.Fatalf("no VmRSS or VmHWM in /proc/%d/status", p.cmd.Process.Pid)
	}
	return rss, peak
}
