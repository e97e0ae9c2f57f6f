package shows_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/onair/onair/internal/onairtest"
)

// TestClusterByOwnerMigration upgrades a MySQL database whose shows are
// stored by id, with several owners' shows interleaved: migration
// shows:0043 stores them by (user_id, id), every row keeps its id and its
// columns, ids stay unique and the next show takes the next id. SQLite
// keeps its rowid table.
func TestClusterByOwnerMigration(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		env := onairtest.New(t, onairtest.Options{Backend: backend})
		if backend != "mysql" {
			var pk []string
			if err := env.Core.DB.NewRaw("SELECT name FROM pragma_table_info('shows') WHERE pk > 0").Scan(ctx, &pk); err != nil {
				t.Fatal(err)
			}
			if strings.Join(pk, ",") != "id" {
				t.Fatalf("the SQLite shows table's primary key: %v, want id", pk)
			}
			return
		}
		if got := primaryKey(t, env); got != "user_id,id" {
			t.Fatalf("a new database's shows primary key: %q, want user_id,id", got)
		}
		var toks []string
		for i := range 3 {
			_, tok := env.CreateUser(fmt.Sprintf("Owner %d", i))
			toks = append(toks, tok)
		}
		for i := range 12 {
			env.Do("POST", "/v1/shows", toks[i%3], map[string]any{"name": fmt.Sprintf("Set %d", i), "description": "d"}).Expect(t, http.StatusCreated)
		}
		for _, q := range []string{
			"ALTER TABLE shows DROP PRIMARY KEY, ADD PRIMARY KEY (id), DROP INDEX shows_id_uq",
			"DELETE FROM onair_migrations WHERE id = 'shows:0043_cluster_by_owner'",
		} {
			if _, err := env.Core.DB.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		if got := primaryKey(t, env); got != "id" {
			t.Fatalf("the table before the migration: primary key %q", got)
		}
		before := showRows(t, env)
		if err := env.Shutdown(); err != nil {
			t.Fatal(err)
		}

		env2 := onairtest.New(t, onairtest.Options{DatabaseURL: env.Core.Config.DatabaseURL})
		if got := primaryKey(t, env2); got != "user_id,id" {
			t.Fatalf("primary key after the migration: %q, want user_id,id", got)
		}
		var unique string
		err := env2.Core.DB.NewRaw(`SELECT GROUP_CONCAT(COLUMN_NAME ORDER BY SEQ_IN_INDEX) FROM information_schema.STATISTICS
			WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'shows' AND INDEX_NAME = 'shows_id_uq' AND NON_UNIQUE = 0`).Scan(ctx, &unique)
		if err != nil || unique != "id" {
			t.Fatalf("unique key on id after the migration: %q %v", unique, err)
		}
		if after := showRows(t, env2); after != before {
			t.Fatalf("rows changed by the migration:\nbefore %s\nafter  %s", before, after)
		}
		r := env2.Do("POST", "/v1/shows", toks[0], map[string]any{"name": "After", "description": "d"}).Expect(t, http.StatusCreated)
		var maxBefore int64
		if err := env2.Core.DB.NewRaw("SELECT MAX(id) FROM shows WHERE name <> 'After'").Scan(ctx, &maxBefore); err != nil {
			t.Fatal(err)
		}
		if got := onairtest.ID(r.JSON(t)["show"].(map[string]any)); got <= maxBefore {
			t.Fatalf("a show created after the migration has id %d, not past %d", got, maxBefore)
		}
		if _, err := env2.Core.DB.ExecContext(ctx, "INSERT INTO shows (id, user_id, slug, name, description, start, created_at, updated_at, thumbnail_label, stream_key) SELECT id, user_id + 1, 'dup', name, description, start, created_at, updated_at, thumbnail_label, 'k' FROM shows WHERE user_id = (SELECT MIN(user_id) FROM shows) LIMIT 1"); err == nil {
			t.Fatal("a second row took an existing id under another owner")
		}
	})
}

func primaryKey(t *testing.T, env *onairtest.Env) string {
	t.Helper()
	var pk string
	err := env.Core.DB.NewRaw(`SELECT GROUP_CONCAT(COLUMN_NAME ORDER BY SEQ_IN_INDEX) FROM information_schema.STATISTICS
		WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'shows' AND INDEX_NAME = 'PRIMARY'`).Scan(context.Background(), &pk)
	if err != nil {
		t.Fatal(err)
	}
	return pk
}

// showRows is every show's id, owner, slug and name, and a checksum of
// every column, in id order.
func showRows(t *testing.T, env *onairtest.Env) string {
	t.Helper()
	var rows []string
	err := env.Core.DB.NewRaw(`SELECT CONCAT_WS('/', id, user_id, slug, name, MD5(CONCAT_WS('|', id, user_id, slug, name, description, start,
		created_at, updated_at, live, complete, archive, featured, private, off, stream_key, tag_ids, thumbnail_label)))
		FROM shows ORDER BY id`).Scan(context.Background(), &rows)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 12 {
		t.Fatalf("%d shows, want 12", len(rows))
	}
	return strings.Join(rows, "; ")
}
