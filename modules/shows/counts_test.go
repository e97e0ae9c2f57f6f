package shows_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/shows"
	"github.com/onair/onair/modules/users"
)

// countQueries are the list filters whose count the test checks after
// every change: the ones the maintained counts answer and, for contrast,
// the ones counted on the indexes.
var countQueries = []string{
	"", "live=true", "live=false", "scheduled=true", "scheduled=false", "archive=true", "archive=false",
	"featured=true", "featured=false", "radio=true", "radio=false", "scheduled=false&archive=true",
	"radio=true&live=false", "live=false&archive=false&featured=false&radio=false",
	"tag=house", "tag=ambient", "tag=ambient&featured=false", "tag=house&live=true", "tag=house&scheduled=false",
	"tag=house&scheduled=true", "tag=techno", "filter=set", "filter=s",
}

// expectCount is the spec's rule applied to every show in Go: the count a
// list must report, computed without the code under test.
func (f *fixture) expectCount(t *testing.T, query string, viewer int64, all bool, off *bool) int {
	t.Helper()
	var rows []shows.Show
	if err := f.svc.DB().NewSelect().Model(&rows).Scan(f.ctx); err != nil {
		t.Fatal(err)
	}
	var links []shows.ShowTag
	if err := f.svc.DB().NewSelect().Model(&links).Scan(f.ctx); err != nil {
		t.Fatal(err)
	}
	tagsOf := map[int64]map[int64]bool{}
	for _, l := range links {
		if tagsOf[l.ShowID] == nil {
			tagsOf[l.ShowID] = map[int64]bool{}
		}
		tagsOf[l.ShowID][l.TagID] = true
	}
	v, err := url.ParseQuery(query)
	if err != nil {
		t.Fatal(err)
	}
	now := app.Now()
	n := 0
	for _, sh := range rows {
		if !all && (sh.Private || sh.Off) && sh.UserID != viewer {
			continue
		}
		ok := true
		flag := func(name string, val bool) {
			if s := v.Get(name); s != "" && (s == "true") != val {
				ok = false
			}
		}
		flag("live", sh.Live)
		flag("archive", sh.Archive)
		flag("featured", sh.Featured)
		flag("radio", sh.Radio)
		if off != nil && *off != sh.Off {
			ok = false
		}
		switch v.Get("scheduled") {
		case "true":
			ok = ok && !sh.Complete && !sh.Live && sh.Start.After(now)
		case "false":
			ok = ok && sh.Complete
		}
		if tag := v.Get("tag"); tag != "" {
			id, err := users.FindTag(f.ctx, f.svc.DB(), tag)
			if err != nil {
				t.Fatal(err)
			}
			ok = ok && id != 0 && tagsOf[sh.ID][id]
		}
		if term := v.Get("filter"); term != "" {
			ok = ok && strings.Contains(strings.ToLower(sh.Name), strings.ToLower(term))
		}
		if ok {
			n++
		}
	}
	return n
}

// checkCounts compares every list's count and pages, as each viewer and as
// the system (with and without the console's off filter), with the brute
// force count.
func (f *fixture) checkCounts(t *testing.T, step string, viewers map[string]viewerTok) {
	t.Helper()
	for _, q := range countQueries {
		for name, v := range viewers {
			want := f.expectCount(t, q, v.id, false, nil)
			r := f.do(t, "GET", "/v1/shows?"+q, v.token, nil).Expect(t, http.StatusOK).JSON(t)
			if got := int(r["count"].(float64)); got != want {
				t.Errorf("%s: GET /v1/shows?%s as %s: count %d, want %d", step, q, name, got, want)
			}
			if got, wantPages := int(r["pages"].(float64)), (want+shows.PageSize-1)/shows.PageSize; got != wantPages {
				t.Errorf("%s: GET /v1/shows?%s as %s: pages %d, want %d", step, q, name, got, wantPages)
			}
		}
		for _, off := range []*bool{nil, ptr(true), ptr(false)} {
			want := f.expectCount(t, q, 0, true, off)
			lq := listQueryOf(t, q)
			lq.Off = off
			_, got, err := f.svc.Lists.List(f.ctx, lq)
			if err != nil {
				t.Fatalf("%s: list %s: %v", step, q, err)
			}
			if got != want {
				t.Errorf("%s: system list %s off=%v: count %d, want %d", step, q, fmtBool(off), got, want)
			}
		}
	}
}

type viewerTok struct {
	id    int64
	token string
}

func fmtBool(b *bool) string {
	if b == nil {
		return "-"
	}
	return fmt.Sprint(*b)
}

func listQueryOf(t *testing.T, q string) shows.ListQuery {
	t.Helper()
	v, _ := url.ParseQuery(q)
	var lq shows.ListQuery
	b := func(name string) *bool {
		if s := v.Get(name); s != "" {
			return ptr(s == "true")
		}
		return nil
	}
	lq.Live, lq.Archive, lq.Featured, lq.Radio, lq.Scheduled = b("live"), b("archive"), b("featured"), b("radio"), b("scheduled")
	lq.Tag, lq.Filter = v.Get("tag"), v.Get("filter")
	return lq
}

// TestCountsExact drives every kind of show change (create, update of tags,
// privacy and name, go live, resume, stop, archive, off and back, feature,
// delete, and the clock passing a scheduled start) and checks after each
// that every list's count equals a brute-force count of the rows, on both
// databases.
func TestCountsExact(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		f := newFixture(t, backend)
		owner, ownerTok := f.user("Count Owner", onairtest.Radio)
		other, otherTok := f.user("Count Other")
		viewers := map[string]viewerTok{"owner": {owner.ID, ownerTok}, "other": {other.ID, otherTok}}
		future := app.Now().Add(48 * time.Hour).Format(app.TimeLayout)
		mk := func(tok string, body map[string]any) int64 {
			t.Helper()
			return onairtest.CreateShow(t, f.env, tok, body).ID
		}
		f.checkCounts(t, "empty", viewers)

		a := mk(ownerTok, map[string]any{"name": "Sunset set", "description": "d", "tags": []string{"house", "ambient"}})
		b := mk(ownerTok, map[string]any{"name": "Private set", "description": "d", "private": true, "tags": []string{"house"}})
		c := mk(ownerTok, map[string]any{"name": "Radio", "description": "d", "radio": true, "tags": []string{"ambient"}})
		d := mk(otherTok, map[string]any{"name": "Later", "description": "d", "start": future, "tags": []string{"house"}})
		e := mk(otherTok, map[string]any{"name": "Plain", "description": "d"})
		f.checkCounts(t, "create", viewers)

		f.do(t, "PUT", fmt.Sprintf("/v1/shows/%d", a), ownerTok, map[string]any{"tags": []string{"ambient", "techno"}}).Expect(t, http.StatusOK)
		f.do(t, "PUT", fmt.Sprintf("/v1/shows/%d", e), otherTok, map[string]any{"tags": []string{"house"}, "name": "Plain set"}).Expect(t, http.StatusOK)
		f.checkCounts(t, "update tags", viewers)

		f.do(t, "PUT", fmt.Sprintf("/v1/shows/%d", b), ownerTok, map[string]any{"private": false}).Expect(t, http.StatusOK)
		f.do(t, "PUT", fmt.Sprintf("/v1/shows/%d", e), otherTok, map[string]any{"private": true}).Expect(t, http.StatusOK)
		f.checkCounts(t, "private", viewers)

		for _, s := range []int64{a, b, c} {
			if _, err := f.svc.GoLive(f.ctx, s, shows.Media{}); err != nil {
				t.Fatal(err)
			}
		}
		f.checkCounts(t, "go live", viewers)
		if _, err := f.svc.GoLive(f.ctx, a, shows.Media{}); err != nil { // resume
			t.Fatal(err)
		}
		f.checkCounts(t, "resume", viewers)

		f.do(t, "POST", fmt.Sprintf("/v1/shows/%d/stop", a), ownerTok, nil).Expect(t, http.StatusOK)
		f.do(t, "POST", fmt.Sprintf("/v1/shows/%d/stop", b), ownerTok, nil).Expect(t, http.StatusOK)
		f.checkCounts(t, "stop", viewers)

		if _, err := f.svc.Archive(f.ctx, a, shows.Media{}); err != nil {
			t.Fatal(err)
		}
		f.checkCounts(t, "archive", viewers)

		if _, err := f.svc.SetFeatured(f.ctx, a, true, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.SetFeatured(f.ctx, d, true, nil); err != nil {
			t.Fatal(err)
		}
		f.checkCounts(t, "feature", viewers)

		if _, err := f.svc.SetOff(f.ctx, c, true, nil); err != nil { // live radio: stopped and off
			t.Fatal(err)
		}
		if _, err := f.svc.SetOff(f.ctx, a, true, nil); err != nil {
			t.Fatal(err)
		}
		f.checkCounts(t, "off", viewers)
		if _, err := f.svc.SetOff(f.ctx, a, false, nil); err != nil {
			t.Fatal(err)
		}
		f.checkCounts(t, "restore", viewers)

		// A show whose scheduled start is two seconds away: scheduled now,
		// pending once the clock passes it, with no change of the row.
		soon := mk(otherTok, map[string]any{"name": "Soon", "description": "d", "start": app.Now().Add(2 * time.Second).Format(app.TimeLayout), "tags": []string{"house"}})
		f.checkCounts(t, "scheduled soon", viewers)
		testload.Poll(t, "the scheduled start to pass", func() error {
			r := f.do(t, "GET", "/v1/shows?scheduled=true&tag=house", otherTok, nil).Expect(t, http.StatusOK).JSON(t)
			for _, s := range r["shows"].([]any) {
				if id(s.(map[string]any)) == soon {
					return fmt.Errorf("show %d still scheduled", soon)
				}
			}
			return nil
		})
		f.checkCounts(t, "start passed", viewers)

		f.do(t, "DELETE", fmt.Sprintf("/v1/shows/%d", a), ownerTok, nil).Expect(t, http.StatusOK)
		f.do(t, "DELETE", fmt.Sprintf("/v1/shows/%d", d), otherTok, nil).Expect(t, http.StatusOK)
		// A live show deleted: stopped and removed in one change.
		if _, err := f.svc.GoLive(f.ctx, e, shows.Media{}); err != nil {
			t.Fatal(err)
		}
		f.do(t, "DELETE", fmt.Sprintf("/v1/shows/%d", e), otherTok, nil).Expect(t, http.StatusOK)
		f.checkCounts(t, "delete", viewers)

		// The rebuild agrees with the maintained rows.
		var before, after []shows.ShowCount
		read := func(into *[]shows.ShowCount) {
			t.Helper()
			if err := f.svc.DB().NewSelect().Model(into).Where("n <> 0").OrderExpr("tag_id, live, complete, archive, featured, radio, private, s.off").Scan(f.ctx); err != nil {
				t.Fatal(err)
			}
		}
		read(&before)
		if err := shows.RebuildCounts(f.ctx, f.svc.DB()); err != nil {
			t.Fatal(err)
		}
		read(&after)
		if fmt.Sprint(before) != fmt.Sprint(after) {
			t.Errorf("maintained counts %v differ from a rebuild %v", before, after)
		}
	})
}

// TestCountsUnderConcurrentChanges: many changes at once — creates with
// shared new tags, go-lives, stops, tag updates, features, take-offs and
// deletes, from several goroutines — all succeed (a deadlock on the
// count rows runs the change again) and leave show_counts equal to a
// rebuild from the rows, on both databases.
func TestCountsUnderConcurrentChanges(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		f := newFixture(t, backend)
		const workers, each = 6, 5
		toks := make([]string, workers)
		for i := range toks {
			_, toks[i] = f.user(fmt.Sprintf("Racer %d", i))
		}
		errs := make(chan error, workers*each*8)
		done := make(chan struct{})
		for w := range workers {
			go func() {
				defer func() { done <- struct{}{} }()
				for i := range each {
					tags := []string{"race", fmt.Sprintf("race-%d", i%3)}
					r := f.env.Do("POST", "/v1/shows", toks[w], map[string]any{"name": fmt.Sprintf("Race %d-%d", w, i), "description": "d", "tags": tags})
					if r.Status != http.StatusCreated {
						errs <- fmt.Errorf("create: %d %s", r.Status, r.Body)
						continue
					}
					sid := id(r.JSON(t)["show"].(map[string]any))
					step := func(what string, err error) {
						if err != nil {
							errs <- fmt.Errorf("%s %d: %w", what, sid, err)
						}
					}
					_, err := f.svc.GoLive(f.ctx, sid, shows.Media{})
					step("go live", err)
					if r := f.env.Do("PUT", fmt.Sprintf("/v1/shows/%d", sid), toks[w], map[string]any{"tags": []string{"race-x", tags[1]}}); r.Status != http.StatusOK {
						errs <- fmt.Errorf("update %d: %d %s", sid, r.Status, r.Body)
					} else if got := len(r.JSON(t)["show"].(map[string]any)["tags"].([]any)); got != 2 {
						// A tag created by a concurrent request is in the answer.
						errs <- fmt.Errorf("update %d: %d tags in the answer, want 2: %s", sid, got, r.Body)
					}
					_, err = f.svc.SetFeatured(f.ctx, sid, true, nil)
					step("feature", err)
					switch i % 3 {
					case 0:
						_, err = f.svc.Stop(f.ctx, sid, nil)
						step("stop", err)
					case 1:
						_, err = f.svc.SetOff(f.ctx, sid, true, nil)
						step("off", err)
					case 2:
						_, err = f.svc.Delete(f.ctx, sid, nil)
						step("delete", err)
					}
				}
			}()
		}
		for range workers {
			<-done
		}
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		var maintained, rebuilt []shows.ShowCount
		read := func(into *[]shows.ShowCount) {
			t.Helper()
			if err := f.svc.DB().NewSelect().Model(into).Where("n <> 0").OrderExpr("tag_id, live, complete, archive, featured, radio, private, s.off").Scan(f.ctx); err != nil {
				t.Fatal(err)
			}
		}
		read(&maintained)
		if err := shows.RebuildCounts(f.ctx, f.svc.DB()); err != nil {
			t.Fatal(err)
		}
		read(&rebuilt)
		if fmt.Sprint(maintained) != fmt.Sprint(rebuilt) {
			t.Errorf("maintained counts %v differ from a rebuild %v", maintained, rebuilt)
		}
	})
}
