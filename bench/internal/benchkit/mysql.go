package benchkit

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strings"

	"github.com/onair/onair/app"
)

// MySQLDatabase makes the database of a mysql:// URL if it is missing,
// dropping it first when drop is set, so a benchmark starts on a fresh
// or a kept database as it chooses.
func MySQLDatabase(ctx context.Context, raw string, drop bool) error {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "mysql" {
		return fmt.Errorf("%s: not a mysql:// URL", raw)
	}
	name := strings.TrimPrefix(u.Path, "/")
	if name == "" || strings.ContainsAny(name, "`;/ ") {
		return fmt.Errorf("%s: needs a plain database name", raw)
	}
	server := *u
	server.Path = "/mysql"
	_, dsn, err := app.ParseDatabaseURL(server.String())
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
