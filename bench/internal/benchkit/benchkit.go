// Package benchkit is what the benchmarks under bench/ share: building the
// onair binary, running it as a separate process on free loopback ports
// (so the load generator's CPU and memory are not mixed into the server's),
// the CLI and API calls that set up users, tokens and shows, readings of
// /proc, and the writer of the generated results files (bench/results/).
package benchkit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// RepoRoot is the directory of the onair module's go.mod, found from the
// working directory upwards (bench/run.sh and `go run ./bench/...` both run
// somewhere inside the repository).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(mod, []byte("module github.com/onair/onair")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("benchkit: not inside the onair repository")
		}
		dir = parent
	}
}

// Build compiles the onair binary of the repository into dir/bin; with
// profiled, the same server with net/http/pprof on $ONAIR_BENCH_PPROF_ADDR
// (bench/internal/onairpprof).
func Build(root, dir string, profiled bool) (string, error) {
	bin := filepath.Join(dir, "bin", "onair")
	pkg := "."
	if profiled {
		pkg = "./bench/internal/onairpprof"
	}
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("benchkit: go build: %w\n%s", err, out)
	}
	return bin, nil
}

// FreeAddr returns a loopback address with a port that was free a moment ago.
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// Server is one `onair serve` process with its own data directory (SQLite
// in it) and loopback ports.
type Server struct {
	Bin      string
	DataDir  string
	HTTPAddr string
	RTMPAddr string
	URL      string // http://HTTPAddr
	Env      map[string]string

	cmd    *exec.Cmd
	exited chan error
}

// NewServer prepares a server on fresh ports; extra overrides ONAIR_*
// settings (log level, rate limit...).
func NewServer(bin, dataDir string, extra map[string]string) (*Server, error) {
	httpAddr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	rtmpAddr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	s := &Server{Bin: bin, DataDir: dataDir, HTTPAddr: httpAddr, RTMPAddr: rtmpAddr, URL: "http://" + httpAddr}
	s.Env = map[string]string{
		"ONAIR_DATA_DIR":   dataDir,
		"ONAIR_HTTP_ADDR":  httpAddr,
		"ONAIR_PUBLIC_URL": s.URL,
		"ONAIR_RTMP_ADDR":  rtmpAddr,
		"ONAIR_RTMP_URL":   "rtmp://" + rtmpAddr + "/live",
		"ONAIR_LOG_LEVEL":  "warn",
		// Every benchmark client is one address: lift the per-address caps.
		"ONAIR_MAX_CONNS_PER_IP":   "1000000",
		"ONAIR_MAX_SOCKETS_PER_IP": "1000000",
		"ONAIR_AUTH_FAILURES":      "1000000",
	}
	for k, v := range extra {
		s.Env[k] = v
	}
	return s, nil
}

func (s *Server) environ() []string {
	env := os.Environ()
	for k, v := range s.Env {
		env = append(env, k+"="+v)
	}
	return env
}

// CLI runs an onair sub-command against the server's database and returns
// its standard output.
func (s *Server) CLI(args ...string) ([]byte, error) {
	cmd := exec.Command(s.Bin, args...)
	cmd.Env = s.environ()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("benchkit: onair %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}

// CreateUser makes a user with the CLI and issues it an API token.
func (s *Server) CreateUser(name, email string) (id int64, token string, err error) {
	out, err := s.CLI("users", "create", "-name", name, "-email", email, "-dj")
	if err != nil {
		return 0, "", err
	}
	var created struct {
		User struct {
			ID int64 `json:"id"`
		} `json:"user"`
	}
	if err := json.Unmarshal(out, &created); err != nil {
		return 0, "", fmt.Errorf("benchkit: users create output: %w", err)
	}
	out, err = s.CLI("tokens", "create", "-user", email, "-label", "bench")
	if err != nil {
		return 0, "", err
	}
	return created.User.ID, strings.TrimSpace(string(out)), nil
}

// Start runs `onair serve` (output to server.log in the data directory)
// and waits until /healthz answers.
func (s *Server) Start() error {
	logf, err := os.OpenFile(filepath.Join(s.DataDir, "server.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	s.cmd = exec.Command(s.Bin, "serve")
	s.cmd.Env = s.environ()
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if err := s.cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("benchkit: start onair: %w", err)
	}
	s.exited = make(chan error, 1)
	go func() { s.exited <- s.cmd.Wait(); logf.Close() }()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-s.exited:
			return fmt.Errorf("benchkit: onair exited during start-up: %v (see %s)", err, logf.Name())
		default:
		}
		if resp, err := http.Get(s.URL + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.Stop()
	return errors.New("benchkit: onair did not answer /healthz within 30 s")
}

// PID is the server process id (0 before Start).
func (s *Server) PID() int {
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Stop asks the server to shut down (SIGTERM) and kills it after 25 s.
func (s *Server) Stop() {
	if s.cmd == nil || s.cmd.Process == nil || s.exited == nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(25 * time.Second):
		s.cmd.Process.Kill()
		<-s.exited
	}
	s.exited = nil
}

// Profile saves the server's CPU profile of the next seconds to path
// (the server must be the profiled build, with ONAIR_BENCH_PPROF_ADDR set).
func (s *Server) Profile(kind string, seconds int, path string) error {
	addr := s.Env["ONAIR_BENCH_PPROF_ADDR"]
	if addr == "" {
		return errors.New("benchkit: the server has no pprof address")
	}
	url := fmt.Sprintf("http://%s/debug/pprof/%s?seconds=%d", addr, kind, seconds)
	if kind == "heap" {
		url = fmt.Sprintf("http://%s/debug/pprof/heap", addr)
	}
	client := &http.Client{Timeout: time.Duration(seconds+30) * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("benchkit: %s: %d", url, resp.StatusCode)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Log is what the server has written so far.
func (s *Server) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.DataDir, "server.log"))
	return string(b)
}

// API sends a JSON request with a Bearer token and decodes the answer into
// out (when not nil); a status other than 2xx is an error.
func (s *Server) API(ctx context.Context, method, path, token string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.URL+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("benchkit: %s %s: %d %s", method, path, resp.StatusCode, data)
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

// Show is what the benchmarks need of a created show.
type Show struct {
	ID        int64  `json:"id"`
	StreamKey string `json:"stream_key"`
}

// CreateShow makes a public show owned by the token's user.
func (s *Server) CreateShow(ctx context.Context, token, name string) (Show, error) {
	return s.CreateShowWith(ctx, token, name, nil)
}

// CreateShowWith is CreateShow with more fields of the show
// ({"audio_only": true}).
func (s *Server) CreateShowWith(ctx context.Context, token, name string, fields map[string]any) (Show, error) {
	body := map[string]any{"name": name, "description": "benchmark show"}
	for k, v := range fields {
		body[k] = v
	}
	var res struct{ Show Show }
	err := s.API(ctx, "POST", "/v1/shows", token, body, &res)
	return res.Show, err
}

// clockTick is USER_HZ, the unit of /proc/PID/stat times: 100 on every
// Linux architecture Go supports.
const clockTick = 100

// CPU is the CPU time of a process so far: its own (user+system) and that
// of its children it has waited for.
type CPU struct{ Own, Children time.Duration }

// ReadCPU reads /proc/PID/stat (its children's time, in ticks) and the
// process's CPU-time clock (its own, to the nanosecond).
func ReadCPU(pid int) (CPU, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return CPU{}, err
	}
	// Fields after the command name, which is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return CPU{}, fmt.Errorf("benchkit: odd /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); utime, stime, cutime, cstime are fields 14–17.
	if len(f) < 15 {
		return CPU{}, fmt.Errorf("benchkit: short /proc/%d/stat", pid)
	}
	tick := func(s string) time.Duration {
		n, _ := strconv.ParseInt(s, 10, 64)
		return time.Duration(n) * time.Second / clockTick
	}
	c := CPU{Own: tick(f[11]) + tick(f[12]), Children: tick(f[13]) + tick(f[14])}
	if ns, err := processClock(pid); err == nil {
		c.Own = ns
	}
	return c, nil
}

// processClock is the CPU time of every thread of pid, live and exited, in
// nanoseconds: the process's CPU-time clock (clock_getcpuclockid(3)'s
// CPUCLOCK_SCHED clock of the thread group), where /proc/PID/stat counts in
// ticks of 10 ms — a tick is 5 % of what a 30 s stream of ingest costs.
func processClock(pid int) (time.Duration, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(int32((^pid)<<3|2), &ts); err != nil {
		return 0, err
	}
	return time.Duration(ts.Nano()), nil
}

// ReadCPUs sums ReadCPU over processes (nginx: master and workers).
func ReadCPUs(pids []int) (CPU, error) {
	var sum CPU
	for _, pid := range pids {
		c, err := ReadCPU(pid)
		if err != nil {
			return CPU{}, err
		}
		sum.Own += c.Own
		sum.Children += c.Children
	}
	return sum, nil
}

// ChildPIDs lists the processes whose parent is pid.
func ChildPIDs(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}

// RSS is the resident set size of a process in bytes (VmRSS).
func RSS(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("benchkit: no VmRSS for %d", pid)
}

// LoadAvg is the 1, 5 and 15 minute load averages, as /proc/loadavg has them.
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// Load1 is the 1-minute load average.
func Load1() float64 {
	f := strings.Fields(LoadAvg())
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// EnvOr is the value of the environment variable, or def.
func EnvOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// Percentile of sorted durations (p in 0..100).
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)-1) * p / 100)
	return sorted[i]
}
