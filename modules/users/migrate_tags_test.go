package users_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"testing"

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
			return int64(r.Expect(t, http.StatusCreated).JSON(t)["show"].(map[string]any)["id"].(float64))
		}
		both, one := newShow("Both spellings"), newShow("One spelling")

		// Back to the old shape: slug is the unique identity, no folded.
		db := env.Core.DB
		old := []string{
			"ALTER TABLE tags DROP COLUMN slug",
			"ALTER TABLE tags RENAME COLUMN folded TO slug",
		}
		if app.IsMySQL(db) {
			old[1] = "ALTER TABLE tags CHANGE COLUMN folded slug VARCHAR(60) NOT NULL"
		}
		old = append(old,
			"UPDATE tags SET slug = 'deep-house'",
			// Two tags the old slug told apart and the new key does not.
			"INSERT INTO tags (id, name, slug) VALUES (100, 'Straße', 'stra-e'), (101, 'STRASSE', 'strasse')",
			fmt.Sprintf("INSERT INTO show_tags (show_id, tag_id, start) SELECT id, 100, start FROM shows WHERE id = %d", both),
			fmt.Sprintf("INSERT INTO show_tags (show_id, tag_id, start) SELECT id, 101, start FROM shows WHERE id IN (%d, %d)", both, one),
			fmt.Sprintf("INSERT INTO user_tags (user_id, tag_id) VALUES (%d, 101)", owner.ID),
			"DELETE FROM onair_migrations WHERE id = 'users:0006_tag_identity'",
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
		if fmt.Sprint(after.Show.Tags) != "[{C c} {C# c} {Deep House deep-house}]" {
			t.Errorf("tags after the migration: %v", after.Show.Tags)
		}
	})
}
