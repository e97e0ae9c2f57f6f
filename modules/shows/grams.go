package shows

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
	"github.com/onair/onair/migrations"
)

// gramChunk is how many gram rows one statement of RebuildGrams copies.
const gramChunk = 100_000

// addGramKeys is migration 0042: the gram rows' copies of their show's
// name, start and visibility (ShowGram), filled by RebuildGrams. Adding
// the columns is instant on MariaDB; the fill rewrites the table.
func addGramKeys(ctx context.Context, db bun.IDB) error {
	if err := migrations.AddColumns((*ShowGram)(nil), "name", "start", "public")(ctx, db); err != nil {
		return err
	}
	return RebuildGrams(ctx, db)
}

// RebuildGrams rewrites show_grams (MySQL; SQLite keeps it empty, fts.go)
// with each row's copy of its show's name, start and visibility read from
// shows, for rows written around the service (bench/shows's seed loads
// the grams alone) and for migration 0042.
//
// It copies the table into a new one in its primary key's order, a chunk a
// statement, each row's show read in the name cover index (a narrow copy
// of those columns in id order that stays in the buffer pool) rather than
// in the rows, builds the show index once at the end, and swaps the tables.
// An update in place would visit the gram rows in show order, a random
// read and write each, and grow every row where it stands. Orphan rows (a
// show gone) are left behind. It must not run beside writers of the grams:
// a migration runs before the node serves, a seed before the benchmark.
func RebuildGrams(ctx context.Context, db bun.IDB) error {
	if !app.IsMySQL(db) {
		return nil
	}
	exec := func(q string, args ...any) error {
		if _, err := db.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("shows: rebuild grams: %w", err)
		}
		return nil
	}
	if err := exec("DROP TABLE IF EXISTS show_grams_new, show_grams_old"); err != nil {
		return err
	}
	if err := exec("CREATE TABLE show_grams_new LIKE show_grams"); err != nil {
		return err
	}
	var idx int
	err := db.NewRaw("SELECT COUNT(*) FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = 'show_grams_new' AND index_name = 'show_grams_show_idx'").Scan(ctx, &idx)
	if err != nil {
		return fmt.Errorf("shows: rebuild grams: %w", err)
	}
	if idx > 0 {
		if err := exec("ALTER TABLE show_grams_new DROP INDEX show_grams_show_idx"); err != nil {
			return err
		}
	}
	var (
		gram string
		id   int64
	)
	for {
		res, err := db.ExecContext(ctx, `INSERT INTO show_grams_new (gram, show_id, name, start, public)
			SELECT g.gram, g.show_id, s.name, s.start, s.private = 0 AND s.off = 0
			FROM show_grams AS g FORCE INDEX (PRIMARY) STRAIGHT_JOIN shows AS s FORCE INDEX (`+nameCoverIndex+`) ON s.id = g.show_id
			WHERE g.gram > ? OR (g.gram = ? AND g.show_id > ?)
			ORDER BY g.gram, g.show_id LIMIT ?`, gram, gram, id, gramChunk)
		if err != nil {
			return fmt.Errorf("shows: rebuild grams: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			break
		}
		err = db.QueryRowContext(ctx, "SELECT gram, show_id FROM show_grams_new ORDER BY gram DESC, show_id DESC LIMIT 1").Scan(&gram, &id)
		if err != nil {
			return fmt.Errorf("shows: rebuild grams: %w", err)
		}
	}
	for _, q := range []string{
		"ALTER TABLE show_grams_new ADD INDEX show_grams_show_idx (show_id)",
		"RENAME TABLE show_grams TO show_grams_old, show_grams_new TO show_grams",
		"DROP TABLE show_grams_old",
	} {
		if err := exec(q); err != nil {
			return err
		}
	}
	return nil
}
