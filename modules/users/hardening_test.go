package users_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"sync"
	"testing"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/users"
)

// TestSignUpCrowd: a crowd signing up with one name at the same instant
// all get accounts with distinct slugs, on both databases: the unique
// index decides, the losers retry with another slug (app.NextSlug).
func TestSignUpCrowd(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env := onairtest.New(t, onairtest.Options{Backend: backend})
		svc := users.NewService(env.Core.DB, env.URL)
		const n = 24
		var wg sync.WaitGroup
		start := make(chan struct{})
		slugs := make([]string, n)
		errs := make([]error, n)
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				<-start
				u, err := svc.Create(context.Background(), users.NewUser{Name: "Crowd Name", Email: fmt.Sprintf("crowd-%d@example.com", i)})
				if err != nil {
					errs[i] = err
					return
				}
				slugs[i] = u.Slug
			}(i)
		}
		close(start)
		wg.Wait()
		seen := map[string]bool{}
		slugRE := regexp.MustCompile(`^crowd-name(-([2-9]|[1-9][0-9]+))?$`)
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("sign-up %d: %v", i, errs[i])
			}
			if seen[slugs[i]] || !slugRE.MatchString(slugs[i]) {
				t.Fatalf("slug %q: taken twice or not from the name (%v)", slugs[i], slugs)
			}
			seen[slugs[i]] = true
		}
	})
}

// TestUserTextRule: the text rule of docs/api.md holds for users: a NUL or
// invalid UTF-8 is a 422 on the field at sign-up (whatever the form) and a
// 400 in a GET /v1/users filter, never a 500.
func TestUserTextRule(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env := onairtest.New(t, onairtest.Options{Backend: backend})
		_, tok := env.CreateUser("Text Checker")
		svc := users.NewService(env.Core.DB, env.URL)
		loc := "Ber\x00lin"
		for _, tc := range []struct {
			name  string
			in    users.NewUser
			field string
		}{
			{"NUL in name", users.NewUser{Name: "a\x00b", Email: "nul@example.com"}, "name"},
			{"invalid UTF-8 in name", users.NewUser{Name: "a\xffb", Email: "bad@example.com"}, "name"},
			{"NUL in email", users.NewUser{Name: "ok", Email: "n\x00l@example.com"}, "email"},
			{"NUL in location", users.NewUser{Name: "ok", Email: "loc@example.com", Location: &loc}, "location"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := svc.Create(context.Background(), tc.in)
				var apiErr *app.Error
				if !errors.As(err, &apiErr) || apiErr.Status != http.StatusUnprocessableEntity || apiErr.Fields[tc.field] == "" {
					t.Fatalf("create: %v, want a 422 on %s", err, tc.field)
				}
			})
		}
		for _, param := range []string{"filter", "slug", "name"} {
			for _, bad := range []string{"a\x00b", "a\xffb", "tab\there"} {
				r := env.Do("GET", "/v1/users?"+url.Values{param: {bad}}.Encode(), tok, nil)
				if r.Status != http.StatusBadRequest || r.ErrorCode(t) != "bad_request" {
					t.Errorf("?%s=%q: %d %s, want 400", param, bad, r.Status, r.Body)
				}
			}
		}
		// The console's search goes through the service: a 400 there too.
		if _, _, err := svc.List(context.Background(), users.ListQuery{Search: "x\x00", Page: app.Page{Number: 1, Size: 20}}); !isStatus(err, http.StatusBadRequest) {
			t.Errorf("search with a NUL: %v, want a 400", err)
		}
	})
}

// TestUserSlugFilter: ?slug= is an exact, case-insensitive match on both
// databases; a value that cannot be a slug (accents, spaces, MySQL's
// trailing-space padding) matches nothing.
func TestUserSlugFilter(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env := onairtest.New(t, onairtest.Options{Backend: backend})
		_, tok := env.CreateUser("Ana Cafe")
		for _, tc := range []struct {
			slug string
			want []string
		}{
			{"ana-cafe", []string{"Ana Cafe"}}, {"ANA-CAFE", []string{"Ana Cafe"}},
			{"ana-cafe ", nil}, {"ana-café", nil}, {"ana_cafe", nil}, {"ana-caf", nil},
		} {
			l := list(t, env, tok, "?"+url.Values{"slug": {tc.slug}}.Encode())
			if got := names(l); fmt.Sprint(got) != fmt.Sprint(tc.want) || l.Count != len(tc.want) {
				t.Errorf("?slug=%q: %v (count %d), want %v", tc.slug, got, l.Count, tc.want)
			}
		}
	})
}

func isStatus(err error, status int) bool {
	var apiErr *app.Error
	return errors.As(err, &apiErr) && apiErr.Status == status
}
