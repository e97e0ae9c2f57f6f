package benchkit

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strings"

	"github.com/onair/onair/app"
)

// LockMySQLDatabase takes the MariaDB named lock of the database of a
// mysql:// URL for one benchmark run, so two runs (two people, two
// sessions) cannot drop and remake the database under each other: the
// second is refused at once, naming the database. The lock is the
// server's (GET_LOCK) and held by one connection: release closes it, and
// a run that dies releases it with its connection.
func LockMySQLDatabase(ctx context.Context, raw string) (release func(), err error) {
	name, server, err := mysqlServer(raw)
	if err != nil {
		return nil, err
	}
	_, dsn, err := app.ParseDatabaseURL(server)
	if err != nil {
		return nil, err
	}
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return nil, err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, err
	}
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, 0)", "onair_bench:"+name).Scan(&got); err != nil {
		conn.Close()
		db.Close()
		return nil, err
	}
	if got.Int64 != 1 {
		conn.Close()
		db.Close()
		return nil, fmt.Errorf("another benchmark run is using the database %s (MariaDB lock onair_bench:%s held); wait for it or name another database", name, name)
	}
	return func() { conn.Close(); db.Close() }, nil
}

// mysqlServer splits a mysql:// URL into its database's name and the
// URL of the server's mysql database.
func mysqlServer(raw string) (name, server string, err error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "mysql" {
		return "", "", fmt.Errorf("%s: not a mysql:// URL", raw)
	}
	name = strings.TrimPrefix(u.Path, "/")
	if name == "" || strings.ContainsAny(name, "`;/ ") || len(name) > 52 {
		return "", "", fmt.Errorf("%s: needs a plain database name", raw)
	}
	su := *u
	su.Path = "/mysql"
	return name, su.String(), nil
}

// MySQLDatabase makes the database of a mysql:// URL if it is missing,
// dropping it first when drop is set, so a benchmark starts on a fresh
// or a kept database as it chooses.
func MySQLDatabase(ctx context.Context, raw string, drop bool) error {
	name, server, err := mysqlServer(raw)
	if err != nil {
		return err
	}
	_, dsn, err := app.ParseDatabaseURL(server)
	if err != nil {
		return err
	}
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	if drop {
		if _, err := db.ExecContext(ctx, "DROP DATABASE IF EXISTS `"+name+"`"); err != nil {
			return err
		}
	}
	_, err = db.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS `"+name+"` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci")
	return err
}
