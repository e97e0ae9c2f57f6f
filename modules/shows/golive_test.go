package shows_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/uptrace/bun"

	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/shows"
)

// Shows going live together (the live module's batches: a node restart
// brings hundreds of publishers back within seconds) commit once, not
// once each; a show that may not go live (off, complete, gone) is refused
// on its own and the others go live, listed and counted as if each had
// gone live alone.
func TestGoLiveManyCommitsOnce(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		// Only the statements of the calls below count (their context is
		// marked), not those of the workers that follow events.
		commits := &markedCounter{match: func(q string) bool { return q == "COMMIT" }}
		statements := &markedCounter{match: func(q string) bool { return q != "BEGIN" && q != "COMMIT" }}
		env := onairtest.New(t, onairtest.Options{Backend: backend, QueryHooks: []bun.QueryHook{commits, statements}})
		marked := context.WithValue(context.Background(), counted{}, true)
		f := fixtureOn(t, env)
		_, tok := f.user("Together")
		const n = 12
		ids := make([]int64, n)
		for i := range ids {
			ids[i] = id(onairtest.CreateShow(t, env, tok, map[string]any{"name": fmt.Sprintf("Together %d", i), "description": "d",
				"tags": []string{"together"}}).Object)
		}
		off, complete, gone := ids[1], ids[2], ids[n-1]+1000
		if _, err := f.svc.SetOff(f.ctx, off, true, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.GoLive(f.ctx, complete, shows.Media{}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.Stop(f.ctx, complete, nil); err != nil {
			t.Fatal(err)
		}
		// What one show going live alone costs, for the log.
		c0, s0 := commits.n.Load(), statements.n.Load()
		if _, err := f.svc.GoLive(marked, ids[0], shows.Media{}); err != nil {
			t.Fatal(err)
		}
		t.Logf("one show alone: %d statements, %d commit", statements.n.Load()-s0, commits.n.Load()-c0)

		batch := []shows.GoingLive{{ShowID: gone}}
		for _, sid := range ids[1:] {
			batch = append(batch, shows.GoingLive{ShowID: sid})
		}
		c0, s0 = commits.n.Load(), statements.n.Load()
		errs, err := f.svc.GoLiveMany(marked, batch)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%d shows together: %d statements, %d commit", len(batch), statements.n.Load()-s0, commits.n.Load()-c0)
		if got := commits.n.Load() - c0; got != 1 {
			t.Errorf("%d shows went live in %d commits, want 1", len(batch), got)
		}
		var want []int64
		for i, g := range batch {
			refused := g.ShowID == off || g.ShowID == complete || g.ShowID == gone
			switch {
			case g.ShowID == gone && !errors.Is(errs[i], shows.ErrNotFound):
				t.Errorf("unknown show %d: %v, want ErrNotFound", g.ShowID, errs[i])
			case refused && g.ShowID != gone && !errors.Is(errs[i], shows.ErrRefused):
				t.Errorf("show %d (off or complete): %v, want ErrRefused", g.ShowID, errs[i])
			case !refused && errs[i] != nil:
				t.Errorf("show %d: %v, want live", g.ShowID, errs[i])
			}
			if !refused {
				want = append(want, g.ShowID)
			}
		}
		want = append(want, ids[0])

		// The lists and the tag's counts see each of them live.
		for _, path := range []string{"/v1/shows?live=true", "/v1/shows?live=true&tag=together"} {
			r := env.Do("GET", path, tok, nil).Expect(t, http.StatusOK)
			var got []int64
			for _, item := range r.JSON(t)["shows"].([]any) {
				sh := item.(map[string]any)
				if sh["live"] != true || !strings.Contains(fmt.Sprint(sh["thumbnail_label"]), "Live") {
					t.Errorf("%s: show %v listed as %v / %v, want live", path, sh["id"], sh["live"], sh["thumbnail_label"])
				}
				got = append(got, id(sh))
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("%s lists %v, want %v", path, got, want)
			}
		}
	})
}

// counted marks the context of the statements a markedCounter counts.
type counted struct{}

// markedCounter counts the statements that match, run with a context
// marked counted.
type markedCounter struct {
	match func(query string) bool
	n     atomic.Int64
}

func (*markedCounter) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	return ctx
}

func (c *markedCounter) AfterQuery(ctx context.Context, ev *bun.QueryEvent) {
	if ctx.Value(counted{}) != nil && c.match(ev.Query) {
		c.n.Add(1)
	}
}
