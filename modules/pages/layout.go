package pages

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/modules/shows"
	"github.com/onair/onair/site"
)

// layout is what every page's frame needs (site.Page draws it).
type layout = site.Layout

func (m *Module) layout(c *fiber.Ctx, v *visitor, title, description string) layout {
	return site.NewLayout(c, m.siteRequest(v), title, description)
}

// card is a show in a list.
type card struct {
	Path, Name, Owner, OwnerPath, Image, Label, Badge, BadgeClass string
	Start                                                         time.Time
	Private, Off                                                  bool
}

func (m *Module) card(sh *shows.Show) card {
	v := m.shows.View(sh, false)
	st := stateOf(sh, m.clock.Stamp())
	c := card{
		Name: sh.Name, Image: v.ImageURL, Label: sh.ThumbnailLabel, Start: sh.Start,
		Badge: st.label, BadgeClass: st.class, Private: sh.Private, Off: sh.Off,
	}
	if sh.User != nil {
		c.Path, c.Owner, c.OwnerPath = "/"+sh.User.Slug+"/"+sh.Slug, sh.User.Name, "/"+sh.User.Slug
	}
	return c
}

func (m *Module) cards(list []shows.Show) []card {
	out := make([]card, 0, len(list))
	for i := range list {
		out = append(out, m.card(&list[i]))
	}
	return out
}

// state is how a show's situation reads on a page.
type state struct {
	label, class string
	live         bool
	archive      bool
	scheduled    bool
	ended        bool // complete, recording not (or never) available
}

// stateOf is sh's state at now.
func stateOf(sh *shows.Show, now time.Time) state {
	switch {
	case sh.Live:
		return state{label: "Live", class: "live", live: true}
	case sh.Archive:
		return state{label: "Archive", class: "archived", archive: true}
	case sh.Complete:
		return state{label: "Finished", class: "", ended: true}
	case sh.Start.After(now):
		return state{label: "Scheduled", class: "", scheduled: true}
	default:
		return state{label: "Starting soon", class: ""}
	}
}

// key names the state for the script (follow.go): live, archive, ended,
// scheduled or soon.
func (s state) key() string {
	switch {
	case s.live:
		return "live"
	case s.archive:
		return "archive"
	case s.ended:
		return "ended"
	case s.scheduled:
		return "scheduled"
	}
	return "soon"
}

// utc renders a time for people, in UTC (the script shows local time).
func utc(t time.Time) string { return site.UTC(t) }

// iso is a time for a <time datetime> attribute.
func iso(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// hms renders a duration in seconds as H:MM:SS or M:SS.
func hms(seconds int) string {
	h, m, s := seconds/3600, seconds/60%60, seconds%60
	if h > 0 {
		return fmt.Sprintf("%d:%02d:%02d", h, m, s)
	}
	return fmt.Sprintf("%d:%02d", m, s)
}

// excerpt shortens text to about n characters on a word boundary.
func excerpt(text string, n int) string {
	text = strings.Join(strings.Fields(text), " ")
	r := []rune(text)
	if len(r) <= n {
		return text
	}
	cut := string(r[:n])
	if i := strings.LastIndex(cut, " "); i > n/2 {
		cut = cut[:i]
	}
	return cut + "…"
}

func queryEscape(s string) string { return url.QueryEscape(s) }
