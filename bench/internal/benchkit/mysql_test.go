package benchkit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
)

// Two runs on one benchmark database: the second is refused while the
// first holds it, naming the database, and gets it once the first lets
// go. The lock is MariaDB's own, on the test server.
func TestLockMySQLDatabase(t *testing.T) {
	raw := os.Getenv(onairtest.MySQLEnv)
	if raw == "" {
		testload.Skip(t, "%s unset: no MariaDB to lock on", onairtest.MySQLEnv)
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	// A name of this test's own: nothing is made or dropped, only locked.
	u.Path = "/onair_bench_locktest_" + randomTag(t)
	db := u.String()
	ctx := context.Background()
	release, err := LockMySQLDatabase(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LockMySQLDatabase(ctx, db); err == nil || !strings.Contains(err.Error(), "another benchmark run is using the database onair_bench_locktest_") {
		t.Fatalf("second lock while held: %v", err)
	}
	release()
	again, err := LockMySQLDatabase(ctx, db)
	if err != nil {
		t.Fatalf("lock after the release: %v", err)
	}
	again()
	if _, err := LockMySQLDatabase(ctx, "mysql://root@127.0.0.1:3306/"+strings.Repeat("x", 53)); err == nil {
		t.Error("a name too long for the lock was taken")
	}
}

func randomTag(t *testing.T) string {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
