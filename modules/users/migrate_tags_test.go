package users_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"testing"

	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
)

// TestTagIdentityMigration upgrades a database whose tags still have the
// old shape (a unique, lossy slug as identity) and checks that migration
// users:0006 keys every tag by its text, merges the tags that now share a
// key without losing a link, and that the API then finds them by the rule.
func TestTagIdentityMigration(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		env := onairtest.New(t, onairtest.Options{Backend: backend})
		owner, tok := env.CreateUser("Old Tagger")
		newShow := func(name string) int64 {
			r := env.Do("POST", "/v1/shows", tok, map[string]any{"name": name, "description": "d", "tags": []string{"Deep House"}})
			return onairtest.ID(r.Expect(t, http.StatusCreated).JSON(t)["show"].(map[string]any))
		}
		both, one := newShow("Both spellings"), newShow("One spelling")

		// Back to the old shape: slug is the unique identity, no folded.
		db := env.Core.DB
		old := []string{
			dropSlugIndex(db),
			"ALTER TABLE tags DROP COLUMN slug",
			"ALTER TABLE tags RENAME COLUMN folded TO slug",
		}
		if app.IsMySQL(db) {
			old[2] = "ALTER TABLE tags CHANGE COLUMN folded slug VARCHAR(60) NOT NULL"
		}
		old = append(old,
			"UPDATE tags SET slug = 'deep-house'",
			// Two tags the old slug told apart and the new key does not.
			"INSERT INTO tags (id, name, slug) VALUES (100, 'Straße', 'stra-e'), (101, 'STRASSE', 'strasse')",
			fmt.Sprintf("INSERT INTO show_tags (show_id, tag_id, start) SELECT id, 100, start FROM shows WHERE id = %d", both),
			fmt.Sprintf("INSERT INTO show_tags (show_id, tag_id, start) SELECT id, 101, start FROM shows WHERE id IN (%d, %d)", both, one),
			fmt.Sprintf("INSERT INTO user_tags (user_id, tag_id) VALUES (%d, 101)", owner.ID),
			"DELETE FROM onair_migrations WHERE id IN ('users:0006_tag_identity', 'users:0009_tag_slugs')",
		)
		for _, q := range old {
			if _, err := db.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		if err := env.Shutdown(); err != nil {
			t.Fatal(err)
		}

		// A second boot on the same database runs the migration.
		env2 := onairtest.New(t, onairtest.Options{DatabaseURL: env.Core.Config.DatabaseURL})
		if app.IsMySQL(env2.Core.DB) {
			var collation string
			if err := env2.Core.DB.NewRaw(`SELECT COLLATION_NAME FROM information_schema.COLUMNS
				WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'tags' AND COLUMN_NAME = 'folded'`).Scan(ctx, &collation); err != nil {
				t.Fatal(err)
			}
			if collation != "utf8mb4_bin" {
				t.Errorf("tags.folded collation %q, want utf8mb4_bin", collation)
			}
		}
		tags := func(path string, key string) []string {
			t.Helper()
			var out []string
			obj := env2.Do("GET", path, tok, nil).Expect(t, http.StatusOK).JSON(t)[key].(map[string]any)
			for _, tag := range obj["tags"].([]any) {
				tm := tag.(map[string]any)
				out = append(out, fmt.Sprintf("%s/%s", tm["name"], tm["slug"]))
			}
			return out
		}
		if got, want := tags(fmt.Sprintf("/v1/shows/%d", both), "show"), []string{"Deep House/deep-house", "Straße/stra-e"}; !slices.Equal(got, want) {
			t.Errorf("show tagged with both spellings: %v, want %v", got, want)
		}
		if got, want := tags(fmt.Sprintf("/v1/shows/%d", one), "show"), []string{"Deep House/deep-house", "Straße/stra-e"}; !slices.Equal(got, want) {
			t.Errorf("show tagged STRASSE: %v, want %v (merged into the older tag)", got, want)
		}
		// A list reads the shows' copies of their tag ids (shows.tag_ids),
		// which follow the merge.
		var listed struct {
			Shows []struct {
				ID   int64
				Tags []struct{ Name, Slug string }
			} `json:"shows"`
		}
		env2.Do("GET", "/v1/shows?tag=strasse", tok, nil).Expect(t, http.StatusOK).Decode(t, &listed)
		if len(listed.Shows) != 2 {
			t.Fatalf("?tag=strasse lists %d shows, want 2", len(listed.Shows))
		}
		for _, sh := range listed.Shows {
			if got := fmt.Sprint(sh.Tags); got != "[{Deep House deep-house} {Straße stra-e}]" {
				t.Errorf("listed show %d has tags %s, want Deep House and Straße", sh.ID, got)
			}
		}
		if got, want := tags("/v1/users/me", "user"), []string{"Straße/stra-e"}; !slices.Equal(got, want) {
			t.Errorf("user tags: %v, want %v", got, want)
		}
		for _, q := range []string{"strasse", "STRASSE", "straße", "deep house", "DEEP HOUSE"} {
			var l struct {
				Count int `json:"count"`
			}
			env2.Do("GET", "/v1/shows?tag="+url.QueryEscape(q), tok, nil).Expect(t, http.StatusOK).Decode(t, &l)
			if l.Count != 2 {
				t.Errorf("?tag=%s: %d shows, want 2", q, l.Count)
			}
		}
		// A new spelling joins the existing tag, and C and C# are apart.
		r := env2.Do("POST", "/v1/shows", tok, map[string]any{"name": "After", "description": "d", "tags": []string{"deep  HOUSE", "C", "C#"}})
		var after struct {
			Show struct {
				Tags []struct{ Name, Slug string } `json:"tags"`
			} `json:"show"`
		}
		r.Expect(t, http.StatusCreated).Decode(t, &after)
		if fmt.Sprint(after.Show.Tags) != "[{Deep House deep-house} {C c} {C# c-sharp}]" { // as given
			t.Errorf("tags after the migration: %v", after.Show.Tags)
		}
	})
}

// dropSlugIndex is the statement that drops migration 0009's index.
func dropSlugIndex(db bun.IDB) string {
	if app.IsMySQL(db) {
		return "DROP INDEX tags_slug_uq ON tags"
	}
	return "DROP INDEX tags_slug_uq"
}

// TestTagSlugMigration upgrades a database whose tags have the slugs of
// before migration users:0009 (C, C# and C++ all c; Café and Cafe both
// cafe) and checks that every tag then has its own slug, the oldest tag
// keeping the plain one, that ?tag=<slug> lists exactly each tag's shows,
// and that the database refuses a second tag with a taken slug.
func TestTagSlugMigration(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		env := onairtest.New(t, onairtest.Options{Backend: backend})
		_, tok := env.CreateUser("Slug Upgrader")
		shows := map[string]int64{}
		for _, tag := range []string{"C", "C#", "C++", "Café", "Cafe", "Deep House"} {
			r := env.Do("POST", "/v1/shows", tok, map[string]any{"name": tag + " show", "description": "d", "tags": []string{tag}})
			shows[tag] = onairtest.ID(r.Expect(t, http.StatusCreated).JSON(t)["show"].(map[string]any))
		}
		db := env.Core.DB
		for _, q := range []string{
			dropSlugIndex(db),
			"UPDATE tags SET slug = 'c' WHERE name IN ('C', 'C#', 'C++')",
			"UPDATE tags SET slug = 'cafe' WHERE name IN ('Café', 'Cafe')",
			"DELETE FROM onair_migrations WHERE id = 'users:0009_tag_slugs'",
		} {
			if _, err := db.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		if err := env.Shutdown(); err != nil {
			t.Fatal(err)
		}

		env2 := onairtest.New(t, onairtest.Options{DatabaseURL: env.Core.Config.DatabaseURL})
		want := map[string]string{"C": "c", "C#": "c-sharp", "C++": "c-plus-plus", "Café": "cafe", "Cafe": "cafe-2", "Deep House": "deep-house"}
		for tag, show := range shows {
			var got struct {
				Show struct {
					Tags []struct{ Name, Slug string } `json:"tags"`
				} `json:"show"`
			}
			env2.Do("GET", fmt.Sprintf("/v1/shows/%d", show), tok, nil).Expect(t, http.StatusOK).Decode(t, &got)
			if len(got.Show.Tags) != 1 || got.Show.Tags[0].Slug != want[tag] {
				t.Errorf("%s: tags %v, want the slug %s", tag, got.Show.Tags, want[tag])
				continue
			}
			var listed struct {
				Shows []struct{ ID int64 } `json:"shows"`
			}
			env2.Do("GET", "/v1/shows?tag="+url.QueryEscape(want[tag]), tok, nil).Expect(t, http.StatusOK).Decode(t, &listed)
			if len(listed.Shows) != 1 || listed.Shows[0].ID != show {
				t.Errorf("?tag=%s: %v, want show %d alone", want[tag], listed.Shows, show)
			}
		}
		if _, err := env2.Core.DB.ExecContext(ctx, "INSERT INTO tags (name, folded, slug) VALUES ('x', 'x', 'c-sharp')"); err == nil {
			t.Error("a second tag with the slug c-sharp was stored")
		}
	})
}
