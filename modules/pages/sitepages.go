package pages

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/app"
	"github.com/onair/onair/site"
)

// The pages module hosts the site: besides its own pages it mounts every
// module's (app.SitePager) and draws every module's section of the
// account page (app.AccountSectioner). It knows none of them by name.

// sitePages gathers the site pages of every module, in registration
// order. A page without a Mount, with a malformed path or with the path of
// another fails loudly at start-up, since it is a programming error.
func (m *Module) sitePages() []app.SitePage {
	var pages []app.SitePage
	seen := map[string]string{}
	for _, mod := range m.modules {
		sp, ok := mod.(app.SitePager)
		if !ok {
			continue
		}
		for _, p := range sp.SitePages() {
			if p.Mount == nil {
				panic(fmt.Sprintf("pages: module %s: site page %q has no Mount", mod.Name(), p.Path))
			}
			if len(p.Path) < 2 || !strings.HasPrefix(p.Path, "/") || strings.HasSuffix(p.Path, "/") {
				panic(fmt.Sprintf("pages: module %s: site page path %q must start and not end with /", mod.Name(), p.Path))
			}
			key := strings.ToLower(p.Path)
			if other, dup := seen[key]; dup {
				panic(fmt.Sprintf("pages: site page %q of module %s is already mounted by %s", p.Path, mod.Name(), other))
			}
			seen[key] = mod.Name()
			pages = append(pages, p)
		}
	}
	return pages
}

// ownNav is the header's navigation of the pages the module serves
// itself; the modules' site pages add theirs (app.SitePage.Nav).
var ownNav = []site.NavItem{{Title: "Studio", Href: "/studio", Order: 10}, {Title: "Account", Href: "/account", Order: 20}}

// mountSitePages mounts the modules' site pages, each behind sitePage,
// and gathers the header's navigation.
func (m *Module) mountSitePages(r fiber.Router) {
	nav := append([]site.NavItem(nil), ownNav...)
	for _, p := range m.sitePages() {
		p.Mount(r.Group(p.Path, m.sitePage(p)))
		if p.Nav != "" {
			nav = append(nav, site.NavItem{Title: p.Nav, Href: p.Path, Order: p.NavOrder})
		}
	}
	site.SortNav(nav)
	m.nav = nav
}

// sitePage runs before a module's page: it loads the visitor for package
// site, keeps an account page to signed-in users with their form token,
// and shows the page's errors as the site's HTML error page. A request
// that no route of the page answers goes on as it came (Fiber's 404, or
// the routes after the pages).
func (m *Module) sitePage(p app.SitePage) fiber.Handler {
	prefix := strings.ToLower(p.Path)
	return func(c *fiber.Ctx) error {
		// Fiber runs a group's handler for every path that merely starts
		// with its prefix ("/pingsxyz" for "/pings"): those are not the
		// page's (a user's page, perhaps), and go on untouched. Routing
		// ignores case, so does the comparison.
		if path := strings.ToLower(c.Path()); path != prefix && !strings.HasPrefix(path, prefix+"/") {
			return c.Next()
		}
		v, err := m.visitorOf(c)
		if err == nil && p.Account {
			if !v.signedIn() && (c.Method() == fiber.MethodGet || c.Method() == fiber.MethodHead) {
				return site.Redirect(c, "/signin?next="+strings.ReplaceAll(url.QueryEscape(c.Path()), "%2F", "/"))
			}
			if c.Method() != fiber.MethodGet && c.Method() != fiber.MethodHead {
				err = site.CheckPost(c)
			}
		}
		if err == nil {
			err = c.Next()
		}
		var fe *fiber.Error
		var po passedOn
		switch {
		case err == nil:
			return nil
		case errors.As(err, &po):
			return po.err
		case errors.As(err, &fe) && fe.Code == fiber.StatusNotFound:
			return err
		}
		return m.renderError(c, v, err)
	}
}

// accountSections are the modules' sections of v's account page.
func (m *Module) accountSections(c *fiber.Ctx) ([]app.Component, error) {
	var out []app.Component
	for _, mod := range m.modules {
		as, ok := mod.(app.AccountSectioner)
		if !ok {
			continue
		}
		s, err := as.AccountSection(c)
		if err != nil {
			return nil, fmt.Errorf("pages: account section of %s: %w", mod.Name(), err)
		}
		if s != nil {
			out = append(out, s)
		}
	}
	return out, nil
}
