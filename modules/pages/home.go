package pages

import (
	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/app"
	"github.com/onair/onair/modules/shows"
)

// section is one titled list of shows on the home page.
type section struct {
	ID, Title string
	Cards     []card
}

// homeSize is how many shows each home section shows.
const homeSize = 12

// home is GET /: featured shows first, then live now, upcoming and recent
// archives. Only public shows appear, whoever is looking; a show already
// listed in an earlier section is not repeated.
func (m *Module) home(c *fiber.Ctx, v *visitor) error {
	yes := true
	public := &app.Principal{}
	specs := []struct {
		id, title string
		q         shows.ListQuery
		reverse   bool
	}{
		{"featured", "Featured", shows.ListQuery{Featured: &yes}, false},
		{"live", "Live now", shows.ListQuery{Live: &yes}, false},
		// Lists run newest start first; upcoming reads soonest first.
		{"upcoming", "Upcoming", shows.ListQuery{Scheduled: &yes}, true},
		{"archives", "Recent archives", shows.ListQuery{Archive: &yes}, false},
	}
	seen := map[int64]bool{}
	var sections []section
	for _, s := range specs {
		s.q.Viewer = public
		s.q.Page = app.Page{Number: 1, Size: homeSize}
		list, _, err := m.shows.List(c.UserContext(), s.q)
		if err != nil {
			return err
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
			sections = append(sections, section{ID: s.id, Title: s.title, Cards: m.cards(keep)})
		}
	}
	l := m.layout(c, v, "Live and archived shows", "Live DJ sets, radio and talks: watch, listen and chat.")
	l.Canonical = m.public + "/"
	return m.render(c, fiber.StatusOK, homePage(l, sections))
}
