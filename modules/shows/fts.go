package shows

import (
	"context"
	"fmt"
	"strings"

	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
)

// The name filter on SQLite (docs/shows.md, "Indexes"). SQLite's FTS5 has
// a trigram tokenizer: an FTS5 phrase of three characters or more matches
// the rows whose text holds it as a substring, case folded, from the
// index, the candidates cut before a row of shows is read. The index is an
// external-content FTS5 table over shows.name, kept by triggers on shows,
// so every way a name changes (the service, the console, a restore, rows
// written around the service) keeps it exact. The LIKE of whereNameContains
// still decides, so the semantics stay those of the spec (a substring,
// compared lower-cased) and the index only narrows. On SQLite the
// show_grams table is then unused and left empty; MySQL and MariaDB keep
// it (MariaDB has no n-gram FULLTEXT parser, and InnoDB's FULLTEXT matches
// words, not substrings).
const nameFTSTable = "show_names"

var nameFTSStatements = []string{
	`CREATE VIRTUAL TABLE show_names USING fts5(name, content='shows', content_rowid='id', tokenize='trigram')`,
	`CREATE TRIGGER show_names_ai AFTER INSERT ON shows BEGIN
		INSERT INTO show_names (rowid, name) VALUES (new.id, new.name);
	END`,
	`CREATE TRIGGER show_names_ad AFTER DELETE ON shows BEGIN
		INSERT INTO show_names (show_names, rowid, name) VALUES ('delete', old.id, old.name);
	END`,
	`CREATE TRIGGER show_names_au AFTER UPDATE OF name ON shows BEGIN
		INSERT INTO show_names (show_names, rowid, name) VALUES ('delete', old.id, old.name);
		INSERT INTO show_names (rowid, name) VALUES (new.id, new.name);
	END`,
	// Index the names already there.
	`INSERT INTO show_names (show_names) VALUES ('rebuild')`,
}

// createNameFTS is migration 0030: the FTS5 index of the names, on SQLite
// only, and the gram rows it replaces there emptied.
func createNameFTS(ctx context.Context, db bun.IDB) error {
	if app.IsMySQL(db) {
		return nil
	}
	for _, q := range nameFTSStatements {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("shows: name index: %w", err)
		}
	}
	if _, err := db.NewDelete().Model((*ShowGram)(nil)).Where("1 = 1").Exec(ctx); err != nil {
		return fmt.Errorf("shows: name index: %w", err)
	}
	return nil
}

// ftsPhrase quotes a term as one FTS5 phrase: inside double quotes every
// character is literal, a double quote doubled.
func ftsPhrase(term string) string {
	return `"` + strings.ReplaceAll(term, `"`, `""`) + `"`
}
