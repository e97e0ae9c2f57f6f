package onairtest

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// captureTB keeps what DumpLog logs.
type captureTB struct {
	testing.TB
	out string
}

func (c *captureTB) Logf(format string, args ...any) { c.out += fmt.Sprintf(format, args...) }

// A failed test's output carries the log's last lines and where the whole
// of it was saved; the file holds every line.
func TestDumpLogKeepsTheTail(t *testing.T) {
	t.Setenv("ONAIR_TEST_ARTIFACTS", t.TempDir())
	var b strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	c := &captureTB{TB: t}
	DumpLog(c, "server http://127.0.0.1:1", b.String())
	if !strings.Contains(c.out, "its last 40 of 1000 lines") || !strings.HasSuffix(c.out, "line 960\n"+strings.Join(lines(961, 999), "\n")) {
		t.Fatalf("output:\n%s", c.out)
	}
	if strings.Contains(c.out, "line 959\n") {
		t.Fatalf("output has more than the tail:\n%s", c.out)
	}
	path := strings.TrimSpace(c.out[strings.Index(c.out, "the whole of it: ")+len("the whole of it: ") : strings.IndexByte(c.out, '\n')])
	data, err := os.ReadFile(path)
	if err != nil || string(data) != b.String() {
		t.Fatalf("saved log at %q: %v (%d bytes)", path, err, len(data))
	}
	if strings.ContainsAny(path[len(os.Getenv("ONAIR_TEST_ARTIFACTS")):], ":") {
		t.Fatalf("unsafe file name %q", path)
	}
}

func lines(from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprintf("line %d", i))
	}
	return out
}
