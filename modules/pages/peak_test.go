package pages_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/shows"
)

// TestStudioPeakViewers: the studio lists a live show's viewers now and at
// peak, a past show its peak, and an upcoming one neither; the show's
// studio page and the API's object (the owner's) carry the same peak.
func TestStudioPeakViewers(t *testing.T) {
	t.Parallel()
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env := onairtest.New(t, onairtest.Options{Backend: backend})
		owner := newPerson(t, env, "Peak Studio")
		svc, ctx := showService(env), context.Background()
		live := onairtest.CreateShow(t, env, owner.token, map[string]any{"name": "On Air Now"}).ID
		past := onairtest.CreateShow(t, env, owner.token, map[string]any{"name": "Last Night"}).ID
		onairtest.CreateShow(t, env, owner.token, map[string]any{"name": "Not Yet"})
		for _, id := range []int64{live, past} {
			onairtest.PublishShow(t, env, id, shows.Media{})
		}
		for _, p := range []struct {
			id int64
			n  int
		}{{live, 7}, {past, 12}, {past, 9}} { // a lower count never lowers the peak
			if err := svc.RecordPeak(ctx, p.id, p.n); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := svc.Stop(ctx, past, nil); err != nil {
			t.Fatal(err)
		}

		me := owner.signedIn(t, env)
		list := me.get("/studio")
		row := func(name string) string {
			m := regexp.MustCompile(`(?s)<li data-show="\d+">.{0,200}?` + name + `.*?</li>`).FindString(list.body)
			if m == "" {
				t.Fatalf("no row for %s in:\n%s", name, list.body)
			}
			return m
		}
		if r := row("On Air Now"); !strings.Contains(r, "0 viewers now") || !strings.Contains(r, `<span class="peak">peak 7</span>`) {
			t.Errorf("live row: %s", r)
		}
		if r := row("Last Night"); !strings.Contains(r, `<span class="peak">peak 12 viewers</span>`) || strings.Contains(r, "now") {
			t.Errorf("past row: %s", r)
		}
		if r := row("Not Yet"); strings.Contains(r, `class="peak"`) {
			t.Errorf("upcoming row: %s", r)
		}
		if p := me.get(path("/studio/shows/%d", live)); !strings.Contains(p.body, `<dd id="h-peak">7</dd>`) || !strings.Contains(p.body, `<span id="peak">peak 7</span>`) {
			t.Errorf("the live show's studio page lacks its peak:\n%s", p.body)
		}
		if sh := onairtest.GetShow(t, env, owner.token, past); sh["peak_viewers"] != 12.0 {
			t.Errorf("API peak_viewers %v", sh["peak_viewers"])
		}
		if h := env.Do("GET", path("/v1/shows/%d/health", live), owner.token, nil).Expect(t, http.StatusOK).JSON(t)["health"].(map[string]any); h["peak_viewers"] != 7.0 {
			t.Errorf("health of the live show: %v", h)
		}
	})
}
