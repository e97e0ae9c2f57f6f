package shows_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/shows"
)

// TestOwnerPageAsCountAndPage holds the one statement that reads a page of
// one owner's shows with their count (a scalar subquery over the whole
// set) to the two statements every other list uses: the same shows in the
// same order and the same count, for every kind of viewer, filter and
// page, on both databases.
func TestOwnerPageAsCountAndPage(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		f := newFixture(t, backend)
		owner, _ := f.user("Pager Owner")
		other, _ := f.user("Pager Other")
		now := app.Now()
		r := rand.New(rand.NewPCG(7, 16))
		tagSets := [][]string{nil, {"house"}, {"ambient"}, {"house", "ambient"}}
		var specs []seedSpec
		for i := range 31 {
			start := now.Add(time.Duration(r.IntN(300)-200) * time.Hour)
			if i%8 == 5 {
				start = specs[i-1].start // a tie, broken by id
			}
			specs = append(specs, seedSpec{owner: owner.ID, name: []string{"Sunset set", "Morning", "Late set"}[i%3], start: start,
				live: i%7 == 0, complete: i%7 != 0 && i%5 != 0, archive: i%3 == 0, featured: i%4 == 0,
				private: i%6 == 1, off: i%11 == 2, radio: i%9 == 3, tags: tagSets[i%4]})
		}
		specs = append(specs, seedSpec{owner: other.ID, start: now, complete: true, tags: []string{"house"}})
		f.seed(t, specs)

		viewers := map[string]*app.Principal{"system": nil, "owner": principal(owner), "other": principal(other),
			"staff": principal(other, app.RoleModerator)}
		queries := []string{"", "live=true", "scheduled=true", "scheduled=false", "archive=true&featured=false", "radio=false", "tag=house", "tag=ambient&live=false", "filter=set", "tag=nosuch"}
		read := 0
		for name, v := range viewers {
			for _, qs := range queries {
				for _, ranOnly := range []bool{true, false} {
					for page := 1; page <= 5; page++ {
						q := listQueryOf(t, qs)
						q.UserID, q.RanOnly, q.Viewer, q.Page = owner.ID, ranOnly, v, app.Page{Number: page, Size: 4}
						one, oneCount, two, twoCount, err := shows.OwnerPageTwoWays(f.ctx, f.svc, q)
						if err != nil {
							t.Fatalf("%s, %q, page %d: %v", name, qs, page, err)
						}
						if len(one) == 0 {
							// An empty page: the list reads the count on its own.
							if len(two) != 0 {
								t.Fatalf("%s, %q (ran only %v), page %d: one statement read nothing, two read %d shows", name, qs, ranOnly, page, len(two))
							}
							continue
						}
						read++
						if oneCount != twoCount || len(one) != len(two) {
							t.Fatalf("%s, %q (ran only %v), page %d: %d shows of %d, want %d of %d", name, qs, ranOnly, page, len(one), oneCount, len(two), twoCount)
						}
						for i := range one {
							if one[i].ID != two[i].ID || one[i].User == nil || one[i].User.ID != owner.ID || len(one[i].Tags) != len(two[i].Tags) {
								t.Fatalf("%s, %q (ran only %v), page %d: show %d is %d (owner %v, %d tags), want %d (%d tags)",
									name, qs, ranOnly, page, i, one[i].ID, one[i].User, len(one[i].Tags), two[i].ID, len(two[i].Tags))
							}
						}
					}
				}
			}
		}
		if read < 100 {
			t.Fatalf("only %d non-empty pages compared", read)
		}
	})
}
