package pages

import (
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/app"
	"github.com/onair/onair/modules/podcast"
	"github.com/onair/onair/modules/shows"
	"github.com/onair/onair/modules/users"
	"github.com/onair/onair/site"
)

// userData is the user page.
type userData struct {
	Name, Image, Cover, Location, Description, Followers string
	FollowersWord, Website, WebsiteLabel                 string
	CanFollow, Following                                 bool
	FollowPath, CSRF, SignInPath                         string
	Feed                                                 string // the podcast feed
	Headline                                             *card
	Live, Upcoming, Past                                 []card
}

// userShows is how many of a user's shows the page reads.
const userShows = 50

// userPage is GET /{user_slug}, a user's url: the profile, the headline
// show, live, upcoming and past shows, and the follow button. The owner
// sees their own private and off shows (marked); others never do.
func (m *Module) userPage(c *fiber.Ctx, v *visitor) error {
	u, err := m.userBySlug(c, c.Params("user"))
	if err != nil {
		return err
	}
	if u == nil {
		return m.next(c, v)
	}
	list, _, err := m.shows.Lists.List(c.UserContext(), shows.ListQuery{Viewer: v.p, UserID: u.ID, Page: app.Page{Number: 1, Size: userShows}})
	if err != nil {
		return err
	}
	view := users.NewView(m.public, u, users.ForUserRead)
	d := userData{Name: u.Name, Image: view.ImageURL, Followers: strconv.Itoa(u.FollowersCount), FollowersWord: "followers"}
	if u.FollowersCount == 1 {
		d.FollowersWord = "follower"
	}
	if u.CoverKey != nil {
		d.Cover = view.CoverURL
	}
	if u.Website != nil {
		// Stored only as an http or https address (users.ProfileInput).
		d.Website = *u.Website
		d.WebsiteLabel = strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(d.Website, "https://"), "http://"), "/")
	}
	if u.Location != nil {
		d.Location = *u.Location
	}
	if u.Description != nil {
		d.Description = *u.Description
	}
	now := m.clock.Stamp()
	for i := range list {
		sh := &list[i]
		cd := m.card(sh)
		switch {
		case sh.Headline && d.Headline == nil:
			d.Headline = &cd
		case sh.Live:
			d.Live = append(d.Live, cd)
		case sh.Complete:
			d.Past = append(d.Past, cd)
		case sh.Start.After(now):
			d.Upcoming = append([]card{cd}, d.Upcoming...) // soonest first
		}
	}
	switch {
	case v.signedIn() && v.user.ID != u.ID:
		d.CanFollow, d.CSRF, d.FollowPath = true, v.csrf(), "/follow/"+strconv.FormatInt(u.ID, 10)
		d.Following, err = m.users.DB().NewSelect().Model((*users.Follow)(nil)).
			Where("follower_id = ? AND followed_id = ?", v.user.ID, u.ID).Exists(c.UserContext())
		if err != nil {
			return err
		}
	case !v.signedIn():
		d.SignInPath = "/signin?next=" + queryEscape("/"+u.Slug)
	}
	l := m.layout(c, v, u.Name, excerpt(d.Description, 160))
	l.Canonical = view.URL
	d.Feed = podcast.FeedURL(m.public, u.ID)
	l.Feed, l.FeedTitle = d.Feed, u.Name+" (podcast)"
	return m.render(c, fiber.StatusOK, userPageView(l, d))
}

// follow is POST /follow/:id (follow=1 follows, follow=0 unfollows), then
// back to the user's page.
func (m *Module) follow(c *fiber.Ctx, v *visitor) error {
	if !v.signedIn() {
		return site.Redirect(c, "/signin")
	}
	if err := m.checkCSRF(c, v); err != nil {
		return err
	}
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil || id < 1 {
		return app.NotFound("user")
	}
	u, err := m.users.Get(c.UserContext(), id)
	if err != nil {
		if err == users.ErrNotFound {
			return app.NotFound("user")
		}
		return err
	}
	if c.FormValue("follow") == "0" {
		err = m.users.Unfollow(c.UserContext(), v.user.ID, u.ID)
	} else {
		err = m.users.Follow(c.UserContext(), v.user.ID, u.ID)
	}
	if err != nil {
		return err
	}
	return site.Redirect(c, "/"+u.Slug)
}
