package shows_test

import (
	"fmt"
	"net/http"
	"regexp"
	"sync"
	"testing"

	"github.com/onair/onair/internal/onairtest"
)

// TestConcurrentCreates: racing POST /v1/shows with one name (one owner)
// all answer 201 with distinct slugs, and racing creates by different
// owners with the same new tags share one row per tag. The database's
// unique keys decide the race; the loser retries, never a 500.
func TestConcurrentCreates(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		f := newFixture(t, backend)
		const n = 12

		type answer struct {
			status int
			body   string
			show   map[string]any
		}
		race := func(tokens []string, body func(i int) map[string]any) []answer {
			out := make([]answer, n)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := 0; i < n; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					<-start
					r := f.env.Do("POST", "/v1/shows", tokens[i%len(tokens)], body(i))
					out[i] = answer{status: r.Status, body: string(r.Body)}
					if r.Status == http.StatusCreated {
						out[i].show, _ = r.JSON(t)["show"].(map[string]any)
					}
				}(i)
			}
			close(start)
			wg.Wait()
			return out
		}

		t.Run("one owner, one name", func(t *testing.T) {
			_, tok := f.user("Racing Owner")
			got := race([]string{tok}, func(i int) map[string]any {
				return map[string]any{"name": "Same Name", "description": "d", "tags": []string{"Race", "Other"}}
			})
			slugs := map[string]bool{}
			for i, a := range got {
				if a.status != http.StatusCreated {
					t.Fatalf("create %d: %d %s", i, a.status, a.body)
				}
				slugs[a.show["slug"].(string)] = true
			}
			if len(slugs) != n {
				t.Fatalf("%d distinct slugs for %d shows: %v", len(slugs), n, slugs)
			}
			slugRE := regexp.MustCompile(`^same-name(-([2-9]|[1-9][0-9]+))?$`)
			for s := range slugs {
				if !slugRE.MatchString(s) {
					t.Errorf("unexpected slug %q", s)
				}
			}
			// A race may leave a gap (app.NextSlug); the next create
			// takes the first free slug.
			first := "same-name"
			for i := 2; slugs[first]; i++ {
				first = fmt.Sprintf("same-name-%d", i)
			}
			if sh := onairtest.CreateShow(t, f.env, tok, map[string]any{"name": "Same Name", "description": "d"}).Object; sh["slug"] != first {
				t.Errorf("after the race: slug %v, want %s", sh["slug"], first)
			}
		})

		t.Run("many owners, new tags", func(t *testing.T) {
			var tokens []string
			for i := 0; i < 4; i++ {
				_, tok := f.user(fmt.Sprintf("Tagger %d", i))
				tokens = append(tokens, tok)
			}
			got := race(tokens, func(i int) map[string]any {
				// Two orders of the same new tags.
				tags := []string{"Fresh A", "Fresh B", "fresh c"}
				if i%2 == 1 {
					tags = []string{"fresh c", "FRESH B", "Fresh A"}
				}
				return map[string]any{"name": "Tagged", "description": "d", "tags": tags}
			})
			for i, a := range got {
				if a.status != http.StatusCreated {
					t.Fatalf("create %d: %d %s", i, a.status, a.body)
				}
				if tags := a.show["tags"].([]any); len(tags) != 3 {
					t.Fatalf("create %d: tags %v", i, tags)
				}
			}
			ids, _ := f.listIDs(t, "/v1/shows?tag=fresh%20b", tokens[0])
			if len(ids) != n {
				t.Fatalf("?tag=fresh b lists %d shows, want %d", len(ids), n)
			}
		})
	})
}
