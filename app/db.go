package app

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/dialect/mysqldialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"github.com/uptrace/bun/driver/sqliteshim"
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
// SQLite runs through the pure-Go modernc driver on one connection, which
// serialises writers instead of failing them with SQLITE_BUSY.
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
		sqldb, err := sql.Open(sqliteshim.ShimName, dsn)
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
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(pingCtx); err != nil {
		db.Close()
		return nil, fmt.Errorf("database: %s does not answer: %w", driver, err)
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

// IsMySQL tells whether db speaks the MySQL dialect.
func IsMySQL(db bun.IDB) bool { return db.Dialect().Name() == dialect.MySQL }

// IsDuplicate tells whether err is a unique-key violation, on MySQL
// ("Duplicate entry", error 1062) or SQLite ("UNIQUE constraint failed"):
// the loser of a race for a unique value, to be answered or retried, never
// a 500.
func IsDuplicate(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "UNIQUE constraint failed") || strings.Contains(msg, "Duplicate entry")
}
