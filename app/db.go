package app

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/dialect/mysqldialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/onair/onair/app/txretry"
)

// ParseDatabaseURL turns ONAIR_DATABASE_URL into a driver name ("mysql" or
// "sqlite") and the DSN that driver expects.
//
//	mysql://user:pass@host:3306/db?tls=true
//	sqlite:///absolute/path/onair.db   sqlite://relative.db   sqlite::memory:
func ParseDatabaseURL(raw string) (driver, dsn string, err error) {
	if strings.HasPrefix(raw, "sqlite:") {
		path := strings.TrimPrefix(strings.TrimPrefix(raw, "sqlite:"), "//")
		if path == "" {
			return "", "", fmt.Errorf("sqlite URL needs a file path")
		}
		if path == ":memory:" {
			return "sqlite", "file::memory:?cache=shared&_pragma=foreign_keys(1)", nil
		}
		return "sqlite", "file:" + path + "?_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_pragma=synchronous(NORMAL)", nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", "", fmt.Errorf("not a URL")
	}
	if u.Scheme != "mysql" {
		return "", "", fmt.Errorf("scheme must be mysql or sqlite")
	}
	db := strings.TrimPrefix(u.Path, "/")
	if u.Host == "" || db == "" {
		return "", "", fmt.Errorf("must look like mysql://user:pass@host:3306/dbname")
	}
	cfg := mysql.NewConfig()
	cfg.Net = "tcp"
	cfg.Addr = u.Host
	if u.Port() == "" {
		cfg.Addr += ":3306"
	}
	cfg.User = u.User.Username()
	cfg.Passwd, _ = u.User.Password()
	cfg.DBName = db
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	// A server that is down refuses at once; one that is unreachable
	// (a dropped route) is given up on after dialTimeout, not the
	// kernel's minutes, so a request answers 503 within its deadline.
	cfg.Timeout = dialTimeout
	cfg.Params = map[string]string{"charset": "utf8mb4"}
	cfg.Collation = "utf8mb4_unicode_ci"
	for k, v := range u.Query() {
		if k == "tls" {
			cfg.TLSConfig = v[0]
			continue
		}
		cfg.Params[k] = v[0]
	}
	return "mysql", cfg.FormatDSN(), nil
}

// OpenDB opens the database named by the URL with the matching Bun dialect.
// SQLite runs through the pure-Go modernc driver (named here rather than
// picked by a shim, so IsDuplicate knows its error type) on one
// connection, which serialises writers instead of failing them with
// SQLITE_BUSY; hot reads have a pool of their own (OpenReader).
func OpenDB(ctx context.Context, rawURL string) (*bun.DB, error) {
	driver, dsn, err := ParseDatabaseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	var db *bun.DB
	switch driver {
	case "sqlite":
		if path := sqlitePath(rawURL); path != "" {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return nil, fmt.Errorf("database: create directory: %w", err)
			}
		}
		sqldb, err := sql.Open(sqliteDriver, dsn)
		if err != nil {
			return nil, fmt.Errorf("database: open sqlite: %w", err)
		}
		sqldb.SetMaxOpenConns(1)
		db = bun.NewDB(sqldb, sqlitedialect.New())
	case "mysql":
		sqldb, err := sql.Open("mysql", dsn)
		if err != nil {
			return nil, fmt.Errorf("database: open mysql: %w", err)
		}
		sqldb.SetMaxOpenConns(32)
		sqldb.SetMaxIdleConns(32)
		sqldb.SetConnMaxLifetime(5 * time.Minute)
		db = bun.NewDB(sqldb, mysqldialect.New())
	}
	if err := ping(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("database: %s does not answer: %w", driver, err)
	}
	return db, nil
}

// ping opens the pool's first connection, for up to 10 seconds. SQLite
// runs the DSN's pragmas as a connection opens; on a new file the switch
// to WAL takes an exclusive lock, and where two processes make that
// switch at once (two `onair migrate`, two nodes starting together)
// SQLite refuses one of them SQLITE_BUSY at once, without waiting out
// busy_timeout, since waiting could deadlock. Opening again after the
// other's switch finds the file in WAL already, so a busy open is tried
// again, after a short pause that doubles, until the 10 seconds are up.
func ping(ctx context.Context, db *bun.DB) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	pause := 5 * time.Millisecond
	for {
		err := db.PingContext(ctx)
		if err == nil || !isSQLiteBusy(err) {
			return err
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		pause = min(2*pause, 200*time.Millisecond)
	}
}

// isSQLiteBusy tells SQLite's SQLITE_BUSY (any extended code of it).
func isSQLiteBusy(err error) bool { return sqlitePrimary(err) == sqlite3.SQLITE_BUSY }

// sqlitePrimary is the primary result code of a SQLite error (of an
// extended one, its low byte), or -1 when err is not one.
func sqlitePrimary(err error) int {
	var lite *sqlite.Error
	if !errors.As(err, &lite) {
		return -1
	}
	return lite.Code() & 0xff
}

// readConns is how many connections read a SQLite file beside the writer.
// The reads are short (a batch of stream keys, a page of a list) and the
// driver runs them on the calling goroutines, so a few cover the cores.
const readConns = 4

// OpenReader opens the read-only pool of a SQLite file (Core.Reader), or
// returns nil for MySQL, whose pool already reads beside its writes, and
// for an in-memory SQLite database, which one connection owns. The file is
// in WAL mode (ParseDatabaseURL): its readers neither wait for the writer
// nor make it wait, and each statement reads the transactions committed
// before it began. query_only makes a write on this pool an error, so a
// write put here by mistake fails in every test rather than racing the
// writer for the lock.
func OpenReader(ctx context.Context, rawURL string) (*bun.DB, error) {
	driver, _, err := ParseDatabaseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	path := sqlitePath(rawURL)
	if driver != "sqlite" || path == "" {
		return nil, nil
	}
	sqldb, err := sql.Open(sqliteDriver, "file:"+path+"?_pragma=foreign_keys(1)&_pragma=busy_timeout(10000)&_pragma=query_only(1)")
	if err != nil {
		return nil, fmt.Errorf("database: open sqlite reader: %w", err)
	}
	sqldb.SetMaxOpenConns(readConns)
	sqldb.SetMaxIdleConns(readConns)
	db := bun.NewDB(sqldb, sqlitedialect.New())
	if err := ping(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("database: sqlite reader does not answer: %w", err)
	}
	return db, nil
}

func sqlitePath(raw string) string {
	p := strings.TrimPrefix(strings.TrimPrefix(raw, "sqlite:"), "//")
	if p == ":memory:" {
		return ""
	}
	return p
}

// dialTimeout bounds a new MySQL connection's dial.
const dialTimeout = 5 * time.Second

// IsMySQL tells whether db speaks the MySQL dialect.
func IsMySQL(db bun.IDB) bool { return db.Dialect().Name() == dialect.MySQL }

// sqliteDriver is the name modernc.org/sqlite registers itself under.
const sqliteDriver = "sqlite"

// Error codes of the drivers that tell a lost race from a fault.
const (
	mysqlDuplicateEntry = 1062 // ER_DUP_ENTRY
	mysqlDeadlock       = 1213 // ER_LOCK_DEADLOCK
)

// IsDuplicate tells whether err is a unique-key violation: MySQL error 1062
// (ER_DUP_ENTRY), or SQLite's extended codes SQLITE_CONSTRAINT_UNIQUE and
// SQLITE_CONSTRAINT_PRIMARYKEY. It is the loser of a race for a unique
// value, to be answered or retried, never a 500. The drivers' error codes
// decide, not their messages, which change between versions and locales.
func IsDuplicate(err error) bool {
	var my *mysql.MySQLError
	if errors.As(err, &my) {
		return my.Number == mysqlDuplicateEntry
	}
	var lite *sqlite.Error
	if errors.As(err, &lite) {
		return lite.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || lite.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
	}
	return false
}

// MySQL errors that mean the server is going away or cannot take the
// connection, not that the statement is wrong.
var mysqlUnavailable = map[uint16]bool{
	1040: true, // ER_CON_COUNT_ERROR: too many connections
	1053: true, // ER_SERVER_SHUTDOWN: shutdown in progress
	1077: true, // ER_NORMAL_SHUTDOWN
	1152: true, // ER_ABORTING_CONNECTION
	1927: true, // ER_CONNECTION_KILLED
	4031: true, // ER_CLIENT_INTERACTION_TIMEOUT
}

// ErrBusy wraps the end of a wait of a statement's own (not its
// request's) deadline: work detached from the request, shared by several
// (a token lookup), gave up while the database was held, so the request
// that waited on it answers 503 unavailable, not a timeout of its own.
var ErrBusy = errors.New("database busy: the statement's own deadline passed")

// IsUnavailable tells whether err means the database could not be reached
// or could not take the statement now, so the same request may succeed
// later: a refused or broken connection (the server is down or
// restarting), MySQL's shutdown and connection errors, SQLite's
// SQLITE_BUSY and SQLITE_LOCKED (another process holds the file past the
// busy timeout). The API answers these 503 with Retry-After rather than
// 500, and the live module retries its state writes.
func IsUnavailable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrBusy) || errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysql.ErrInvalidConn) || errors.Is(err, sql.ErrConnDone) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) {
		return true
	}
	var my *mysql.MySQLError
	if errors.As(err, &my) {
		return mysqlUnavailable[my.Number]
	}
	if base := sqlitePrimary(err); base >= 0 {
		return base == sqlite3.SQLITE_BUSY || base == sqlite3.SQLITE_LOCKED
	}
	var op *net.OpError
	return errors.As(err, &op)
}

// IsDeadlock tells whether err is MySQL's ER_LOCK_DEADLOCK (1213): InnoDB
// rolled the transaction back to break a cycle of locks, and running it
// again is the documented answer. SQLite, on one connection, never
// deadlocks.
func IsDeadlock(err error) bool {
	var my *mysql.MySQLError
	return errors.As(err, &my) && my.Number == mysqlDeadlock
}

// RunInTxRetry runs fn in a transaction, and runs it again in a fresh one,
// up to attempts times in all, while the database reports a race the next
// try may win: a unique key another transaction took first (IsDuplicate) or
// a deadlock (IsDeadlock). Each retry waits a short pause first, random
// and doubling from try to try (txretry.Pause), and the retries stop when
// ctx is done. fn learns which attempt it is (0 first), so it can choose
// differently; it must have no effect outside the transaction.
func RunInTxRetry(ctx context.Context, db *bun.DB, attempts int, fn func(ctx context.Context, tx bun.Tx, attempt int) error) error {
	return txretry.RunInTx(ctx, db, attempts, isRace, fn)
}

// isRace tells the errors RunInTxRetry runs its transaction again for.
func isRace(err error) bool { return IsDuplicate(err) || IsDeadlock(err) }
