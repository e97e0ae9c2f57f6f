package shows_test

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/shows"
)

// TestNameFilterFollowsShowKeys: a name-filtered list keeps the spec's
// order and visibility through every change that moves a show's start or
// visibility (go live, a new scheduled start, privacy, take-down and
// back, a rename), on both databases; on MySQL the gram rows' copies of
// each show's name, start and visibility stay those of the show, and
// RebuildGrams restores copies written around the service.
func TestNameFilterFollowsShowKeys(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		f := newFixture(t, backend)
		_, ownerTok := f.user("Dawn Owner")
		_, otherTok := f.user("Dawn Other")
		soon := func(h int) string { return app.Now().Add(time.Duration(h) * time.Hour).Format(app.TimeLayout) }
		mk := func(name string, body map[string]any) int64 {
			t.Helper()
			body["name"], body["description"] = name, "d"
			return onairtest.CreateShow(t, f.env, ownerTok, body).ID
		}
		a := mk("Dawn Patrol A", map[string]any{})
		b := mk("Dawn Patrol B", map[string]any{"private": true})
		c := mk("Dawn Patrol C", map[string]any{"start": soon(48)})
		d := mk("dawn patrol d", map[string]any{"start": soon(24)})
		mk("Dusk Patrol", map[string]any{})

		// check compares the list of other (who sees public shows only)
		// with the shows' rows filtered and sorted in Go.
		check := func(step string) {
			t.Helper()
			var rows []shows.Show
			if err := f.svc.DB().NewSelect().Model(&rows).Scan(f.ctx); err != nil {
				t.Fatal(err)
			}
			var want []int64
			slices.SortFunc(rows, func(x, y shows.Show) int {
				if !x.Start.Equal(y.Start) {
					return y.Start.Compare(x.Start)
				}
				return int(y.ID - x.ID)
			})
			for _, sh := range rows {
				if !sh.Private && !sh.Off && strings.Contains(strings.ToLower(sh.Name), "awn patrol") {
					want = append(want, sh.ID)
				}
			}
			got, body := f.listIDs(t, "/v1/shows?filter="+url.QueryEscape("AWN PATROL"), otherTok)
			if fmt.Sprint(got) != fmt.Sprint(want) || int(body["count"].(float64)) != len(want) {
				t.Errorf("%s: list %v count %v, want %v", step, got, body["count"], want)
			}
			if !app.IsMySQL(f.svc.DB()) {
				return
			}
			n, err := f.svc.DB().NewSelect().TableExpr("show_grams AS g").Join("JOIN shows AS s ON s.id = g.show_id").
				Where("g.name <> s.name OR g.start IS NULL OR g.start <> s.start OR g.public <> (s.private = 0 AND s.off = 0)").Count(f.ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n != 0 {
				t.Errorf("%s: %d gram rows differ from their show", step, n)
			}
		}
		check("create")
		if _, err := f.svc.GoLive(f.ctx, c, shows.Media{}); err != nil {
			t.Fatal(err)
		}
		check("go live")
		f.do(t, "PUT", fmt.Sprintf("/v1/shows/%d", d), ownerTok, map[string]any{"start": soon(72)}).Expect(t, http.StatusOK)
		check("new start")
		f.do(t, "PUT", fmt.Sprintf("/v1/shows/%d", b), ownerTok, map[string]any{"private": false, "name": "Dawn Patrol Bee"}).Expect(t, http.StatusOK)
		check("public and renamed")
		if _, err := f.svc.SetOff(f.ctx, a, true, nil); err != nil {
			t.Fatal(err)
		}
		check("off")
		if _, err := f.svc.SetOff(f.ctx, a, false, nil); err != nil {
			t.Fatal(err)
		}
		f.do(t, "PUT", fmt.Sprintf("/v1/shows/%d", d), ownerTok, map[string]any{"private": true, "start": soon(96)}).Expect(t, http.StatusOK)
		check("restored, private with a new start")
		f.do(t, "PUT", fmt.Sprintf("/v1/shows/%d", c), ownerTok, map[string]any{"name": "Dusk Patrol C"}).Expect(t, http.StatusOK)
		check("renamed out")

		if !app.IsMySQL(f.svc.DB()) {
			return
		}
		// Copies written around the service, then rebuilt (twice: a
		// rebuild interrupted and run again starts over).
		if _, err := f.svc.DB().ExecContext(f.ctx, "UPDATE show_grams SET name = '', start = NULL, public = 0"); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if err := shows.RebuildGrams(f.ctx, f.svc.DB()); err != nil {
				t.Fatal(err)
			}
		}
		// A change the lists see (a new data generation), so they read
		// again.
		if _, err := f.svc.SetFeatured(f.ctx, a, true, nil); err != nil {
			t.Fatal(err)
		}
		check("rebuilt")
	})
}

// A gram row's copy of its show's visibility left stale (a node of the
// release before writes no copies, during a rolling upgrade) never puts a
// private show in another viewer's list: the show's row decides.
func TestStaleGramCopyHidesPrivateShow(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		f := newFixture(t, backend)
		_, ownerTok := f.user("Stale Owner")
		_, otherTok := f.user("Stale Other")
		pub := onairtest.CreateShow(t, f.env, ownerTok, map[string]any{"name": "Moonset Public", "description": "d"}).ID
		priv := onairtest.CreateShow(t, f.env, ownerTok, map[string]any{"name": "Moonset Hidden", "description": "d"}).ID
		f.do(t, "PUT", fmt.Sprintf("/v1/shows/%d", priv), ownerTok, map[string]any{"private": true}).Expect(t, http.StatusOK)
		if app.IsMySQL(f.svc.DB()) {
			if _, err := f.svc.DB().NewUpdate().Table("show_grams").Set("public = ?", true).Where("show_id = ?", priv).Exec(f.ctx); err != nil {
				t.Fatal(err)
			}
		}
		got, _ := f.listIDs(t, "/v1/shows?filter=moonset", otherTok)
		if fmt.Sprint(got) != fmt.Sprint([]int64{pub}) {
			t.Errorf("another viewer's list %v, want only the public show %d", got, pub)
		}
		got, _ = f.listIDs(t, "/v1/shows?filter=moonset", ownerTok)
		if len(got) != 2 {
			t.Errorf("the owner's list %v, want both shows", got)
		}
	})
}
