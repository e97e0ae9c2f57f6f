// Package podcast is the podcast module: every user's public archived
// shows as a podcast feed, RSS 2.0 with the iTunes and Podcasting 2.0
// namespaces, at a stable URL, /podcasts/{user id}.xml (FeedURL), which
// the user page links (<link rel="alternate">) and the account page
// shows. Each episode's enclosure is the show's audio download
// (modules/downloads), with its true length and type.
package podcast

import (
	"context"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/app"
	"github.com/onair/onair/modules/downloads"
	"github.com/onair/onair/modules/shows"
	"github.com/onair/onair/modules/users"
)

func init() { app.Register(&Module{}) }

// Module is the podcast module.
type Module struct {
	core      *app.Core
	users     *users.Service
	shows     *shows.Service
	downloads *downloads.Module
}

var (
	_ app.Provisioner  = (*Module)(nil)
	_ app.PublicRouter = (*Module)(nil)
)

func (*Module) Name() string { return "podcast" }

func (m *Module) Provision(ctx context.Context, core *app.Core) error {
	um, ok := app.Lookup[*users.Module](core)
	if !ok || um.Service == nil {
		return errNoUsers
	}
	m.core, m.users, m.shows, m.downloads = core, um.Service, shows.From(core), downloads.From(core)
	return nil
}

func (m *Module) PublicRoutes(r fiber.Router) {
	r.Get("/podcasts/:id.xml", m.feed)
	r.Get("/podcasts/:id/cover.png", m.cover)
}

// FeedURL is the podcast feed of a user: stable, by id, so it survives a
// change of name.
func FeedURL(publicURL string, userID int64) string {
	return publicURL + "/podcasts/" + strconv.FormatInt(userID, 10) + ".xml"
}
