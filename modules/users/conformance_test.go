package users_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/users"
)

// userFields are exactly the keys of a user in GET /users and GET
// /users/:id: radio and tags present; email and followers_count absent.
var userFields = []string{"id", "url", "object_url", "slug", "name", "location", "description",
	"created_at", "dj", "producer", "featured", "radio", "image_url", "cover_url", "tags"}

var timestamp = regexp.MustCompile(`^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$`)

// checkUser asserts the presence rules and the types of one user object.
func checkUser(t *testing.T, env *onairtest.Env, u map[string]any) {
	t.Helper()
	var keys []string
	for k := range u {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	want := append([]string(nil), userFields...)
	sort.Strings(want)
	if strings.Join(keys, ",") != strings.Join(want, ",") {
		t.Fatalf("user fields %v, want %v", keys, want)
	}
	id, ok := u["id"].(float64)
	if !ok || id < 1 || id != float64(int64(id)) {
		t.Fatalf("id %v", u["id"])
	}
	base := env.Core.Config.PublicURL
	for k, wantURL := range map[string]string{
		"url":        base + "/" + fmt.Sprint(u["slug"]),
		"object_url": fmt.Sprintf("%s/v1/users/%d", base, int64(id)),
	} {
		if u[k] != wantURL {
			t.Errorf("%s = %v, want %s", k, u[k], wantURL)
		}
	}
	for _, k := range []string{"image_url", "cover_url"} {
		s, _ := u[k].(string)
		if !strings.HasPrefix(s, base+"/") {
			t.Errorf("%s = %v is not absolute on %s", k, u[k], base)
		}
	}
	for _, k := range []string{"slug", "name"} {
		if _, ok := u[k].(string); !ok {
			t.Errorf("%s = %v is not a string", k, u[k])
		}
	}
	for _, k := range []string{"location", "description"} {
		if _, ok := u[k].(string); !ok && u[k] != nil {
			t.Errorf("%s = %v is neither a string nor null", k, u[k])
		}
	}
	for _, k := range []string{"dj", "producer", "featured", "radio"} {
		if _, ok := u[k].(bool); !ok {
			t.Errorf("%s = %v is not a boolean", k, u[k])
		}
	}
	if s, _ := u["created_at"].(string); !timestamp.MatchString(s) {
		t.Errorf("created_at %v is not YYYY-MM-DD HH:MM:SS", u["created_at"])
	}
	if _, ok := u["tags"].([]any); !ok {
		t.Errorf("tags %v is not an array", u["tags"])
	}
}

type userList struct {
	Page    int              `json:"page"`
	NextURL *string          `json:"next_url"`
	PrevURL *string          `json:"prev_url"`
	Pages   int              `json:"pages"`
	Count   int              `json:"count"`
	Users   []map[string]any `json:"users"`
}

func list(t *testing.T, env *onairtest.Env, tok, query string) userList {
	t.Helper()
	var l userList
	env.Do("GET", "/v1/users"+query, tok, nil).Expect(t, http.StatusOK).Decode(t, &l)
	if l.Users == nil {
		t.Fatalf("users is null in %s", query)
	}
	return l
}

func names(l userList) []string {
	var out []string
	for _, u := range l.Users {
		out = append(out, u["name"].(string))
	}
	return out
}

func follow(t *testing.T, env *onairtest.Env, tok string, id int64) {
	t.Helper()
	env.Do("POST", fmt.Sprintf("/v1/users/%d/follow", id), tok, nil).Expect(t, http.StatusOK)
}

func TestUsersConformance(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		t.Parallel()

		t.Run("fields and types", func(t *testing.T) {
			t.Parallel()
			env := onairtest.New(t, onairtest.Options{Backend: backend})
			me, tok := env.CreateUser("Fiona Fields", onairtest.Radio)
			other, _ := env.CreateUser("Oscar Other")
			l := list(t, env, tok, "")
			if len(l.Users) != 2 {
				t.Fatalf("%d users", len(l.Users))
			}
			for _, u := range l.Users {
				checkUser(t, env, u)
			}
			for _, path := range []string{fmt.Sprintf("/v1/users/%d", other.ID), "/v1/users/me"} {
				body := env.Do("GET", path, tok, nil).Expect(t, http.StatusOK).JSON(t)
				if len(body) != 1 {
					t.Fatalf("%s: want only {\"user\": ...}, got %v", path, body)
				}
				checkUser(t, env, body["user"].(map[string]any))
			}
			u := env.Do("GET", "/v1/users/me", tok, nil).JSON(t)["user"].(map[string]any)
			if u["id"] != float64(me.ID) || u["radio"] != true || u["name"] != "Fiona Fields" || u["slug"] != "fiona-fields" {
				t.Fatalf("me = %v", u)
			}
		})

		t.Run("most followed first", func(t *testing.T) {
			t.Parallel()
			env := onairtest.New(t, onairtest.Options{Backend: backend})
			_, ta := env.CreateUser("Ada One")
			b, tb := env.CreateUser("Ben Two")
			c, tc := env.CreateUser("Cat Three")
			_, td := env.CreateUser("Dan Four")
			follow(t, env, ta, c.ID)
			follow(t, env, tb, c.ID)
			follow(t, env, td, c.ID)
			follow(t, env, ta, b.ID)
			follow(t, env, tc, b.ID)
			follow(t, env, ta, b.ID) // twice counts once
			got := names(list(t, env, ta, ""))
			// Ties (no followers) keep the oldest first.
			want := []string{"Cat Three", "Ben Two", "Ada One", "Dan Four"}
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Fatalf("order %v, want %v", got, want)
			}
			env.Do("DELETE", fmt.Sprintf("/v1/users/%d/follow", c.ID), ta, nil).Expect(t, 200)
			env.Do("DELETE", fmt.Sprintf("/v1/users/%d/follow", c.ID), tb, nil).Expect(t, 200)
			got = names(list(t, env, ta, ""))
			want = []string{"Ben Two", "Cat Three", "Ada One", "Dan Four"}
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Fatalf("after unfollows %v, want %v", got, want)
			}
		})

		t.Run("filters", func(t *testing.T) {
			t.Parallel()
			env := onairtest.New(t, onairtest.Options{Backend: backend})
			_, tok := env.CreateUser("Zed Viewer")
			env.CreateUser("DJ Sunrise")
			env.CreateUser("Sunny Day")
			env.CreateUser("Moon Child")
			env.CreateUser("Percent 100% Pure")
			env.CreateUser("Sun Ray")
			tests := []struct {
				query string
				want  []string
			}{
				{"filter=sun", []string{"DJ Sunrise", "Sun Ray", "Sunny Day"}},
				{"filter=SUN", []string{"DJ Sunrise", "Sun Ray", "Sunny Day"}},
				{"filter=dj-sun", []string{"DJ Sunrise"}}, // slug contains
				{"filter=moon", []string{"Moon Child"}},
				{"filter=%25", []string{"Percent 100% Pure"}}, // a literal %, not a wildcard
				{"filter=n_r", nil}, // _ is literal too ("Sun Ray")
				{"filter=n%20r", []string{"Sun Ray"}},
				{"filter=nobody", nil},
				{"slug=sunny-day", []string{"Sunny Day"}},
				{"slug=sunny", nil},                       // exact, not contains
				{"slug=SUNNY-DAY", []string{"Sunny Day"}}, // slugs are lowercase on both databases
				{"name=child", []string{"Moon Child"}},
				{"name=dj-sun", nil}, // name only, not the slug
				{"name=sun&filter=day", []string{"Sunny Day"}},
			}
			for _, tt := range tests {
				t.Run(tt.query, func(t *testing.T) {
					l := list(t, env, tok, "?"+tt.query)
					got := names(l)
					sort.Strings(got)
					if strings.Join(got, ",") != strings.Join(tt.want, ",") || l.Count != len(tt.want) {
						t.Fatalf("got %v (count %d), want %v", got, l.Count, tt.want)
					}
				})
			}
		})

		t.Run("pagination", func(t *testing.T) {
			t.Parallel()
			env := onairtest.New(t, onairtest.Options{Backend: backend})
			_, tok := env.CreateUser("Page Reader")
			for i := 1; i <= 20; i++ {
				env.CreateUser(fmt.Sprintf("Page Member %02d", i))
			}
			env.CreateUser("Someone Else")
			base := env.Core.Config.PublicURL

			p1 := list(t, env, tok, "?filter=page")
			if p1.Page != 1 || p1.Pages != 2 || p1.Count != 21 || len(p1.Users) != 20 || p1.PrevURL != nil || p1.NextURL == nil {
				t.Fatalf("page 1: page %d pages %d count %d users %d prev %v next %v", p1.Page, p1.Pages, p1.Count, len(p1.Users), p1.PrevURL, p1.NextURL)
			}
			next, err := url.Parse(*p1.NextURL)
			if err != nil || next.Scheme+"://"+next.Host != base || next.Path != "/v1/users" ||
				next.Query().Get("page") != "2" || next.Query().Get("filter") != "page" {
				t.Fatalf("next_url %q is not absolute on %s with filter=page&page=2", *p1.NextURL, base)
			}
			p2 := list(t, env, tok, "?"+next.RawQuery)
			if p2.Page != 2 || p2.Pages != 2 || p2.Count != 21 || len(p2.Users) != 1 || p2.NextURL != nil || p2.PrevURL == nil {
				t.Fatalf("page 2: %+v", p2)
			}
			prev, _ := url.Parse(*p2.PrevURL)
			if prev.Scheme+"://"+prev.Host != base || prev.Query().Get("page") != "1" || prev.Query().Get("filter") != "page" {
				t.Fatalf("prev_url %q", *p2.PrevURL)
			}
			seen := map[any]bool{}
			for _, u := range append(p1.Users, p2.Users...) {
				seen[u["id"]] = true
			}
			if len(seen) != 21 {
				t.Fatalf("two pages hold %d distinct users, want 21", len(seen))
			}
			all := list(t, env, tok, "")
			if all.Count != 22 || all.Pages != 2 {
				t.Fatalf("unfiltered: count %d pages %d", all.Count, all.Pages)
			}
			past := list(t, env, tok, "?filter=page&page=3")
			if past.Page != 3 || len(past.Users) != 0 || past.NextURL != nil {
				t.Fatalf("past the end: %+v", past)
			}
			empty := list(t, env, tok, "?filter=nobody-at-all")
			if empty.Count != 0 || empty.Pages != 0 || empty.NextURL != nil || empty.PrevURL != nil {
				t.Fatalf("empty: %+v", empty)
			}
		})

		t.Run("errors", func(t *testing.T) {
			t.Parallel()
			env := onairtest.New(t, onairtest.Options{Backend: backend})
			me, tok := env.CreateUser("Erin Errors")
			tests := []struct {
				name, method, path string
				status             int
				code               string
			}{
				{"missing id", "GET", "/v1/users/999999", 404, "not_found"},
				{"non-numeric id", "GET", "/v1/users/abc", 404, "not_found"},
				{"zero id", "GET", "/v1/users/0", 404, "not_found"},
				{"page=abc", "GET", "/v1/users?page=abc", 400, "bad_request"},
				{"page=0", "GET", "/v1/users?page=0", 400, "bad_request"},
				{"page=-1", "GET", "/v1/users?page=-1", 400, "bad_request"},
				{"follow a missing user", "POST", "/v1/users/999999/follow", 404, "not_found"},
				{"unfollow a missing user", "DELETE", "/v1/users/999999/follow", 404, "not_found"},
				{"follow yourself", "POST", fmt.Sprintf("/v1/users/%d/follow", me.ID), 422, "validation_failed"},
				{"follow me", "POST", "/v1/users/me/follow", 422, "validation_failed"},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					r := env.Do(tt.method, tt.path, tok, nil).Expect(t, tt.status)
					if code := r.ErrorCode(t); code != tt.code {
						t.Fatalf("code %q, want %q", code, tt.code)
					}
				})
			}
			body := env.Do("POST", "/v1/users/me/follow", tok, nil).JSON(t)
			fields, _ := body["error"].(map[string]any)["fields"].(map[string]any)
			if fields["id"] == nil {
				t.Fatalf("422 without fields.id: %v", body)
			}
		})

		t.Run("follow and unfollow are idempotent", func(t *testing.T) {
			t.Parallel()
			env := onairtest.New(t, onairtest.Options{Backend: backend})
			_, tok := env.CreateUser("Fay Follower")
			star, _ := env.CreateUser("Sam Star")
			svc := users.NewService(env.Core.DB, env.Core.Config.PublicURL)
			count := func() int {
				u, err := svc.Get(context.Background(), star.ID)
				if err != nil {
					t.Fatal(err)
				}
				return u.FollowersCount
			}
			path := fmt.Sprintf("/v1/users/%d/follow", star.ID)
			steps := []struct {
				method string
				want   int
			}{{"POST", 1}, {"POST", 1}, {"DELETE", 0}, {"DELETE", 0}, {"POST", 1}}
			for i, s := range steps {
				body := env.Do(s.method, path, tok, nil).Expect(t, http.StatusOK).JSON(t)
				u := body["user"].(map[string]any)
				checkUser(t, env, u)
				if u["id"] != float64(star.ID) {
					t.Fatalf("step %d answered user %v", i, u["id"])
				}
				if got := count(); got != s.want {
					t.Fatalf("step %d (%s): followers_count %d, want %d", i, s.method, got, s.want)
				}
			}
		})
	})
}
