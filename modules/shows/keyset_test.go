package shows_test

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/shows"
	"github.com/onair/onair/modules/users"
)

// expectPage is page n (from 1) of the list of shows the viewer sees, with
// the tag when one is given, in list order (start, then id, newest first),
// computed from the rows in Go.
func (f *fixture) expectPage(t *testing.T, viewer int64, tag string, n int) []int64 {
	t.Helper()
	return f.expectFiltered(t, viewer, tag, "", n)
}

// expectFiltered is expectPage with a name filter (case-insensitive
// substring; the test's names are ASCII).
func (f *fixture) expectFiltered(t *testing.T, viewer int64, tag, term string, n int) []int64 {
	t.Helper()
	var rows []shows.Show
	if err := f.svc.DB().NewSelect().Model(&rows).Scan(f.ctx); err != nil {
		t.Fatal(err)
	}
	tagged := map[int64]bool{}
	if tag != "" {
		tagID, err := users.FindTag(f.ctx, f.svc.DB(), tag)
		if err != nil {
			t.Fatal(err)
		}
		var links []shows.ShowTag
		if err := f.svc.DB().NewSelect().Model(&links).Where("tag_id = ?", tagID).Scan(f.ctx); err != nil {
			t.Fatal(err)
		}
		for _, l := range links {
			tagged[l.ShowID] = true
		}
	}
	var list []shows.Show
	for _, sh := range rows {
		if (sh.Private || sh.Off) && sh.UserID != viewer {
			continue
		}
		if tag != "" && !tagged[sh.ID] {
			continue
		}
		if term != "" && !strings.Contains(strings.ToLower(sh.Name), strings.ToLower(term)) {
			continue
		}
		list = append(list, sh)
	}
	sort.Slice(list, func(i, j int) bool {
		if !list[i].Start.Equal(list[j].Start) {
			return list[i].Start.After(list[j].Start)
		}
		return list[i].ID > list[j].ID
	})
	var ids []int64
	for i := (n - 1) * shows.PageSize; i < len(list) && i < n*shows.PageSize; i++ {
		ids = append(ids, list[i].ID)
	}
	return ids
}

// TestDeepPagesSeek: deep pages, served by seeking from remembered page
// boundaries, are the pages OFFSET gives — asked in order, out of order,
// again, for a tag, for another viewer, and after changes that shift
// every page — on both databases.
func TestDeepPagesSeek(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		f := newFixture(t, backend)
		owner, ownerTok := f.user("Deep Owner")
		other, otherTok := f.user("Deep Other")
		base := app.Now().Add(-1000 * time.Hour)
		var specs []seedSpec
		for i := range 760 {
			// Runs of equal starts test the id tie-break at page edges.
			sp := seedSpec{owner: owner.ID, start: base.Add(time.Duration(i/3) * time.Hour), complete: true}
			sp.private = i%17 == 0
			if i%2 == 0 {
				sp.tags = []string{"deep"}
			}
			specs = append(specs, sp)
		}
		f.seed(t, specs)
		check := func(step string, tok string, viewer int64, tag string, pages ...int) {
			t.Helper()
			for _, n := range pages {
				path := fmt.Sprintf("/v1/shows?page=%d", n)
				if tag != "" {
					path += "&tag=" + tag
				}
				got, _ := f.listIDs(t, path, tok)
				if want := f.expectPage(t, viewer, tag, n); !slices.Equal(got, want) {
					t.Fatalf("%s: %s as %d: got %v, want %v", step, path, viewer, got, want)
				}
			}
		}
		check("in order", otherTok, other.ID, "", 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)
		check("again and out of order", otherTok, other.ID, "", 12, 12, 7, 14, 9, 16, 6)
		check("owner", ownerTok, owner.ID, "", 8, 9, 15, 8)
		check("tag", otherTok, other.ID, "deep", 6, 7, 8, 7, 9)

		// A show at the top shifts every page by one; a deleted one in
		// the middle shifts the pages after it back.
		onairtest.CreateShow(t, f.env, otherTok, map[string]any{"name": "Top", "description": "d", "tags": []string{"deep"}})
		check("after create", otherTok, other.ID, "", 12, 7, 8, 13, 16)
		check("tag after create", otherTok, other.ID, "deep", 7, 8, 9)
		mid := f.expectPage(t, other.ID, "", 9)[10]
		f.do(t, "DELETE", fmt.Sprintf("/v1/shows/%d", mid), ownerTok, nil).Expect(t, http.StatusOK)
		check("after delete", otherTok, other.ID, "", 8, 9, 10, 12, 16)
		if _, err := f.svc.SetOff(f.ctx, f.expectPage(t, other.ID, "", 7)[0], true, nil); err != nil {
			t.Fatal(err)
		}
		check("after off", otherTok, other.ID, "", 6, 7, 8, 12)
	})
}

// TestNameFilterPages: pages and counts of a name filter, served from a
// term's public matches kept per data generation, are exactly the rows'
// — merged with the viewer's own private shows, and again after a rename,
// a create, a take-off and a privacy change — on both databases.
func TestNameFilterPages(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		f := newFixture(t, backend)
		owner, ownerTok := f.user("Filter Owner")
		other, otherTok := f.user("Filter Other")
		base := app.Now().Add(-500 * time.Hour)
		var specs []seedSpec
		names := []string{"Sunrise set", "SUNRISE", "Late sunrise", "Sunset", "Rise and sun"}
		for i := range 180 {
			sp := seedSpec{owner: owner.ID, name: fmt.Sprintf("%s %d", names[i%len(names)], i), start: base.Add(time.Duration(i/2) * time.Hour), complete: true}
			sp.private = i%7 == 0
			if i%3 == 0 {
				sp.tags = []string{"dawn"}
			}
			specs = append(specs, sp)
		}
		ids := f.seed(t, specs)
		check := func(step string, tok string, viewer int64, tag, term string, pages ...int) {
			t.Helper()
			for _, n := range pages {
				path := fmt.Sprintf("/v1/shows?filter=%s&page=%d", url.QueryEscape(term), n)
				if tag != "" {
					path += "&tag=" + tag
				}
				got, m := f.listIDs(t, path, tok)
				if want := f.expectFiltered(t, viewer, tag, term, n); !slices.Equal(got, want) {
					t.Fatalf("%s: %s as %d: got %v, want %v", step, path, viewer, got, want)
				}
				all := 0
				for p := 1; ; p++ {
					part := f.expectFiltered(t, viewer, tag, term, p)
					all += len(part)
					if len(part) < shows.PageSize {
						break
					}
				}
				if c := int(m["count"].(float64)); c != all {
					t.Fatalf("%s: %s as %d: count %d, want %d", step, path, viewer, c, all)
				}
			}
		}
		for _, step := range []string{"first", "again"} {
			check(step, otherTok, other.ID, "", "sunrise", 1, 2, 3)
			check(step, ownerTok, owner.ID, "", "sunrise", 1, 2, 3)
			check(step, otherTok, other.ID, "dawn", "rise", 1, 2)
		}
		f.do(t, "PUT", fmt.Sprintf("/v1/shows/%d", ids[1]), ownerTok, map[string]any{"name": "Noon"}).Expect(t, http.StatusOK)
		check("rename", otherTok, other.ID, "", "sunrise", 1, 2, 3)
		onairtest.CreateShow(t, f.env, otherTok, map[string]any{"name": "Fresh sunrise", "description": "d", "private": true})
		check("create", otherTok, other.ID, "", "sunrise", 1, 2)
		check("create, as owner", ownerTok, owner.ID, "", "sunrise", 1, 2)
		if _, err := f.svc.SetOff(f.ctx, ids[2], true, nil); err != nil {
			t.Fatal(err)
		}
		check("off", otherTok, other.ID, "", "sunrise", 1, 2)
		f.do(t, "PUT", fmt.Sprintf("/v1/shows/%d", ids[7]), ownerTok, map[string]any{"private": false}).Expect(t, http.StatusOK)
		check("public again", otherTok, other.ID, "", "sunrise", 1, 2, 3)
	})
}
