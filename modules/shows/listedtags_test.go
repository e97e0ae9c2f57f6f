package shows_test

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/shows"
	"github.com/onair/onair/modules/users"
)

// tagReads counts the tag cache's reads of the tags table (by id; the
// other statements on it, a tag filter's lookup by name or the reads of a
// show's tags when it changes, are not the lists').
func tagReads() *queryCounter {
	return &queryCounter{match: func(q string) bool { return strings.Contains(q, `FROM "tags" AS "t" WHERE (id IN (`) }}
}

// TestListedTags: a list reads its shows' tag ids with the page and their
// names from the tag cache. Each list's tags equal a read of the tags
// relation (put in the order they were given) on both databases; a node
// reads a tag's row once, the first time one of its lists holds it, also
// when another node wrote it; and a page whose tags are known reads
// nothing from the tags table.
func TestListedTags(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		reads := tagReads()
		env := onairtest.New(t, onairtest.Options{Backend: backend, QueryHooks: []bun.QueryHook{reads}})
		f := fixtureOn(t, env)
		other := shows.NewService(env.Core) // a second node: its own tag cache
		owner, tok := f.user("Tag Lister")
		onairtest.CreateShow(t, f.env, tok, map[string]any{"name": "Untagged", "description": "d"})
		four := onairtest.CreateShow(t, f.env, tok, map[string]any{"name": "Four tags", "description": "d", "tags": []string{"zebra", "Apple", "C#", "c"}}).Object
		onairtest.CreateShow(t, f.env, tok, map[string]any{"name": "Straße", "description": "d", "tags": []string{"Straße", "apple", "Ünïcödé"}})
		retagged := onairtest.CreateShow(t, f.env, tok, map[string]any{"name": "Retagged", "description": "d", "tags": []string{"old"}}).Object
		cleared := onairtest.CreateShow(t, f.env, tok, map[string]any{"name": "Cleared", "description": "d", "tags": []string{"gone"}}).Object

		check := func(step string, svc *shows.Service, q shows.ListQuery, wantReads int64) {
			t.Helper()
			before := reads.n.Load()
			list, count, err := svc.Lists.List(f.ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			if got := reads.n.Load() - before; got != wantReads {
				t.Fatalf("%s: %d reads of the tags table, want %d", step, got, wantReads)
			}
			if count == 0 || len(list) == 0 {
				t.Fatalf("%s: empty list", step)
			}
			for _, sh := range list {
				var want shows.Show
				if err := env.Core.DB.NewSelect().Model(&want).Relation("Tags", func(q *bun.SelectQuery) *bun.SelectQuery {
					return q.OrderExpr("t.folded ASC")
				}).Where("s.id = ?", sh.ID).Scan(f.ctx); err != nil {
					t.Fatal(err)
				}
				want.SortTags()
				names := func(tags []users.Tag) []string {
					var out []string
					for _, t := range tags {
						out = append(out, t.Name+"/"+t.Slug+"/"+t.Folded)
					}
					return out
				}
				if got, want := names(sh.Tags), names(want.Tags); !slices.Equal(got, want) {
					t.Fatalf("%s: show %q has tags %v, want %v", step, sh.Name, got, want)
				}
				if sh.User == nil {
					t.Fatalf("%s: show %q without its owner", step, sh.Name)
				}
			}
		}
		// A list reads the copy of the tag ids in each show's row: an
		// update that changes the tags (or clears them) changes it, and
		// one that leaves them alone does not.
		update := func(sh map[string]any, body map[string]any) {
			t.Helper()
			f.do(t, "PUT", "/v1/shows/"+strconv.FormatInt(onairtest.ID(sh), 10), tok, body).Expect(t, http.StatusOK)
		}
		update(retagged, map[string]any{"tags": []string{"new", "Apple"}})
		update(cleared, map[string]any{"tags": []string{}})
		update(four, map[string]any{"name": "Four tags still"})
		all := shows.ListQuery{Page: app.Page{Number: 1, Size: 50}}
		check("first list", other, all, 1)
		check("again", other, all, 0)
		check("one owner's", other, shows.ListQuery{UserID: owner.ID, Page: app.Page{Number: 1, Size: 50}}, 0)
		check("by name", other, shows.ListQuery{Filter: "tags", Page: app.Page{Number: 1, Size: 50}}, 0)
		// A tag written through the first node: the second reads it once.
		onairtest.CreateShow(t, f.env, tok, map[string]any{"name": "New tags", "description": "d", "tags": []string{"apple", "Brand new"}})
		check("a new tag", other, all, 1)
		check("known again", other, all, 0)
		check("by tag", other, shows.ListQuery{Tag: "brand new", Page: app.Page{Number: 1, Size: 50}}, 0)
	})
}
