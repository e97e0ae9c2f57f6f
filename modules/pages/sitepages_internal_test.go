package pages

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/app"
	"github.com/onair/onair/site"
)

// sitePager is a module with site pages.
type sitePager struct {
	name  string
	pages []app.SitePage
}

func (p sitePager) Name() string              { return p.name }
func (p sitePager) SitePages() []app.SitePage { return p.pages }

// A site page the host could not mount as written stops start-up naming
// the module, as a console page does: no Mount, a malformed path, or the
// path of another module's page (routing ignores case, so does this).
func TestSitePagesRefuseMistakes(t *testing.T) {
	mount := func(fiber.Router) {}
	ok := sitePager{"first", []app.SitePage{{Path: "/things", Mount: mount}}}
	for _, tc := range []struct {
		name string
		mod  sitePager
		want string
	}{
		{"no Mount", sitePager{"second", []app.SitePage{{Path: "/other"}}}, "has no Mount"},
		{"empty path", sitePager{"second", []app.SitePage{{Path: "", Mount: mount}}}, "must start and not end with /"},
		{"root", sitePager{"second", []app.SitePage{{Path: "/", Mount: mount}}}, "must start and not end with /"},
		{"relative", sitePager{"second", []app.SitePage{{Path: "other", Mount: mount}}}, "must start and not end with /"},
		{"trailing slash", sitePager{"second", []app.SitePage{{Path: "/other/", Mount: mount}}}, "must start and not end with /"},
		{"taken", sitePager{"second", []app.SitePage{{Path: "/Things", Mount: mount}}}, "already mounted by first"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &Module{modules: []app.Module{ok, tc.mod}}
			got := func() (msg string) {
				defer func() { msg = fmt.Sprint(recover()) }()
				m.sitePages()
				return ""
			}()
			if !strings.Contains(got, tc.want) || !strings.Contains(got, "second") {
				t.Fatalf("panic %q, want one naming module second and %q", got, tc.want)
			}
		})
	}
	m := &Module{modules: []app.Module{ok, sitePager{"second", []app.SitePage{{Path: "/other", Mount: mount}}}}}
	if got := m.sitePages(); len(got) != 2 || got[0].Path != "/things" || got[1].Path != "/other" {
		t.Fatalf("pages %+v, want /things then /other", got)
	}
}

// A module's site page adds its entry to the header's navigation of
// signed-in visitors, among the host's own in NavOrder; a page without
// Nav adds none, and the header draws the entries as links.
func TestSitePagesNav(t *testing.T) {
	mount := func(fiber.Router) {}
	m := &Module{modules: []app.Module{
		sitePager{"hooks", []app.SitePage{{Path: "/account/hooks", Mount: mount, Nav: "Hooks", NavOrder: 30}}},
		sitePager{"quiet", []app.SitePage{{Path: "/quiet", Mount: mount}}},
		sitePager{"first", []app.SitePage{{Path: "/first", Mount: mount, Nav: "First", NavOrder: 5}}},
	}}
	m.mountSitePages(fiber.New())
	var got []string
	for _, n := range m.nav {
		got = append(got, n.Title+" "+n.Href)
	}
	if want := []string{"First /first", "Studio /studio", "Account /account", "Hooks /account/hooks"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("nav %q, want %q", got, want)
	}
	var html strings.Builder
	l := site.Layout{SignedIn: true, UserName: "Ann", UserPath: "/ann", Nav: m.nav}
	if err := site.Page(l).Render(context.Background(), &html); err != nil {
		t.Fatal(err)
	}
	for _, link := range []string{`<a href="/first">First</a>`, `<a href="/studio">Studio</a>`, `<a href="/account/hooks">Hooks</a>`} {
		if !strings.Contains(html.String(), link) {
			t.Errorf("the header lacks %s: %s", link, html.String())
		}
	}
}
