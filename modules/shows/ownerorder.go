package shows

import (
	"context"
	"fmt"
	"strings"

	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
)

// idKey is the unique index on shows.id on MySQL once the table is
// clustered by owner (clusterByOwner): a show's lookups by id and the
// foreign keys that reference shows(id) use it, and InnoDB needs the
// AUTO_INCREMENT column first in some index.
const idKey = "shows_id_uq"

// clusterByOwner is migration 0043: on MySQL the shows table's primary key
// becomes (user_id, id), so InnoDB stores one owner's shows together and
// a page of an owner's list (GET /v1/users/:id/shows) reads its rows from
// a few adjacent pages instead of one page per show: ids follow creation
// order across all owners, so by id alone the 50 rows of a page were 50
// scattered reads once the table outgrew the buffer pool (10M shows:
// bench/results/2026-11-28f-shows.md). The id stays the show's key (a
// unique index, which Bun's pk tag names); the secondary indexes now
// carry (user_id, id) instead of id, which the list indexes held
// already. SQLite keeps its rowid table: its pages are read from the
// file cache, and an INTEGER PRIMARY KEY is the rowid.
//
// One ALTER TABLE, which InnoDB applies whole or not at all; a run that
// finds the key in place does nothing.
func clusterByOwner(ctx context.Context, db bun.IDB) error {
	if !app.IsMySQL(db) {
		return nil
	}
	pk, err := indexColumns(ctx, db, "shows", "PRIMARY")
	if err != nil {
		return err
	}
	if pk == "user_id,id" {
		return nil
	}
	var alter []string
	if uq, err := indexColumns(ctx, db, "shows", idKey); err != nil {
		return err
	} else if uq == "" {
		alter = append(alter, "ADD UNIQUE KEY "+idKey+" (id)")
	}
	alter = append(alter, "DROP PRIMARY KEY", "ADD PRIMARY KEY (user_id, id)")
	if _, err := db.ExecContext(ctx, "ALTER TABLE shows "+strings.Join(alter, ", ")); err != nil {
		return fmt.Errorf("shows: cluster by owner: %w", err)
	}
	return nil
}

// indexColumns is the comma-separated columns of a MySQL index in order,
// "" when the table has no index of that name.
func indexColumns(ctx context.Context, db bun.IDB, table, index string) (string, error) {
	var cols []string
	err := db.NewRaw(`SELECT COLUMN_NAME FROM information_schema.STATISTICS
		WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND INDEX_NAME = ? ORDER BY SEQ_IN_INDEX`, table, index).Scan(ctx, &cols)
	if err != nil {
		return "", fmt.Errorf("shows: index %s of %s: %w", index, table, err)
	}
	return strings.Join(cols, ","), nil
}
