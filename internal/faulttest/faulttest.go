// Package faulttest runs the servers a fault test takes away and brings
// back: a MariaDB on its own port and data directory, and a redis-server,
// each of which the test may stop, kill and start again while OnAir runs
// against it. docs/operations.md says what OnAir does meanwhile.
//
// A tool that is missing skips the test, except under CI, where it fails
// (testload.Skip).
package faulttest

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/onair/onair/internal/testload"
)

// tool finds a server binary on PATH or in /usr/sbin (where Debian puts
// mariadbd, outside a normal user's PATH).
func tool(t testing.TB, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if p := filepath.Join("/usr/sbin", name); isExecutable(p) {
		return p
	}
	testload.Skip(t, "%s not found on PATH or in /usr/sbin", name)
	return ""
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// lockedBuffer collects a server's output while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// server is a child process the test starts and stops.
type server struct {
	t      testing.TB
	name   string
	cmd    *exec.Cmd
	exited chan struct{}
	log    lockedBuffer
}

func (s *server) start(bin string, args ...string) {
	s.t.Helper()
	if s.running() {
		s.t.Fatalf("%s: started twice", s.name)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &s.log, &s.log
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("%s: %v", s.name, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	s.cmd, s.exited = cmd, exited
}

func (s *server) running() bool {
	if s.exited == nil {
		return false
	}
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// wait waits for the process to exit (testload.Patience bounds a hang).
func (s *server) wait() {
	s.t.Helper()
	select {
	case <-s.exited:
	case <-time.After(testload.Patience):
		s.t.Fatalf("%s did not exit within %s\n%s", s.name, testload.Patience, s.log.String())
	}
}

// kill ends the process at once (SIGKILL), as a crash does.
func (s *server) kill() {
	s.t.Helper()
	if !s.running() {
		return
	}
	s.cmd.Process.Signal(syscall.SIGKILL)
	s.wait()
}

// awaitUp polls ready until it succeeds, failing at once if the process
// exits first.
func (s *server) awaitUp(ready func() error) {
	s.t.Helper()
	testload.Poll(s.t, s.name+" ready", func() error {
		if !s.running() {
			s.t.Fatalf("%s exited:\n%s", s.name, s.log.String())
		}
		return ready()
	})
}

func (s *server) cleanup() {
	if s.running() {
		s.cmd.Process.Signal(syscall.SIGKILL)
		<-s.exited
	}
	if s.t.Failed() {
		s.t.Logf("%s log:\n%s", s.name, s.log.String())
	}
}

// MariaDB is a MariaDB server of the test's own, on its own port and data
// directory, with an empty database "onair".
type MariaDB struct {
	server
	dir, addr string
	mariadbd  string
	admin     string
}

// StartMariaDB initialises a data directory and starts a MariaDB on it.
func StartMariaDB(t testing.TB) *MariaDB {
	t.Helper()
	install, mariadbd, admin := tool(t, "mariadb-install-db"), tool(t, "mariadbd"), tool(t, "mariadb-admin")
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), testload.Patience)
	defer cancel()
	out, err := exec.CommandContext(ctx, install, "--no-defaults", "--datadir="+filepath.Join(dir, "data"),
		"--auth-root-authentication-method=normal", "--user=root").CombinedOutput()
	if err != nil {
		t.Fatalf("mariadb-install-db: %v\n%s", err, out)
	}
	db := &MariaDB{server: server{t: t, name: "mariadb"}, dir: dir, addr: testload.FreeAddr(t), mariadbd: mariadbd, admin: admin}
	t.Cleanup(db.cleanup)
	db.Start()
	conn := db.open()
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "CREATE DATABASE onair CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"); err != nil {
		t.Fatalf("mariadb: create database: %v", err)
	}
	return db
}

// URL is the ONAIR_DATABASE_URL of the database "onair".
func (db *MariaDB) URL() string { return "mysql://root@" + db.addr + "/onair" }

// Addr is the server's 127.0.0.1:port.
func (db *MariaDB) Addr() string { return db.addr }

// Start starts the server on its data directory and waits until it
// answers.
func (db *MariaDB) Start() {
	db.t.Helper()
	_, port, _ := net.SplitHostPort(db.addr)
	db.start(db.mariadbd, "--no-defaults", "--datadir="+filepath.Join(db.dir, "data"), "--port="+port,
		"--bind-address=127.0.0.1", "--socket="+filepath.Join(db.dir, "sock"), "--user=root")
	conn := db.open()
	defer conn.Close()
	db.awaitUp(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return conn.PingContext(ctx)
	})
}

// Stop shuts the server down cleanly (mariadb-admin shutdown) and waits
// for it to exit.
func (db *MariaDB) Stop() {
	db.t.Helper()
	host, port, _ := net.SplitHostPort(db.addr)
	ctx, cancel := context.WithTimeout(context.Background(), testload.Patience)
	defer cancel()
	if out, err := exec.CommandContext(ctx, db.admin, "--no-defaults", "-h"+host, "-P"+port, "-uroot", "shutdown").CombinedOutput(); err != nil {
		db.t.Fatalf("mariadb-admin shutdown: %v\n%s", err, out)
	}
	db.wait()
}

// Kill ends the server at once, as a crash does; Start recovers it.
func (db *MariaDB) Kill() { db.kill() }

// Running tells whether the server process runs.
func (db *MariaDB) Running() bool { return db.running() }

// open is a connection pool to the server (no database selected).
func (db *MariaDB) open() *sql.DB {
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr, cfg.User, cfg.Timeout = "tcp", db.addr, "root", 5*time.Second
	conn, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		db.t.Fatalf("mariadb: %v", err)
	}
	return conn
}

// Redis is a redis-server of the test's own, without persistence: a
// restart starts it empty, as a lost Redis comes back.
type Redis struct {
	server
	bin, addr string
}

// StartRedis starts a redis-server on a free port.
func StartRedis(t testing.TB) *Redis {
	t.Helper()
	r := &Redis{server: server{t: t, name: "redis-server"}, bin: tool(t, "redis-server"), addr: testload.FreeAddr(t)}
	t.Cleanup(r.cleanup)
	r.Start()
	return r
}

// URL is the ONAIR_REDIS_URL of the server.
func (r *Redis) URL() string { return "redis://" + r.addr + "/0" }

// Start starts the server on its port and waits until it answers PING.
func (r *Redis) Start() {
	r.t.Helper()
	_, port, _ := net.SplitHostPort(r.addr)
	r.start(r.bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	r.awaitUp(func() error { return ping(r.addr) })
}

// Kill ends the server at once.
func (r *Redis) Kill() { r.kill() }

// Running tells whether the server process runs.
func (r *Redis) Running() bool { return r.running() }

// ping sends one PING in RESP and expects +PONG.
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	buf := make([]byte, 16)
	n, err := c.Read(buf)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(string(buf[:n]), "+PONG") {
		return fmt.Errorf("redis answered %q", buf[:n])
	}
	return nil
}
