package shows_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/shows"
	"github.com/onair/onair/modules/users"
)

// cacheQueries are the lists the cache tests read: flags, tags, the clock
// (scheduled=true), name filters and a tag no show has.
var cacheQueries = []string{
	"", "live=true", "live=false", "scheduled=true", "scheduled=false", "scheduled=false&archive=true",
	"featured=true", "radio=true&live=false", "tag=house", "tag=house&scheduled=true",
	"tag=ambient&featured=false", "filter=set", "filter=s", "tag=nosuch",
}

type cacheViewer struct {
	name  string
	p     *app.Principal
	token string
}

// listAnswer is the count and the raw items array of a list response.
func listAnswer(t *testing.T, r *onairtest.Response) (int, []byte) {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(r.Body), &m); err != nil {
		t.Fatalf("list body: %v: %s", err, r.Body)
	}
	var count int
	if err := json.Unmarshal(m["count"], &count); err != nil {
		t.Fatal(err)
	}
	return count, m["shows"]
}

// checkCached asks node's API for every cache query (three times: a list
// is stored the second time it misses, the third is answered from it) as each viewer, and
// compares each answer with a read that bypasses the cache (fresh, on the
// same database).
func checkCached(t *testing.T, step string, env *onairtest.Env, fresh *shows.Service, viewers []cacheViewer, userLists ...int64) {
	t.Helper()
	ctx := t.Context()
	check := func(path string, q shows.ListQuery, v cacheViewer) {
		t.Helper()
		q.Viewer = v.p
		read := func() ([]byte, int) {
			t.Helper()
			items, count, err := shows.FreshListItems(ctx, fresh, q)
			if err != nil {
				t.Fatal(err)
			}
			return items, count
		}
		for range 3 {
			// Read fresh before and after: nothing changes within a
			// step but the clock, which may pass a scheduled start
			// (once) while a slow machine checks; the answer must be
			// one of the two.
			before, beforeCount := read()
			count, items := listAnswer(t, env.Do("GET", path, v.token, nil).Expect(t, http.StatusOK))
			after, afterCount := read()
			if (count != beforeCount || !bytes.Equal(items, before)) && (count != afterCount || !bytes.Equal(items, after)) {
				t.Fatalf("%s: GET %s as %s:\ncount %d, items %s\nwant count %d, items %s", step, path, v.name, count, items, afterCount, after)
			}
		}
	}
	for _, qs := range cacheQueries {
		for _, v := range viewers {
			check("/v1/shows?"+qs, listQueryOf(t, qs), v)
		}
	}
	for _, u := range userLists {
		for _, v := range viewers {
			check(fmt.Sprintf("/v1/users/%d/shows", u), shows.ListQuery{UserID: u, RanOnly: true}, v)
		}
	}
}

func principal(u *users.User, roles ...string) *app.Principal {
	return &app.Principal{UserID: u.ID, Roles: append([]string{app.RoleUser}, roles...)}
}

// TestListCacheExact drives every kind of change a list shows — show
// changes (create, tags, private, go live, stop, archive, feature, off,
// delete), the counters written outside them (favorites, comments), the
// owner's profile, the peak viewers, and the clock passing a scheduled
// start — and checks after each that every cached list answer equals a
// fresh read, for a viewer without shows (served from the cache), owners
// with hidden shows and staff (who bypass it), on both databases.
func TestListCacheExact(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		f := newFixture(t, backend)
		owner, ownerTok := f.user("Cache Owner", onairtest.Radio)
		other, otherTok := f.user("Cache Other")
		viewer, viewerTok := f.user("Cache Viewer")
		staff, staffTok := f.user("Cache Staff", onairtest.Role(app.RoleModerator))
		viewers := []cacheViewer{
			{"viewer", principal(viewer), viewerTok},
			{"owner", principal(owner), ownerTok},
			{"other", principal(other), otherTok},
			{"staff", principal(staff, app.RoleModerator), staffTok},
		}
		check := func(step string) {
			t.Helper()
			checkCached(t, step, f.env, f.svc, viewers, owner.ID, other.ID)
		}
		future := app.Now().Add(48 * time.Hour).Format(app.TimeLayout)
		mk := func(tok string, body map[string]any) int64 {
			t.Helper()
			return onairtest.CreateShow(t, f.env, tok, body).ID
		}
		check("empty")

		a := mk(ownerTok, map[string]any{"name": "Sunset set", "description": "d", "tags": []string{"house", "ambient"}})
		b := mk(ownerTok, map[string]any{"name": "Private set", "description": "d", "private": true, "tags": []string{"house"}})
		c := mk(ownerTok, map[string]any{"name": "Radio", "description": "d", "radio": true, "tags": []string{"ambient"}})
		d := mk(otherTok, map[string]any{"name": "Later", "description": "d", "start": future, "tags": []string{"house"}})
		e := mk(otherTok, map[string]any{"name": "Plain", "description": "d"})
		check("create")

		f.do(t, "PUT", fmt.Sprintf("/v1/shows/%d", a), ownerTok, map[string]any{"tags": []string{"ambient", "techno"}}).Expect(t, http.StatusOK)
		f.do(t, "PUT", fmt.Sprintf("/v1/shows/%d", e), otherTok, map[string]any{"tags": []string{"house"}, "name": "Plain set"}).Expect(t, http.StatusOK)
		check("update tags and name")

		f.do(t, "PUT", fmt.Sprintf("/v1/shows/%d", b), ownerTok, map[string]any{"private": false}).Expect(t, http.StatusOK)
		f.do(t, "PUT", fmt.Sprintf("/v1/shows/%d", e), otherTok, map[string]any{"private": true}).Expect(t, http.StatusOK)
		check("private")

		for _, s := range []int64{a, b, c} {
			if _, err := f.svc.GoLive(f.ctx, s, shows.Media{}); err != nil {
				t.Fatal(err)
			}
		}
		check("go live")

		// Written outside any show change: favorites, comments, the
		// owner's profile, the peak.
		f.do(t, "POST", fmt.Sprintf("/v1/shows/%d/favorite", a), viewerTok, nil).Expect(t, http.StatusOK)
		check("favorite")
		f.do(t, "DELETE", fmt.Sprintf("/v1/shows/%d/favorite", a), viewerTok, nil).Expect(t, http.StatusOK)
		check("unfavorite")
		if err := f.svc.AddComments(f.ctx, nil, b, 3); err != nil {
			t.Fatal(err)
		}
		check("comments")
		um, _ := onairtest.Module[*users.Module](f.env)
		name, loc := "Cache Owner Renamed", "Lisbon"
		if _, err := um.Service.UpdateProfile(f.ctx, owner.ID, users.ProfileInput{Name: &name, Location: &loc}); err != nil {
			t.Fatal(err)
		}
		check("owner's profile")
		if err := f.svc.RecordPeak(f.ctx, a, 42); err != nil {
			t.Fatal(err)
		}
		check("peak viewers")

		f.do(t, "POST", fmt.Sprintf("/v1/shows/%d/stop", a), ownerTok, nil).Expect(t, http.StatusOK)
		check("stop")
		if _, err := f.svc.Archive(f.ctx, a, shows.Media{}); err != nil {
			t.Fatal(err)
		}
		check("archive")
		if _, err := f.svc.SetFeatured(f.ctx, d, true, nil); err != nil {
			t.Fatal(err)
		}
		check("feature")
		if _, err := f.svc.SetOff(f.ctx, c, true, nil); err != nil {
			t.Fatal(err)
		}
		check("off")
		if _, err := f.svc.SetOff(f.ctx, c, false, nil); err != nil {
			t.Fatal(err)
		}
		check("restore")

		// A show whose scheduled start is two seconds away leaves the
		// scheduled lists when the clock passes it, with no change of
		// its row: the cached list must not outlive that.
		soon := mk(otherTok, map[string]any{"name": "Soon set", "description": "d", "start": app.Now().Add(2 * time.Second).Format(app.TimeLayout), "tags": []string{"house"}})
		check("scheduled soon")
		start := app.Now().Add(2 * time.Second)
		testload.Poll(t, "the scheduled start to pass", func() error {
			if !app.Now().After(start) {
				return fmt.Errorf("%s not reached", start)
			}
			return nil
		})
		for _, qs := range []string{"scheduled=true", "tag=house&scheduled=true"} {
			r := f.do(t, "GET", "/v1/shows?"+qs, viewerTok, nil).Expect(t, http.StatusOK).JSON(t)
			for _, s := range r["shows"].([]any) {
				if id(s.(map[string]any)) == soon {
					t.Fatalf("show %d still in ?%s after its start", soon, qs)
				}
			}
		}
		check("start passed")

		f.do(t, "DELETE", fmt.Sprintf("/v1/shows/%d", a), ownerTok, nil).Expect(t, http.StatusOK)
		f.do(t, "DELETE", fmt.Sprintf("/v1/shows/%d", d), otherTok, nil).Expect(t, http.StatusOK)
		check("delete")

		// With nothing changed, every cached list is a plain hit: the
		// check reads every field as the cache holds it (no false
		// "changed" on either driver).
		reg := f.env.Core.Metrics
		patched := metricValue(t, reg, "onair_shows_list_cache_requests_total", "result", "patched")
		check("unchanged")
		if n := metricValue(t, reg, "onair_shows_list_cache_requests_total", "result", "patched"); n != patched {
			t.Errorf("%v lists patched with nothing changed", n-patched)
		}
		for _, result := range []string{"hit", "patched", "miss", "bypass"} {
			if n := metricValue(t, reg, "onair_shows_list_cache_requests_total", "result", result); n == 0 {
				t.Errorf("no list request counted as %s", result)
			}
		}
	})
}

// TestListCacheAcrossNodes: two nodes on one MariaDB database. A list
// cached on node A answers what the database holds right after node B
// changes a show, a favorite, a comment count or a profile — without
// waiting for B's events to reach A.
func TestListCacheAcrossNodes(t *testing.T) {
	a, b := twoNodes(t)
	owner, ownerTok := a.env.CreateUser("Nodes Owner")
	viewer, viewerTok := a.env.CreateUser("Nodes Viewer")
	viewers := []cacheViewer{{"viewer", principal(viewer), viewerTok}}
	check := func(step string) {
		t.Helper()
		checkCached(t, step, a.env, a.svc, viewers, owner.ID)
	}
	create := func(name string) int64 {
		t.Helper()
		r := b.env.Do("POST", "/v1/shows", ownerTok, map[string]any{"name": name, "description": "d", "tags": []string{"house"}}).Expect(t, http.StatusCreated)
		return id(showOf(t, r))
	}
	x := create("Nodes set")
	check("create on B")
	y := create("Nodes other set")
	check("second create on B")
	if _, err := b.svc.GoLive(t.Context(), x, shows.Media{}); err != nil {
		t.Fatal(err)
	}
	check("go live on B")
	b.env.Do("POST", fmt.Sprintf("/v1/shows/%d/favorite", y), viewerTok, nil).Expect(t, http.StatusOK)
	check("favorite on B")
	if err := b.svc.AddComments(t.Context(), nil, x, 2); err != nil {
		t.Fatal(err)
	}
	check("comments on B")
	um, _ := onairtest.Module[*users.Module](b.env)
	name := "Nodes Owner Renamed"
	if _, err := um.Service.UpdateProfile(t.Context(), owner.ID, users.ProfileInput{Name: &name}); err != nil {
		t.Fatal(err)
	}
	check("profile on B")
	b.env.Do("PUT", fmt.Sprintf("/v1/shows/%d", y), ownerTok, map[string]any{"private": true}).Expect(t, http.StatusOK)
	check("private on B")
	b.env.Do("DELETE", fmt.Sprintf("/v1/shows/%d", x), ownerTok, nil).Expect(t, http.StatusOK)
	check("delete on B")
	if n := metricValue(t, a.env.Core.Metrics, "onair_shows_list_cache_requests_total", "result", "hit"); n == 0 {
		t.Error("node A never answered from its cache")
	}
}

// TestListCacheBounded drives the cache past its bytes
// (ONAIR_SHOWS_LIST_CACHE_MB=1), past its number of entries and past the
// lists it remembers as asked once: it stays within each, counts the
// evictions, and every answer stays exact.
func TestListCacheBounded(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env := onairtest.New(t, onairtest.Options{Backend: backend, Configure: func(c *app.Config) { c.Set(shows.SettingListCache, 1) }})
		f := fixtureOn(t, env)
		f.ctx = t.Context()
		owner, _ := f.user("Bound Owner")
		viewer, viewerTok := f.user("Bound Viewer")
		base := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
		specs := make([]seedSpec, 2*shows.PageSize)
		for i := range specs {
			specs[i] = seedSpec{owner: owner.ID, name: fmt.Sprintf("Bound set %d with a longer name", i), start: base.Add(time.Duration(i) * time.Hour), complete: true}
		}
		f.seed(t, specs)
		p := principal(viewer)
		// Each list twice: a list is stored the second time it misses.
		read := func(path string, q shows.ListQuery) {
			t.Helper()
			for range 2 {
				count, items := listAnswer(t, f.do(t, "GET", path, viewerTok, nil).Expect(t, http.StatusOK))
				q.Viewer = p
				want, wantCount, err := shows.FreshListItems(f.ctx, f.svc, q)
				if err != nil {
					t.Fatal(err)
				}
				if count != wantCount || !bytes.Equal(items, want) {
					t.Fatalf("GET %s: count %d, items %s; want %d, %s", path, count, items, wantCount, want)
				}
			}
		}
		// Full pages of distinct lists: each entry is over 100 KB.
		for day := range 20 {
			from := time.Date(2024, 2, 28-day, 0, 0, 0, 0, time.UTC)
			read("/v1/shows?from="+from.Format("2006-01-02"), shows.ListQuery{From: &from})
			if _, size := shows.ListCacheStats(f.svc); size > 1<<20 {
				t.Fatalf("cache holds %d bytes, over 1 MiB", size)
			}
		}
		if n := metricValue(t, env.Core.Metrics, "onair_shows_list_cache_evictions_total"); n == 0 {
			t.Fatal("no list evicted past 1 MiB")
		}
		// The entry bound, lowered: empty lists, many of them.
		shows.SetListCacheEntries(f.svc, 3)
		for i := range 6 {
			tag := fmt.Sprintf("none%d", i)
			read("/v1/shows?tag="+tag, shows.ListQuery{Tag: tag})
			if n, _ := shows.ListCacheStats(f.svc); n > 3 {
				t.Fatalf("cache holds %d lists, over 3", n)
			}
		}
		// The lists asked once are remembered up to a bound, then
		// forgotten all at once: a list asked again after that is not
		// stored until its next miss.
		shows.SetListCacheEntries(f.svc, 100)
		shows.SetListCacheAsked(f.svc, 2)
		before, _ := shows.ListCacheStats(f.svc)
		once := func(path string) {
			t.Helper()
			f.do(t, "GET", path, viewerTok, nil).Expect(t, http.StatusOK)
		}
		once("/v1/shows?tag=asked1")
		once("/v1/shows?tag=asked2")
		once("/v1/shows?tag=asked3") // past the bound: asked1 and asked2 forgotten
		once("/v1/shows?tag=asked1")
		if n, _ := shows.ListCacheStats(f.svc); n != before {
			t.Fatalf("%d lists cached after lists asked once each, want %d", n, before)
		}
		once("/v1/shows?tag=asked3")
		if n, _ := shows.ListCacheStats(f.svc); n != before+1 {
			t.Fatalf("%d lists cached after a list's second miss, want %d", n, before+1)
		}
		// Evicted lists are read again, exact.
		read("/v1/shows?page=2", shows.ListQuery{Page: app.Page{Number: 2, Size: shows.PageSize}})
		read("/v1/shows?page=2", shows.ListQuery{Page: app.Page{Number: 2, Size: shows.PageSize}})
	})
}

// TestListCacheOwnEntry: a viewer whose private shows are on a list gets
// it from an entry of their own — their hidden shows, the owner's form
// (peak_viewers), signed media links — stored on its second miss like a
// public one, patched when the peak moves, and read again when the hour
// of the links' tokens turns; on both databases.
func TestListCacheOwnEntry(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		f := newFixture(t, backend)
		owner, ownerTok := f.user("Own Owner")
		_, otherTok := f.user("Own Other")
		priv := onairtest.CreateShow(t, f.env, ownerTok, map[string]any{"name": "Own private set", "description": "d", "private": true}).ID
		onairtest.CreateShow(t, f.env, otherTok, map[string]any{"name": "Own public set", "description": "d"})
		video := fmt.Sprintf("/media/shows/%d/master.m3u8", priv)
		if _, err := f.svc.GoLive(f.ctx, priv, shows.Media{VideoURL: &video}); err != nil {
			t.Fatal(err)
		}
		reg := f.env.Core.Metrics
		hits := func() float64 { return metricValue(t, reg, "onair_shows_list_cache_requests_total", "result", "hit") }
		patched := func() float64 {
			return metricValue(t, reg, "onair_shows_list_cache_requests_total", "result", "patched")
		}
		ask := func(step string) []byte {
			t.Helper()
			count, items := listAnswer(t, f.do(t, "GET", "/v1/shows", ownerTok, nil).Expect(t, http.StatusOK))
			want, wantCount, err := shows.FreshListItems(f.ctx, f.svc, shows.ListQuery{Viewer: principal(owner)})
			if err != nil {
				t.Fatal(err)
			}
			if count != wantCount || !bytes.Equal(items, want) {
				t.Fatalf("%s: count %d, items %s\nwant count %d, items %s", step, count, items, wantCount, want)
			}
			return items
		}
		ask("first miss")
		ask("second miss, stored")
		h := hits()
		items := ask("third")
		if hits() != h+1 {
			t.Fatalf("the owner's list was not answered from the cache (hits %v → %v)", h, hits())
		}
		if !bytes.Contains(items, []byte(`"peak_viewers":0`)) || !bytes.Contains(items, []byte(fmt.Sprintf("/media/shows/%d/t/", priv))) {
			t.Fatalf("the owner's cached list lacks their peak or the signed link: %s", items)
		}
		// The peak moves without a show change: the entry is patched.
		if err := f.svc.RecordPeak(f.ctx, priv, 7); err != nil {
			t.Fatal(err)
		}
		p := patched()
		if items := ask("peak"); !bytes.Contains(items, []byte(`"peak_viewers":7`)) {
			t.Fatalf("peak 7 not in %s", items)
		}
		if patched() != p+1 {
			t.Fatal("the peak did not patch the owner's entry")
		}
		// Another viewer gets the public list, without the private show.
		if _, items := listAnswer(t, f.do(t, "GET", "/v1/shows", otherTok, nil).Expect(t, http.StatusOK)); bytes.Contains(items, []byte("Own private set")) {
			t.Fatalf("another viewer sees the private show: %s", items)
		}
		// When the hour turns the links' tokens change: the entry is
		// not used past it.
		next := time.Now().Truncate(time.Hour).Add(time.Hour)
		defer shows.SetListCacheWallClock(f.svc, func() time.Time { return next })()
		h = hits()
		ask("hour turned")
		if hits() != h {
			t.Fatal("an entry with signed links answered past the hour of its tokens")
		}
	})
}

// queryCounter counts the statements that reach the database and match
// (the query text with MySQL's backquotes as double quotes).
type queryCounter struct {
	match func(query string) bool
	n     atomic.Int64
}

func (*queryCounter) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	return ctx
}

func (c *queryCounter) AfterQuery(_ context.Context, ev *bun.QueryEvent) {
	if c.match(strings.ReplaceAll(ev.Query, "`", `"`)) {
		c.n.Add(1)
	}
}

// checkCounter counts the list cache's checking statements (the
// generation row joined to the cached shows).
func checkCounter() *queryCounter {
	return &queryCounter{match: func(q string) bool {
		return strings.Contains(q, "show_generation AS g") && strings.Contains(q, "AS own")
	}}
}

// TestListCacheFillAnswers checks that the request that stores a list
// answers from what it has just read when no check is due — another
// user's shows, which the viewer's hidden shows cannot be in — and that
// the list of the viewer's own shows, which the public entry cannot
// answer, still comes out in the owner's form; every answer equal to a
// fresh read, on both databases.
func TestListCacheFillAnswers(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		checks := checkCounter()
		env := onairtest.New(t, onairtest.Options{Backend: backend, QueryHooks: []bun.QueryHook{checks}})
		f := fixtureOn(t, env)
		owner, ownerTok := f.user("Fill Owner")
		viewer, viewerTok := f.user("Fill Viewer")
		onairtest.CreateShow(t, f.env, ownerTok, map[string]any{"name": "Fill public set", "description": "d"})
		onairtest.CreateShow(t, f.env, ownerTok, map[string]any{"name": "Fill private set", "description": "d", "private": true})
		onairtest.CreateShow(t, f.env, viewerTok, map[string]any{"name": "Fill viewer's private set", "description": "d", "private": true})
		// Both shows ran: a user's list holds shows that did.
		for _, name := range []string{"Fill public set", "Fill private set", "Fill viewer's private set"} {
			if _, err := f.env.Core.DB.NewUpdate().Model((*shows.Show)(nil)).Set("complete = ?", true).Where("name = ?", name).Exec(f.ctx); err != nil {
				t.Fatal(err)
			}
		}
		if err := shows.RebuildCounts(f.ctx, f.env.Core.DB); err != nil {
			t.Fatal(err)
		}
		reg := f.env.Core.Metrics
		result := func(r string) float64 {
			return metricValue(t, reg, "onair_shows_list_cache_requests_total", "result", r)
		}
		ask := func(step string, u *users.User, tok string, of int64, wantChecks int64, wantResult string) {
			t.Helper()
			c, r := checks.n.Load(), result(wantResult)
			count, items := listAnswer(t, f.do(t, "GET", fmt.Sprintf("/v1/users/%d/shows", of), tok, nil).Expect(t, http.StatusOK))
			want, wantCount, err := shows.FreshListItems(f.ctx, f.svc, shows.ListQuery{Viewer: principal(u), UserID: of, RanOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			if count != wantCount || !bytes.Equal(items, want) {
				t.Fatalf("%s: count %d, items %s\nwant count %d, items %s", step, count, items, wantCount, want)
			}
			if got := checks.n.Load() - c; got != wantChecks {
				t.Fatalf("%s: %d checking statements, want %d", step, got, wantChecks)
			}
			if result(wantResult) != r+1 {
				t.Fatalf("%s: not counted as %q", step, wantResult)
			}
		}
		// Another user's shows: read, then stored and answered from the
		// read, then answered from the entry after one check.
		ask("viewer, first", viewer, viewerTok, owner.ID, 0, "miss")
		ask("viewer, second (stored)", viewer, viewerTok, owner.ID, 0, "miss")
		ask("viewer, third", viewer, viewerTok, owner.ID, 1, "hit")
		// The owner's own shows: the public entry is not theirs (they own
		// its shows), so their own entry is read and answers at once, in
		// the owner's form with their private show; then it is checked.
		ask("owner, own entry stored", owner, ownerTok, owner.ID, 0, "miss")
		ask("owner, from their entry", owner, ownerTok, owner.ID, 1, "hit")
		// The viewer's own shows, which the owner then asks for twice.
		ask("owner asks the viewer's, first", owner, ownerTok, viewer.ID, 0, "miss")
		ask("owner asks the viewer's, stored", owner, ownerTok, viewer.ID, 0, "miss")
	})
}

// A slug that no show can have (SlugQuery refuses it) lists nothing,
// cached or not: the list cache once stored the list without the slug
// filter for it, so its second request listed every show.
func TestListCacheUnmatchableSlug(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{})
	_, owner := env.CreateUser("Slug Owner")
	onairtest.CreateShow(t, env, owner, map[string]any{"name": "Listed"})
	_, viewer := env.CreateUser("Slug Viewer")
	for i := range 3 { // missed, stored, served from the cache
		r := env.Do("GET", "/v1/shows?slug=no_such", viewer, nil).Expect(t, http.StatusOK)
		if count, items := listAnswer(t, r); count != 0 || string(items) != "[]" {
			t.Fatalf("request %d: count %d, items %s; want none", i+1, count, items)
		}
	}
}
