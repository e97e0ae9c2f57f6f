package onairtest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/onair/onair/internal/testload"
)

// Tools for tests that force an interleaving of transactions on MySQL:
// a transaction of the test holds a row lock (HoldRow), the calls under
// test run in goroutines (Go) until they wait for a lock (AwaitLockWait),
// and the test lets go in the order it wants.

// HoldRow locks the row of table with the id for writing in a new
// transaction of db and returns it; the test ends it (Rollback) when the
// calls waiting for the row may go on.
func HoldRow(t testing.TB, db *bun.DB, table string, id int64) bun.Tx {
	t.Helper()
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got int64
	if err := tx.NewRaw("SELECT id FROM ? WHERE id = ? FOR UPDATE", bun.Ident(table), id).Scan(ctx, &got); err != nil {
		tx.Rollback()
		t.Fatalf("hold %s %d: %v", table, id, err)
	}
	t.Cleanup(func() { tx.Rollback() })
	return tx
}

// LockWaits returns the statements of the transactions on db's MySQL
// database that wait for a lock (information_schema.INNODB_TRX in LOCK
// WAIT); other tests' databases on the same server are left out.
func LockWaits(ctx context.Context, db bun.IDB) ([]string, error) {
	var stmts []string
	err := db.NewRaw(`SELECT COALESCE(t.trx_query, '') FROM information_schema.INNODB_TRX t
		JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id
		WHERE t.trx_state = 'LOCK WAIT' AND p.DB = DATABASE()`).Scan(ctx, &stmts)
	return stmts, err
}

// AwaitLockWait waits until a transaction on db's database waits for a
// lock in a statement that contains each of parts. MySQL refreshes what
// INNODB_TRX shows at most every 100 ms, so parts should name the rows
// (their ids): a wait of an earlier statement could still be shown. It
// fails the test at once when one of calls, meant to wait, has returned.
func AwaitLockWait(t testing.TB, db bun.IDB, calls []*Call, parts ...string) {
	t.Helper()
	testload.Poll(t, fmt.Sprintf("a wait for a lock in %q", parts), func() error {
		for _, c := range calls {
			select {
			case <-c.done:
				t.Fatalf("%s returned (%v) instead of waiting for a lock", c.what, c.err)
			default:
			}
		}
		waits, err := LockWaits(context.Background(), db)
		if err != nil {
			return err
		}
	next:
		for _, w := range waits {
			for _, p := range parts {
				if !strings.Contains(w, p) {
					continue next
				}
			}
			return nil
		}
		return fmt.Errorf("waiting: %q", waits)
	})
}

// Call is a call running in a goroutine (Go).
type Call struct {
	what string
	done chan struct{}
	err  error
}

// Go runs f in a goroutine; what names it in failures.
func Go(what string, f func() error) *Call {
	c := &Call{what: what, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		c.err = f()
	}()
	return c
}

// Wait waits for the call to return (failing the test after
// testload.Patience) and returns its error.
func (c *Call) Wait(t testing.TB) error {
	t.Helper()
	select {
	case <-c.done:
		return c.err
	case <-time.After(testload.Patience):
		t.Fatalf("%s: no answer within %s", c.what, testload.Patience)
		return nil
	}
}
