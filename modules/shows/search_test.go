package shows_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/shows"
)

// TestNameFilterIndex: the gram index behind ?filter= follows creates,
// renames and deletes, so the filter finds exactly what LIKE would.
func TestNameFilterIndex(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env := onairtest.New(t, onairtest.Options{Backend: backend})
		_, tok := env.CreateUser("Gram Tester")
		r := env.Do("POST", "/v1/shows", tok, map[string]any{"name": "Déjà Vu Sessions", "description": "x"}).Expect(t, http.StatusCreated)
		id := onairtest.ID(r.JSON(t)["show"].(map[string]any))
		env.Do("POST", "/v1/shows", tok, map[string]any{"name": "Vu", "description": "short name"}).Expect(t, http.StatusCreated)
		// Trigrams equal under MySQL's accent-insensitive collation.
		env.Do("POST", "/v1/shows", tok, map[string]any{"name": "Café Cafe", "description": "x"}).Expect(t, http.StatusCreated)

		count := func(filter string) int {
			t.Helper()
			body := env.Do("GET", "/v1/shows?filter="+url.QueryEscape(filter), tok, nil).Expect(t, http.StatusOK).JSON(t)
			return int(body["count"].(float64))
		}
		cases := []struct {
			filter string
			want   int
		}{
			{"jà vu s", 1}, {"SESSIONS", 1}, {"vu", 2}, {"v", 2}, {"sessionsx", 0}, {"ions ses", 0},
		}
		for _, c := range cases {
			if got := count(c.filter); got != c.want {
				t.Errorf("filter %q: %d shows, want %d", c.filter, got, c.want)
			}
		}
		env.Do("PUT", fmt.Sprintf("/v1/shows/%d", id), tok, map[string]any{"name": "Morning Coffee"}).Expect(t, http.StatusOK)
		if got := count("sessions"); got != 0 {
			t.Errorf("old name still found after a rename: %d", got)
		}
		if got := count("g coff"); got != 1 {
			t.Errorf("new name not found after a rename: %d", got)
		}
		env.Do("DELETE", fmt.Sprintf("/v1/shows/%d", id), tok, nil).Expect(t, http.StatusOK)
		if got := count("g coff"); got != 0 {
			t.Errorf("deleted show still found: %d", got)
		}
		if n := indexed(t, env, id, "g coff"); n != 0 {
			t.Errorf("%d index entries of a deleted show remain", n)
		}
		// Quotes and FTS5 operators in a term are text, not syntax.
		for _, f := range []string{`"vu"`, `vu" OR "caf`, "NEAR(caf", "caf*", "a:b"} {
			if got := count(f); got != 0 {
				t.Errorf("filter %q: %d shows, want 0", f, got)
			}
		}
	})
}

// indexed is the number of entries of the name index for show id that
// hold term: its gram rows on MySQL, its FTS5 matches on SQLite.
func indexed(t *testing.T, env *onairtest.Env, id int64, term string) int {
	t.Helper()
	ctx := context.Background()
	var n int
	var err error
	if app.IsMySQL(env.Core.DB) {
		var c int64
		c, err = env.Core.DB.NewSelect().Model((*shows.ShowGram)(nil)).Where("show_id = ?", id).Count(ctx)
		n = int(c)
	} else {
		err = env.Core.DB.NewRaw("SELECT COUNT(*) FROM show_names WHERE show_names MATCH ? AND rowid = ?", `"`+term+`"`, id).Scan(ctx, &n)
	}
	if err != nil {
		t.Fatalf("name index: %v", err)
	}
	return n
}

// TestNameFilterIndexAroundService: on SQLite the FTS5 index follows
// names written around the service too (triggers on shows): a raw
// rename, insert and delete; on both backends the filter's count stays
// that of a LIKE over every name.
func TestNameFilterIndexAroundService(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env := onairtest.New(t, onairtest.Options{Backend: backend})
		_, tok := env.CreateUser("Raw Writer")
		r := env.Do("POST", "/v1/shows", tok, map[string]any{"name": "Harbour Lights", "description": "x"}).Expect(t, http.StatusCreated)
		id := onairtest.ID(r.JSON(t)["show"].(map[string]any))
		ctx := context.Background()
		count := func(filter string) int {
			t.Helper()
			body := env.Do("GET", "/v1/shows?filter="+url.QueryEscape(filter), tok, nil).Expect(t, http.StatusOK).JSON(t)
			return int(body["count"].(float64))
		}
		if got := count("bour li"); got != 1 {
			t.Fatalf("filter before the raw rename: %d, want 1", got)
		}
		if _, err := env.Core.DB.NewUpdate().Model((*shows.Show)(nil)).Set("name = ?", "Quay Nights").Where("id = ?", id).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		if backend == "sqlite" {
			if n := indexed(t, env, id, "bour li"); n != 0 {
				t.Errorf("old name still indexed after a raw rename: %d", n)
			}
			if n := indexed(t, env, id, "ay nig"); n != 1 {
				t.Errorf("new name not indexed after a raw rename: %d", n)
			}
			// Nothing but the triggers wrote the index: LIKE and the
			// index agree on every term.
			if got := count("ay nig"); got != 1 {
				t.Errorf("filter after the raw rename: %d, want 1", got)
			}
		}
		if _, err := env.Core.DB.NewDelete().Model((*shows.Show)(nil)).Where("id = ?", id).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		if backend == "sqlite" {
			if n := indexed(t, env, id, "ay nig"); n != 0 {
				t.Errorf("raw-deleted show still indexed: %d", n)
			}
		}
	})
}

// TestRegenerateStreamKey: the owner gets a new key through the API, the
// old one is refused, and nobody else may do it.
func TestRegenerateStreamKey(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{})
	_, owner := env.CreateUser("Key Owner")
	_, other := env.CreateUser("Key Other")
	r := env.Do("POST", "/v1/shows", owner, map[string]any{"name": "Leaky", "description": "x"}).Expect(t, http.StatusCreated)
	show := r.JSON(t)["show"].(map[string]any)
	id, oldKey := onairtest.ID(show), show["stream_key"].(string)
	env.Do("POST", fmt.Sprintf("/v1/shows/%d/stream_key", id), other, nil).Expect(t, http.StatusForbidden)
	fresh := env.Do("POST", fmt.Sprintf("/v1/shows/%d/stream_key", id), owner, nil).Expect(t, http.StatusOK).JSON(t)["show"].(map[string]any)
	newKey, _ := fresh["stream_key"].(string)
	if newKey == "" || newKey == oldKey || fresh["stream_url"] == nil {
		t.Fatalf("new key %q (old %q), stream_url %v", newKey, oldKey, fresh["stream_url"])
	}
	svc := shows.From(env.Core)
	if _, err := svc.Keys.Authorize(context.Background(), oldKey); err == nil {
		t.Error("the old key is still accepted")
	}
	if sh, err := svc.Keys.Authorize(context.Background(), newKey); err != nil || sh.ID != id {
		t.Errorf("the new key is refused: %v", err)
	}
}

// TestNameMatchesConcurrentMisses: requests of one term that all miss the
// kept matches at once (a show change just moved the generation) share
// one read and all answer the exact count of that generation, on both
// backends, change after change.
func TestNameMatchesConcurrentMisses(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env := onairtest.New(t, onairtest.Options{Backend: backend})
		_, tok := env.CreateUser("Sunrise Racer")
		var ids []int64
		for i := 0; i < 6; i++ {
			r := env.Do("POST", "/v1/shows", tok, map[string]any{"name": fmt.Sprintf("Sunrise Set %d", i), "description": "x"}).Expect(t, http.StatusCreated)
			ids = append(ids, onairtest.ID(r.JSON(t)["show"].(map[string]any)))
		}
		want := len(ids)
		for step, id := range ids {
			// Each rename moves the generation and takes one show out of
			// the term's matches.
			env.Do("PUT", fmt.Sprintf("/v1/shows/%d", id), tok, map[string]any{"name": fmt.Sprintf("Dusk %d", step)}).Expect(t, http.StatusOK)
			want--
			const n = 8
			counts := make([]int, n)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := 0; i < n; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					<-start
					r := env.Do("GET", "/v1/shows?filter=sunrise+set", tok, nil)
					if r.Status != http.StatusOK {
						counts[i] = -r.Status
						return
					}
					var body struct {
						Count int `json:"count"`
					}
					if err := json.Unmarshal(r.Body, &body); err != nil {
						counts[i] = -1
						return
					}
					counts[i] = body.Count
				}(i)
			}
			close(start)
			wg.Wait()
			for i, c := range counts {
				if c != want {
					t.Fatalf("step %d, request %d: count %d, want %d", step, i, c, want)
				}
			}
		}
	})
}

// TestNameMatchesInChunks: a name filter's public matches confirmed in
// chunks of ids on several connections (MySQL; SQLite reads them in one
// statement either way) answer the same pages and counts as one
// statement: hidden shows, other owners, a tag, equal starts and a name
// that holds the term's grams but not the term.
func TestNameMatchesInChunks(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		f := newFixture(t, backend)
		owner, _ := f.user("Chunk Owner")
		other, _ := f.user("Chunk Other")
		base := time.Date(2024, 5, 1, 6, 0, 0, 0, time.UTC)
		var specs []seedSpec
		for i := range 23 {
			s := seedSpec{owner: owner.ID, name: fmt.Sprintf("Sunrise Chunk %d", i), start: base.Add(time.Duration(i%7) * time.Hour), complete: true}
			switch i % 5 {
			case 1:
				s.owner = other.ID
			case 2:
				s.private = true
			case 3:
				s.owner, s.off = other.ID, true
			case 4:
				s.tags = []string{"chunky"}
			}
			specs = append(specs, s)
		}
		specs = append(specs,
			seedSpec{owner: other.ID, name: "Sunset Chunk rise", start: base, complete: true},
			seedSpec{owner: other.ID, name: "Morning Chunk", start: base, complete: true})
		f.seed(t, specs)
		queries := []shows.ListQuery{
			{Filter: "sunrise"}, {Filter: "sunrise", Viewer: principal(owner)}, {Filter: "sunrise", Viewer: principal(other)},
			{Filter: "sunrise", Tag: "chunky", Viewer: principal(other)}, {Filter: "chunk", Viewer: principal(owner), Page: app.Page{Number: 2, Size: 5}},
			{Filter: "rise chunk 1", Viewer: principal(other)}, {Filter: "sunrisez", Viewer: principal(owner)},
		}
		read := func(chunk, candidates int) []string {
			t.Helper()
			shows.SetNameMatchChunks(t, f.svc, chunk, candidates)
			var out []string
			for _, q := range queries {
				items, count, err := shows.FreshListItems(f.ctx, f.svc, q)
				if err != nil {
					t.Fatalf("%+v: %v", q, err)
				}
				out = append(out, fmt.Sprintf("%d %s", count, items))
			}
			return out
		}
		want := read(3, 0)
		// Name-only lists read their gram's rows (gramMatches) unless
		// the gram is over the scan cap: sunrise's rarest gram has 23
		// rows and 14 public matches (cap 5: the rows, estimated past
		// twice the cap, are not read; 12: read, the matches past the cap
		// dropped; 14: at the cap); a match list over the kept cap read
		// whole answers its request alone.
		keep := func(keep int, scan int64) []string {
			t.Helper()
			shows.SetNameMatchCaps(t, f.svc, keep, scan)
			return read(3, 1000)
		}
		// A gram's rows read in ranges at once (its estimate past 0).
		split := func(scan int64) []string {
			t.Helper()
			shows.SetGramSplitRows(t, 0)
			return keep(20_000, scan)
		}
		for _, got := range [][]string{read(3, 1000), read(1, 1000), read(500, 1000), keep(20_000, -1), keep(20_000, 5), keep(20_000, 12), keep(20_000, 14), keep(2, 1_000_000), keep(2, -1),
			split(1_000_000), split(12), split(14)} {
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("%+v: chunked %s, one statement %s", queries[i], got[i], want[i])
				}
			}
		}
		if !strings.HasPrefix(want[1], "19 ") {
			t.Errorf("owner's sunrise list: %.40s, want 19 shows", want[1])
		}
	})
}
