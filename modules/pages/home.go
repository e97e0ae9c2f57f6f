package pages

import (
	"net/url"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/app"
	"github.com/onair/onair/modules/shows"
	"github.com/onair/onair/modules/users"
)

// section is one titled list of shows on the home page.
type section struct {
	ID, Title, More string
	Cards           []card
}

// homeData is the home page: the sections, one tab of shows, or search
// results, with the search box and the tabs above.
type homeData struct {
	Query, Tab string
	Sections   []section
	// Searching or a tab: one list, paginated.
	List       []card
	ListTitle  string
	Users      []userCard
	Prev, Next string
	Page       int
	Searching  bool
	// Generation is the shows' data generation read before the lists:
	// the page's script fetches them again when the event stream says
	// another (follow.go).
	Generation int64
}

type userCard struct{ Name, Path, Image, Followers string }

// homeSize is how many shows each home section shows; tabPage how many a
// page of a tab or of search results.
const (
	homeSize    = 12
	tabPage     = 24
	maxQuery    = 200
	upcomingCap = 500 // upcoming shows a tab sorts (soonest first) in memory
)

// homeTabs are the tabs of the home page.
var homeTabs = []struct{ ID, Title string }{{"live", "Live now"}, {"upcoming", "Upcoming"}, {"recent", "Recent"}}

// home is GET /: featured shows first, then live now, upcoming and recent
// archives. Only public shows appear, whoever is looking; a show already
// listed in an earlier section is not repeated. ?q= searches shows and
// users; ?tab=live|upcoming|recent lists one kind, ?page=N pages through
// either.
func (m *Module) home(c *fiber.Ctx, v *visitor) error {
	q, err := app.QueryText(c, "q", maxQuery)
	if err != nil {
		return err
	}
	page, err := app.ParsePage(c, tabPage)
	if err != nil {
		return err
	}
	d := homeData{Query: q, Tab: c.Query("tab"), Page: page.Number}
	if d.Generation, err = m.shows.Lists.Generation(c.UserContext()); err != nil {
		return err
	}
	switch {
	case q != "":
		err = m.search(c, &d, page)
	case d.Tab == "live" || d.Tab == "upcoming" || d.Tab == "recent":
		err = m.tab(c, &d, page)
	default:
		d.Tab = ""
		d.Sections, err = m.sections(c)
	}
	if err != nil {
		return err
	}
	l := m.layout(c, v, "Live and archived shows", "Live DJ sets, radio and talks: watch, listen and chat.")
	l.Canonical = m.public + "/"
	return m.render(c, fiber.StatusOK, homePage(l, d))
}

func (m *Module) sections(c *fiber.Ctx) ([]section, error) {
	yes := true
	public := &app.Principal{}
	specs := []struct {
		id, title, more string
		q               shows.ListQuery
		reverse         bool
	}{
		{"featured", "Featured", "", shows.ListQuery{Featured: &yes}, false},
		{"live", "Live now", "/?tab=live", shows.ListQuery{Live: &yes}, false},
		// Lists run newest start first; upcoming reads soonest first.
		{"upcoming", "Upcoming", "/?tab=upcoming", shows.ListQuery{Scheduled: &yes}, true},
		{"archives", "Recent archives", "/?tab=recent", shows.ListQuery{Archive: &yes}, false},
	}
	seen := map[int64]bool{}
	var sections []section
	for _, s := range specs {
		s.q.Viewer = public
		s.q.Page = app.Page{Number: 1, Size: homeSize}
		list, total, err := m.shows.Lists.List(c.UserContext(), s.q)
		if err != nil {
			return nil, err
		}
		var keep []shows.Show
		for _, sh := range list {
			if !seen[sh.ID] {
				seen[sh.ID] = true
				keep = append(keep, sh)
			}
		}
		if s.reverse {
			for i, j := 0, len(keep)-1; i < j; i, j = i+1, j-1 {
				keep[i], keep[j] = keep[j], keep[i]
			}
		}
		if len(keep) > 0 {
			sec := section{ID: s.id, Title: s.title, Cards: m.cards(keep)}
			if total > homeSize {
				sec.More = s.more
			}
			sections = append(sections, sec)
		}
	}
	return sections, nil
}

// tab is one kind of show, paginated: live now (newest first), upcoming
// (soonest first) or recent archives (newest first).
func (m *Module) tab(c *fiber.Ctx, d *homeData, page app.Page) error {
	yes := true
	q := shows.ListQuery{Viewer: &app.Principal{}, Page: page}
	for _, t := range homeTabs {
		if t.ID == d.Tab {
			d.ListTitle = t.Title
		}
	}
	var list []shows.Show
	var total int
	var err error
	switch d.Tab {
	case "live":
		q.Live = &yes
	case "recent":
		q.Archive = &yes
	case "upcoming":
		// The store lists newest start first; read the scheduled shows
		// (few) and page through them soonest first.
		q.Scheduled, q.Page = &yes, app.Page{Number: 1, Size: upcomingCap}
		all, n, err := m.shows.Lists.List(c.UserContext(), q)
		if err != nil {
			return err
		}
		total = min(n, upcomingCap)
		for i := len(all) - 1 - page.Offset(); i >= 0 && len(list) < page.Size; i-- {
			list = append(list, all[i])
		}
		m.paginate(d, page, total, url.Values{"tab": {d.Tab}})
		d.List = m.cards(list)
		return nil
	}
	if list, total, err = m.shows.Lists.List(c.UserContext(), q); err != nil {
		return err
	}
	d.List = m.cards(list)
	m.paginate(d, page, total, url.Values{"tab": {d.Tab}})
	return nil
}

// search finds public shows whose name contains the text (paginated) and
// the users whose name or slug does (the first page of them).
func (m *Module) search(c *fiber.Ctx, d *homeData, page app.Page) error {
	d.Searching, d.ListTitle = true, "Shows"
	list, total, err := m.shows.Lists.List(c.UserContext(), shows.ListQuery{Viewer: &app.Principal{}, Filter: d.Query, Page: page})
	if err != nil {
		return err
	}
	d.List = m.cards(list)
	m.paginate(d, page, total, url.Values{"q": {d.Query}})
	if page.Number == 1 {
		people, _, err := m.users.List(c.UserContext(), users.ListQuery{Filter: d.Query, Page: app.Page{Number: 1, Size: homeSize}})
		if err != nil {
			return err
		}
		for i := range people {
			u := &people[i]
			d.Users = append(d.Users, userCard{
				Name: u.Name, Path: "/" + u.Slug, Image: users.NewView(m.public, u, users.ForUserRead).ImageURL,
				Followers: plural(u.FollowersCount, "follower", "followers"),
			})
		}
	}
	return nil
}

// paginate sets the previous and next page links, keeping the filters.
func (m *Module) paginate(d *homeData, page app.Page, total int, keep url.Values) {
	link := func(n int) string {
		q := url.Values{}
		for k, v := range keep {
			q[k] = v
		}
		if n > 1 {
			q.Set("page", strconv.Itoa(n))
		}
		return "/?" + q.Encode()
	}
	if page.Number > 1 {
		d.Prev = link(page.Number - 1)
	}
	if page.Number*page.Size < total {
		d.Next = link(page.Number + 1)
	}
}
