package main

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"

	"github.com/onair/onair/app"
)

// rowLocks is MariaDB's count of row-lock waits and their time so far,
// server-wide (SHOW GLOBAL STATUS: Innodb_row_lock_waits and
// Innodb_row_lock_time, in ms). A chat POST updates its show's comment
// count inside its transaction, so every POST of every node takes the
// same row's lock until it commits; the difference over the posting
// window says how long POSTs queued for it.
type rowLocks struct {
	waits  int64
	timeMS int64
}

// readRowLocks reads them from the MariaDB of the mysql:// URL raw.
func readRowLocks(ctx context.Context, raw string) (rowLocks, error) {
	_, dsn, err := app.ParseDatabaseURL(raw)
	if err != nil {
		return rowLocks{}, err
	}
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return rowLocks{}, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, "SHOW GLOBAL STATUS WHERE Variable_name IN ('Innodb_row_lock_waits', 'Innodb_row_lock_time')")
	if err != nil {
		return rowLocks{}, fmt.Errorf("row locks: %w", err)
	}
	defer rows.Close()
	status := map[string]string{}
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return rowLocks{}, err
		}
		status[name] = value
	}
	if err := rows.Err(); err != nil {
		return rowLocks{}, err
	}
	return parseRowLocks(status)
}

// parseRowLocks reads the two status variables (names as MariaDB spells
// them).
func parseRowLocks(status map[string]string) (rowLocks, error) {
	waits, err1 := strconv.ParseInt(status["Innodb_row_lock_waits"], 10, 64)
	ms, err2 := strconv.ParseInt(status["Innodb_row_lock_time"], 10, 64)
	if err1 != nil || err2 != nil {
		return rowLocks{}, fmt.Errorf("row locks: status %v", status)
	}
	return rowLocks{waits: waits, timeMS: ms}, nil
}

func (r rowLocks) since(b rowLocks) rowLocks {
	return rowLocks{waits: r.waits - b.waits, timeMS: r.timeMS - b.timeMS}
}
