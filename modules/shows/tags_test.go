package shows_test

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"testing"

	"github.com/onair/onair/internal/onairtest"
)

// tagsOf returns a show's tags as "name/slug".
func tagsOf(sh map[string]any) []string {
	var out []string
	for _, t := range sh["tags"].([]any) {
		tm := t.(map[string]any)
		out = append(out, fmt.Sprintf("%s/%s", tm["name"], tm["slug"]))
	}
	return out
}

// TestTagIdentity: a tag is its trimmed, white-space-collapsed, case-folded
// text (docs/api.md, "Tags"), the same on both databases: punctuation and
// accents tell tags apart, case and spacing do not, and ?tag= finds a tag by
// its slug, else by the same rule. Every tag has its own slug. Blank tags
// are dropped.
func TestTagIdentity(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		f := newFixture(t, backend)
		_, tok := f.user("Tag Tester")
		mk := func(name string, tags ...string) int64 {
			t.Helper()
			return onairtest.CreateShow(t, f.env, tok, map[string]any{"name": name, "description": "d", "tags": tags}).ID
		}
		c := mk("C show", "C")
		cSharp := mk("C# show", "C#")
		cpp := mk("C++ show", "C++")
		house := mk("House show", "House")
		spaced := mk("Spaced house show", " house ")
		loud := mk("Loud house show", "HOUSE", "house", "House ")
		cafe := mk("Café show", "Café")
		plain := mk("Cafe show", "Cafe")
		// A decomposed é (e + U+0301) is the same text as the precomposed one.
		decomposed := mk("Decomposed café show", "Cafe\u0301")
		strasse := mk("Straße show", "Straße")
		upper := mk("STRASSE show", "STRASSE")
		deep := mk("Deep show", "Deep   House")
		deep2 := mk("Deep show 2", "deep house", "deep\u00a0house")
		kanji := mk("Kanji show", "日本")

		get := func(id int64) map[string]any {
			return showOf(t, f.do(t, "GET", fmt.Sprintf("/v1/shows/%d", id), tok, nil).Expect(t, http.StatusOK))
		}
		for _, tc := range []struct {
			id   int64
			want []string
		}{
			{c, []string{"C/c"}}, {cSharp, []string{"C#/c-sharp"}}, {cpp, []string{"C++/c-plus-plus"}},
			// The first spelling names the shared tag.
			{house, []string{"House/house"}}, {spaced, []string{"House/house"}}, {loud, []string{"House/house"}},
			// Café was first to the slug cafe; Cafe, another tag, has the next.
			{cafe, []string{"Café/cafe"}}, {plain, []string{"Cafe/cafe-2"}}, {decomposed, []string{"Café/cafe"}},
			{strasse, []string{"Straße/stra-e"}}, {upper, []string{"Straße/stra-e"}},
			{deep, []string{"Deep House/deep-house"}}, {deep2, []string{"Deep House/deep-house"}},
			{kanji, []string{"日本/日本"}},
		} {
			if got := tagsOf(get(tc.id)); !slices.Equal(got, tc.want) {
				t.Errorf("show %d: tags %v, want %v", tc.id, got, tc.want)
			}
		}

		for _, tc := range []struct {
			tag  string
			want []int64
		}{
			{"C", []int64{c}}, {"c", []int64{c}}, {"C#", []int64{cSharp}}, {"c#", []int64{cSharp}}, {"C++", []int64{cpp}},
			{"house", []int64{loud, spaced, house}}, {" HOUSE ", []int64{loud, spaced, house}},
			{"Café", []int64{decomposed, cafe}}, {"CAFE\u0301", []int64{decomposed, cafe}},
			// A slug names its tag before a text does: cafe is Café's slug.
			{"cafe", []int64{decomposed, cafe}}, {"cafe-2", []int64{plain}}, {"CAFE-2", []int64{plain}},
			{"c-sharp", []int64{cSharp}}, {"c-plus-plus", []int64{cpp}}, {"stra-e", []int64{upper, strasse}},
			{"strasse", []int64{upper, strasse}}, {"STRASSE", []int64{upper, strasse}}, {"straße", []int64{upper, strasse}},
			{"deep house", []int64{deep2, deep}}, {"Deep  House", []int64{deep2, deep}},
			{"deep-house", []int64{deep2, deep}}, {"Hous", nil}, {"house-2", nil}, {"日本", []int64{kanji}},
		} {
			ids, m := f.listIDs(t, "/v1/shows?tag="+url.QueryEscape(tc.tag), tok)
			if !slices.Equal(ids, tc.want) {
				t.Errorf("?tag=%q: %v, want %v", tc.tag, ids, tc.want)
			}
			if m["count"] != float64(len(tc.want)) {
				t.Errorf("?tag=%q: count %v, want %d", tc.tag, m["count"], len(tc.want))
			}
		}
		// A blank ?tag= is no filter.
		all, _ := f.listIDs(t, "/v1/shows", tok)
		if blank, _ := f.listIDs(t, "/v1/shows?tag=%20%20", tok); !slices.Equal(blank, all) {
			t.Errorf("?tag=blank: %v, want every show %v", blank, all)
		}

		t.Run("tags are answered in the order they were given", func(t *testing.T) {
			sh := onairtest.CreateShow(t, f.env, tok, map[string]any{"name": "Ordered", "description": "d", "tags": []string{"zebra", "Apple", "C#", "c"}}).Object
			want := []string{"zebra/zebra", "Apple/apple", "C#/c-sharp", "C/c"}
			if got := tagsOf(sh); !slices.Equal(got, want) {
				t.Errorf("POST: tags %v, want %v", got, want)
			}
			path := fmt.Sprintf("/v1/shows/%d", id(sh))
			if got := tagsOf(showOf(t, f.do(t, "GET", path, tok, nil).Expect(t, http.StatusOK))); !slices.Equal(got, want) {
				t.Errorf("GET: tags %v, want %v", got, want)
			}
			inList := func() []string {
				m := f.do(t, "GET", "/v1/shows?filter=Ordered", tok, nil).Expect(t, http.StatusOK).JSON(t)
				for _, x := range m["shows"].([]any) {
					if o := x.(map[string]any); id(o) == id(sh) {
						return tagsOf(o)
					}
				}
				t.Fatal("the show is not in its list")
				return nil
			}
			if got := inList(); !slices.Equal(got, want) {
				t.Errorf("list: tags %v, want %v", got, want)
			}
			// A new order is kept too.
			want = []string{"C/c", "zebra/zebra"}
			r := f.do(t, "PUT", path, tok, map[string]any{"tags": []string{"c", "ZEBRA"}}).Expect(t, http.StatusOK)
			if got := tagsOf(showOf(t, r)); !slices.Equal(got, want) {
				t.Errorf("PUT: tags %v, want %v", got, want)
			}
			if got := inList(); !slices.Equal(got, want) {
				t.Errorf("list after PUT: tags %v, want %v", got, want)
			}
		})

		t.Run("duplicates count once toward the limit of 10", func(t *testing.T) {
			tags := []string{"a1", "A1", " a1 ", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "a9", "a10"}
			if got := tagsOf(onairtest.CreateShow(t, f.env, tok, map[string]any{"name": "Ten", "description": "d", "tags": tags}).Object); len(got) != 10 {
				t.Errorf("tags %v, want 10", got)
			}
		})

		t.Run("blank tags are dropped", func(t *testing.T) {
			sh := onairtest.CreateShow(t, f.env, tok, map[string]any{"name": "Blanks", "description": "d", "tags": []string{"", "  ", "Rock", "\u00a0"}}).Object
			if got := tagsOf(sh); !slices.Equal(got, []string{"Rock/rock"}) {
				t.Errorf("tags %v, want only Rock", got)
			}
			only := onairtest.CreateShow(t, f.env, tok, map[string]any{"name": "Only blanks", "description": "d", "tags": []string{"", " "}}).Object
			if got := tagsOf(only); len(got) != 0 {
				t.Errorf("tags %v, want none", got)
			}
			r := f.do(t, "PUT", fmt.Sprintf("/v1/shows/%d", id(sh)), tok, map[string]any{"tags": []string{" "}}).Expect(t, http.StatusOK)
			if got := tagsOf(showOf(t, r)); len(got) != 0 {
				t.Errorf("PUT tags [\" \"]: %v, want none", got)
			}
			// Form fields and comma-separated strings: the same rule.
			r = f.do(t, "POST", "/v1/shows", tok, form("name", "Form blanks", "description", "d", "tags", "", "tags", " ", "tags", "Jazz, ,Soul"))
			if got := tagsOf(showOf(t, r.Expect(t, http.StatusCreated))); !slices.Equal(got, []string{"Jazz/jazz", "Soul/soul"}) {
				t.Errorf("form tags %v, want Jazz and Soul", got)
			}
		})
	})
}

// TestSlugFilter: ?slug= is an exact, case-insensitive match, the same on
// both databases; a value that cannot be a slug matches nothing (MySQL's
// collation would otherwise match accents and trailing spaces).
func TestSlugFilter(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		f := newFixture(t, backend)
		_, tok := f.user("Slug Finder")
		sh := onairtest.CreateShow(t, f.env, tok, map[string]any{"name": "My Show", "description": "d"}).ID
		onairtest.CreateShow(t, f.env, tok, map[string]any{"name": "My Show 2", "description": "d"})
		for _, tc := range []struct {
			slug string
			want []int64
		}{
			{"my-show", []int64{sh}}, {"MY-SHOW", []int64{sh}}, {"My-Show", []int64{sh}},
			{"my-show ", nil}, {" my-show", nil}, {"my-shöw", nil}, {"my_show", nil}, {"my-sho", nil}, {"my-show%", nil},
		} {
			ids, m := f.listIDs(t, "/v1/shows?slug="+url.QueryEscape(tc.slug), tok)
			if !slices.Equal(ids, tc.want) || m["count"] != float64(len(tc.want)) {
				t.Errorf("?slug=%q: %v (count %v), want %v", tc.slug, ids, m["count"], tc.want)
			}
		}
	})
}

// TestTagSlugRoundTrip: the slug a Tag object gives finds exactly that
// tag's shows with ?tag=, from the database and from the list cache, on both
// databases; C, C#, C++ and Deep House have four slugs, and tags created
// at once, whose names make one slug, get one each.
func TestTagSlugRoundTrip(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		f := newFixture(t, backend)
		_, tok := f.user("Slug Rounder")
		byTag := map[string][]int64{} // tag name -> its shows, newest first
		slugs := map[string]string{}  // tag name -> slug
		for i, tags := range [][]string{{"C#"}, {"C", "Deep House"}, {"C++", "C#"}, {"Deep House"}, {"C"}, {"c#", "deep house"}} {
			sh := onairtest.CreateShow(t, f.env, tok, map[string]any{"name": fmt.Sprintf("Round %d", i), "description": "d", "tags": tags}).Object
			for _, tag := range sh["tags"].([]any) {
				tm := tag.(map[string]any)
				name, slug := tm["name"].(string), tm["slug"].(string)
				if had, ok := slugs[name]; ok && had != slug {
					t.Fatalf("%s has the slug %q and %q", name, had, slug)
				}
				slugs[name] = slug
				byTag[name] = append([]int64{id(sh)}, byTag[name]...)
			}
		}
		want := map[string]string{"C": "c", "C#": "c-sharp", "C++": "c-plus-plus", "Deep House": "deep-house"}
		if fmt.Sprint(slugs) != fmt.Sprint(want) {
			t.Fatalf("slugs %v, want %v", slugs, want)
		}
		for name, slug := range slugs {
			// Twice: the second answer may come from the list cache.
			for range 2 {
				ids, m := f.listIDs(t, "/v1/shows?tag="+url.QueryEscape(slug), tok)
				if !slices.Equal(ids, byTag[name]) || m["count"] != float64(len(byTag[name])) {
					t.Errorf("?tag=%s: %v (count %v), want the %s shows %v", slug, ids, m["count"], name, byTag[name])
				}
			}
		}

		// Names whose bases collide, created at once: one slug each.
		const racers = 6
		names := []string{"Rock!", "Rock?", "ROCK.", "rock…", "Rock ~", "(rock)"}
		created := make(chan map[string]any, racers)
		var wg sync.WaitGroup
		for i := range racers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := f.do(t, "POST", "/v1/shows", tok, map[string]any{"name": fmt.Sprintf("Racer %d", i), "description": "d", "tags": []string{names[i]}})
				if r.Status != http.StatusCreated {
					t.Errorf("racer %d: %d %s", i, r.Status, r.Body)
					return
				}
				created <- showOf(t, r)
			}()
		}
		wg.Wait()
		close(created)
		seen := map[string]int64{}
		for sh := range created {
			slug := sh["tags"].([]any)[0].(map[string]any)["slug"].(string)
			if other, dup := seen[slug]; dup {
				t.Errorf("shows %d and %d: two tags with the slug %q", other, id(sh), slug)
			}
			seen[slug] = id(sh)
		}
		for slug, show := range seen {
			if ids, _ := f.listIDs(t, "/v1/shows?tag="+url.QueryEscape(slug), tok); !slices.Equal(ids, []int64{show}) {
				t.Errorf("?tag=%s: %v, want [%d]", slug, ids, show)
			}
		}
	})
}
