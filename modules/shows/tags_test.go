package shows_test

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
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
// the same rule. Blank tags are dropped.
func TestTagIdentity(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		f := newFixture(t, backend)
		_, tok := f.user("Tag Tester")
		mk := func(name string, tags ...string) int64 {
			t.Helper()
			return id(f.create(t, tok, map[string]any{"name": name, "description": "d", "tags": tags}))
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
			{c, []string{"C/c"}}, {cSharp, []string{"C#/c"}}, {cpp, []string{"C++/c"}},
			// The first spelling names the shared tag.
			{house, []string{"House/house"}}, {spaced, []string{"House/house"}}, {loud, []string{"House/house"}},
			{cafe, []string{"Café/cafe"}}, {plain, []string{"Cafe/cafe"}}, {decomposed, []string{"Café/cafe"}},
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
			{"Café", []int64{decomposed, cafe}}, {"cafe", []int64{plain}}, {"CAFE\u0301", []int64{decomposed, cafe}},
			{"strasse", []int64{upper, strasse}}, {"STRASSE", []int64{upper, strasse}}, {"straße", []int64{upper, strasse}},
			{"deep house", []int64{deep2, deep}}, {"Deep  House", []int64{deep2, deep}},
			{"deep-house", nil}, {"Hous", nil}, {"日本", []int64{kanji}},
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

		t.Run("tags are answered in the order of their identity", func(t *testing.T) {
			sh := f.create(t, tok, map[string]any{"name": "Ordered", "description": "d", "tags": []string{"zebra", "Apple", "C#", "c"}})
			if got, want := tagsOf(sh), []string{"Apple/apple", "C/c", "C#/c", "zebra/zebra"}; !slices.Equal(got, want) {
				t.Errorf("tags %v, want %v", got, want)
			}
		})

		t.Run("duplicates count once toward the limit of 10", func(t *testing.T) {
			tags := []string{"a1", "A1", " a1 ", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "a9", "a10"}
			if got := tagsOf(f.create(t, tok, map[string]any{"name": "Ten", "description": "d", "tags": tags})); len(got) != 10 {
				t.Errorf("tags %v, want 10", got)
			}
		})

		t.Run("blank tags are dropped", func(t *testing.T) {
			sh := f.create(t, tok, map[string]any{"name": "Blanks", "description": "d", "tags": []string{"", "  ", "Rock", "\u00a0"}})
			if got := tagsOf(sh); !slices.Equal(got, []string{"Rock/rock"}) {
				t.Errorf("tags %v, want only Rock", got)
			}
			only := f.create(t, tok, map[string]any{"name": "Only blanks", "description": "d", "tags": []string{"", " "}})
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
		sh := id(f.create(t, tok, map[string]any{"name": "My Show", "description": "d"}))
		id(f.create(t, tok, map[string]any{"name": "My Show 2", "description": "d"}))
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
