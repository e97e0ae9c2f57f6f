package shows_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/shows"
)

// TestNameFilterIndex: the gram index behind ?filter= follows creates,
// renames and deletes, so the filter finds exactly what LIKE would.
func TestNameFilterIndex(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env := onairtest.New(t, onairtest.Options{Backend: backend})
		_, tok := env.CreateUser("Gram Tester")
		r := env.Do("POST", "/v1/shows", tok, map[string]any{"name": "Déjà Vu Sessions", "description": "x"}).Expect(t, http.StatusCreated)
		id := int64(r.JSON(t)["show"].(map[string]any)["id"].(float64))
		env.Do("POST", "/v1/shows", tok, map[string]any{"name": "Vu", "description": "short name"}).Expect(t, http.StatusCreated)
		// Trigrams equal under MySQL's accent-insensitive collation.
		env.Do("POST", "/v1/shows", tok, map[string]any{"name": "Café Cafe", "description": "x"}).Expect(t, http.StatusCreated)

		count := func(filter string) int {
			t.Helper()
			body := env.Do("GET", "/v1/shows?filter="+url.QueryEscape(filter), tok, nil).Expect(t, http.StatusOK).JSON(t)
			return int(body["count"].(float64))
		}
		cases := []struct {
			filter string
			want   int
		}{
			{"jà vu s", 1}, {"SESSIONS", 1}, {"vu", 2}, {"v", 2}, {"sessionsx", 0}, {"ions ses", 0},
		}
		for _, c := range cases {
			if got := count(c.filter); got != c.want {
				t.Errorf("filter %q: %d shows, want %d", c.filter, got, c.want)
			}
		}
		env.Do("PUT", fmt.Sprintf("/v1/shows/%d", id), tok, map[string]any{"name": "Morning Coffee"}).Expect(t, http.StatusOK)
		if got := count("sessions"); got != 0 {
			t.Errorf("old name still found after a rename: %d", got)
		}
		if got := count("g coff"); got != 1 {
			t.Errorf("new name not found after a rename: %d", got)
		}
		env.Do("DELETE", fmt.Sprintf("/v1/shows/%d", id), tok, nil).Expect(t, http.StatusOK)
		n, err := env.Core.DB.NewSelect().Model((*shows.ShowGram)(nil)).Where("show_id = ?", id).Count(context.Background())
		if err != nil || n != 0 {
			t.Errorf("%d grams of a deleted show remain (%v)", n, err)
		}
	})
}

// TestRegenerateStreamKey: the owner gets a new key through the API, the
// old one is refused, and nobody else may do it.
func TestRegenerateStreamKey(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{})
	_, owner := env.CreateUser("Key Owner")
	_, other := env.CreateUser("Key Other")
	r := env.Do("POST", "/v1/shows", owner, map[string]any{"name": "Leaky", "description": "x"}).Expect(t, http.StatusCreated)
	show := r.JSON(t)["show"].(map[string]any)
	id, oldKey := int64(show["id"].(float64)), show["stream_key"].(string)
	env.Do("POST", fmt.Sprintf("/v1/shows/%d/stream_key", id), other, nil).Expect(t, http.StatusForbidden)
	fresh := env.Do("POST", fmt.Sprintf("/v1/shows/%d/stream_key", id), owner, nil).Expect(t, http.StatusOK).JSON(t)["show"].(map[string]any)
	newKey, _ := fresh["stream_key"].(string)
	if newKey == "" || newKey == oldKey || fresh["stream_url"] == nil {
		t.Fatalf("new key %q (old %q), stream_url %v", newKey, oldKey, fresh["stream_url"])
	}
	svc := shows.From(env.Core)
	if _, err := svc.Authorize(context.Background(), oldKey); err == nil {
		t.Error("the old key is still accepted")
	}
	if sh, err := svc.Authorize(context.Background(), newKey); err != nil || sh.ID != id {
		t.Errorf("the new key is refused: %v", err)
	}
}
