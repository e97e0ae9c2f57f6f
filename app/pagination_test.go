package app_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
)

// listOf answers a list of ?total= numbered items, 20 a page, through the
// kernel's envelope, as every list endpoint does (List.Send).
func listOf(publicURL *string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		l, err := numbered(c, *publicURL)
		if err != nil {
			return err
		}
		return l.Send(c)
	}
}

func numbered(c *fiber.Ctx, publicURL string) (*app.List, error) {
	page, err := app.ParsePage(c, 20)
	if err != nil {
		return nil, err
	}
	total, _ := strconv.Atoi(c.Query("total"))
	var items []int
	for i := page.Offset(); i < total && i < page.Offset()+page.Size; i++ {
		items = append(items, i+1)
	}
	return app.NewList(c, publicURL, page, total, "items", items), nil
}

type envelope struct {
	Page    int     `json:"page"`
	NextURL *string `json:"next_url"`
	PrevURL *string `json:"prev_url"`
	Pages   int     `json:"pages"`
	Count   int     `json:"count"`
	Items   []int   `json:"items"`
}

func TestPaginationEnvelope(t *testing.T) {
	var public string
	env := onairtest.New(t, onairtest.Options{Mount: func(a *fiber.App) { a.Get("/test/list", listOf(&public)) }})
	public = env.Core.Config.PublicURL
	filters := url.Values{"total": {"45"}, "filter": {"deep house & more"}, "tag": {"café"}, "live": {"true"}}
	tests := []struct {
		name          string
		total, page   string
		wantPage      int
		wantPages     int
		wantItems     int
		wantNext      string // page of next_url, "" for null
		wantPrev      string
		wantFirstItem int
	}{
		{"first page", "45", "", 1, 3, 20, "2", "", 1},
		{"middle page", "45", "2", 2, 3, 20, "3", "1", 21},
		{"last page", "45", "3", 3, 3, 5, "", "2", 41},
		{"past the end", "45", "9", 9, 3, 0, "", "3", 0},
		{"past the end of an empty list", "0", "4", 4, 0, 0, "", "1", 0},
		{"exactly one page", "20", "1", 1, 1, 20, "", "", 1},
		{"empty list", "0", "", 1, 0, 0, "", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := url.Values{}
			for k, v := range filters {
				q[k] = v
			}
			q.Set("total", tt.total)
			if tt.page != "" {
				q.Set("page", tt.page)
			}
			r := env.Do("GET", "/test/list?"+q.Encode(), "", nil).Expect(t, http.StatusOK)
			var e envelope
			if err := json.Unmarshal(r.Body, &e); err != nil {
				t.Fatal(err)
			}
			if e.Page != tt.wantPage || e.Pages != tt.wantPages || e.Count != mustAtoi(tt.total) || len(e.Items) != tt.wantItems {
				t.Fatalf("page %d pages %d count %d items %d: %s", e.Page, e.Pages, e.Count, len(e.Items), r.Body)
			}
			if e.Items == nil {
				t.Fatal("items must be [], never null")
			}
			if tt.wantFirstItem > 0 && e.Items[0] != tt.wantFirstItem {
				t.Fatalf("first item %d, want %d", e.Items[0], tt.wantFirstItem)
			}
			checkLink(t, "next_url", e.NextURL, tt.wantNext, public, q)
			checkLink(t, "prev_url", e.PrevURL, tt.wantPrev, public, q)
		})
	}
	t.Run("following next_url walks every item once", func(t *testing.T) {
		next := env.URL + "/test/list?total=45&filter=x"
		seen := 0
		for next != "" {
			var e envelope
			json.Unmarshal(env.Do("GET", next, "", nil).Expect(t, 200).Body, &e)
			seen += len(e.Items)
			next = ""
			if e.NextURL != nil {
				next = *e.NextURL
			}
		}
		if seen != 45 {
			t.Fatalf("walked %d items", seen)
		}
	})
	t.Run("the body is encoding/json's own form of the envelope", func(t *testing.T) {
		for _, q := range []string{"total=0", "total=45", "total=45&page=3", "total=45&page=9&filter=%3Cb%3E+%26"} {
			r := env.Do("GET", "/test/list?"+q, "", nil).Expect(t, 200)
			var e envelope
			if err := json.Unmarshal(r.Body, &e); err != nil {
				t.Fatalf("%s: %v: %s", q, err, r.Body)
			}
			if e.Items == nil {
				e.Items = []int{} // an empty page is [], never null
			}
			want, _ := json.Marshal(e)
			if string(r.Body) != string(want) {
				t.Fatalf("%s: body\n%s\nwant\n%s", q, r.Body, want)
			}
			if ct := r.Header.Get("Content-Type"); ct != fiber.MIMEApplicationJSON {
				t.Fatalf("%s: Content-Type %q", q, ct)
			}
		}
	})
	for _, bad := range []string{"abc", "0", "-1", "1.5", "99999999999"} {
		t.Run("page="+bad+" is 400", func(t *testing.T) {
			r := env.Do("GET", "/test/list?total=5&page="+url.QueryEscape(bad), "", nil).Expect(t, http.StatusBadRequest)
			if r.ErrorCode(t) != "bad_request" {
				t.Fatalf("body %s", r.Body)
			}
		})
	}
}

// checkLink: an absolute URL on the public base, same path, every filter
// of the request kept, page set to want; or null when want is "".
func checkLink(t *testing.T, name string, link *string, want, public string, request url.Values) {
	t.Helper()
	if want == "" {
		if link != nil {
			t.Fatalf("%s = %q, want null", name, *link)
		}
		return
	}
	if link == nil {
		t.Fatalf("%s is null, want page %s", name, want)
	}
	u, err := url.Parse(*link)
	if err != nil || !u.IsAbs() || u.Scheme+"://"+u.Host != public || u.Path != "/test/list" {
		t.Fatalf("%s %q is not an absolute URL on %s", name, *link, public)
	}
	got := u.Query()
	if got.Get("page") != want {
		t.Fatalf("%s page %q, want %s", name, got.Get("page"), want)
	}
	for k, v := range request {
		if k == "page" {
			continue
		}
		if got.Get(k) != v[0] {
			t.Fatalf("%s lost filter %s=%q: %s", name, k, v[0], *link)
		}
	}
}

func mustAtoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
