package pages

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/app"
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
