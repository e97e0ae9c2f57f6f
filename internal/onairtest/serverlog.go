package onairtest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/onair/onair/internal/browsertest"
)

// logTail is how many of a failed test's last server log lines its
// output carries: CI shows a part of the output, and whole logs (often
// thousands of lines) pushed the failures' own messages out of it.
const logTail = 40

// DumpLog reports a server's log once t failed: the whole log goes to a
// file under $ONAIR_TEST_ARTIFACTS/logs (test-artifacts/logs at the
// repository root otherwise), and the output gets its last logTail lines and
// where the file is. name tells the servers of one test apart.
func DumpLog(t testing.TB, name, log string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(log, "\n"), "\n")
	tail := lines
	if len(tail) > logTail {
		tail = tail[len(tail)-logTail:]
	}
	where, err := saveLog(t, name, log)
	if err != nil {
		where = fmt.Sprintf("(not saved: %v)", err)
	}
	t.Logf("%s log, its last %d of %d lines; the whole of it: %s\n%s", name, len(tail), len(lines), where, strings.Join(tail, "\n"))
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func saveLog(t testing.TB, name, log string) (string, error) {
	path := filepath.Join(browsertest.ArtifactDir(t, "logs"), unsafeName.ReplaceAllString(t.Name()+"-"+name, "_")+".log")
	return path, os.WriteFile(path, []byte(log), 0o644)
}
