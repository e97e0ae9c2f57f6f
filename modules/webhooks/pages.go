package webhooks

import (
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/app"
	"github.com/onair/onair/site"
)

var (
	_ app.SitePager        = (*Module)(nil)
	_ app.AccountSectioner = (*Module)(nil)
)

// SitePages: /account/webhooks, where a signed-in user manages their
// webhooks as the API does (add, ping, enable, delete, the latest
// deliveries with retry). The site's host mounts it behind the session
// and the form token (an account page).
func (m *Module) SitePages() []app.SitePage {
	return []app.SitePage{{Path: "/account/webhooks", Account: true, Mount: func(r fiber.Router) {
		r.Get("/", m.webhooksPage)
		r.Post("/", m.createWebhook)
		r.Post("/:id/ping", m.webhookAction("ping"))
		r.Post("/:id/enable", m.webhookAction("enable"))
		r.Post("/:id/delete", m.webhookAction("delete"))
		r.Post("/:id/deliveries/:delivery_id/retry", m.webhookAction("retry"))
	}}}
}

// webhooksData is /account/webhooks: the user's webhooks with their last
// deliveries, the form to add one, the secret of the one just created
// (once), and the problem of the last form sent.
type webhooksData struct {
	CSRF, APIURL, NewSecret, Problem string
	Events                           []string
	Webhooks                         []pageWebhook
}

type pageWebhook struct {
	ID, URL, Events, Description, State string
	Problem, Active                     bool
	Deliveries                          []pageDelivery
}

type pageDelivery struct {
	ID, Event, Type, Status, Result, When, Next string
	Attempts                                    int
}

// recentDeliveries is how many deliveries of each webhook the page lists.
const recentDeliveries = 10

// webhooksPage is GET /account/webhooks.
func (m *Module) webhooksPage(c *fiber.Ctx) error {
	return m.renderWebhooks(c, fiber.StatusOK, "", "")
}

func (m *Module) renderWebhooks(c *fiber.Ctx, status int, secret, problem string) error {
	v := site.Current(c)
	if !v.SignedIn() { // an account page: the host signs visitors in first
		return app.Unauthorized("sign in first")
	}
	d := webhooksData{CSRF: v.CSRF, APIURL: m.public + "/v1/webhooks", NewSecret: secret, Problem: problem, Events: Events}
	hooks, err := OfUser(c.UserContext(), m.db, v.User.ID)
	if err != nil {
		return err
	}
	for i := range hooks {
		w := &hooks[i]
		state, bad := w.State()
		pw := pageWebhook{ID: strconv.FormatInt(w.ID, 10), URL: w.URL, Events: strings.Join(w.EventList(), ", "),
			Description: w.Description, State: state, Problem: bad, Active: w.Active}
		list, _, err := m.Deliveries(c.UserContext(), v.Principal, w.ID, app.Page{Number: 1, Size: recentDeliveries})
		if err != nil {
			return err
		}
		for _, dl := range list {
			pd := pageDelivery{ID: strconv.FormatInt(dl.ID, 10), Event: dl.EventID, Type: dl.Type, Status: dl.Status,
				When: site.UTC(dl.CreatedAt), Attempts: dl.Attempts}
			switch {
			case dl.StatusCode != nil:
				pd.Result = "HTTP " + strconv.Itoa(*dl.StatusCode)
			case dl.Error != "":
				pd.Result = dl.Error
			}
			if dl.Status == StatusPending && dl.NextAttemptAt != nil {
				pd.Next = site.UTC(*dl.NextAttemptAt)
			}
			pw.Deliveries = append(pw.Deliveries, pd)
		}
		d.Webhooks = append(d.Webhooks, pw)
	}
	site.NoStore(c)
	return site.Render(c, status, webhooksView(site.LayoutOf(c, "Webhooks", ""), d))
}

// createWebhook is POST /account/webhooks: the page shows the new
// webhook's secret once.
func (m *Module) createWebhook(c *fiber.Ctx) error {
	url, desc := c.FormValue("url"), c.FormValue("description")
	var events []string
	c.Request().PostArgs().VisitAll(func(k, val []byte) {
		if string(k) == "events" {
			events = append(events, string(val))
		}
	})
	w, err := m.Create(c.UserContext(), site.Current(c).Principal, Input{URL: &url, Description: &desc, Events: &events})
	if err != nil {
		if msg, ok := site.FormProblem(err); ok {
			return m.renderWebhooks(c, fiber.StatusUnprocessableEntity, "", msg)
		}
		return err
	}
	return m.renderWebhooks(c, fiber.StatusOK, w.Secret, "")
}

// webhookAction is a POST on one webhook: ping, enable, delete, or retry
// a delivery; then back to the page (or the page with the refusal).
func (m *Module) webhookAction(act string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		id, _ := strconv.ParseInt(c.Params("id"), 10, 64)
		ctx, p := c.UserContext(), site.Current(c).Principal
		var err error
		switch act {
		case "ping":
			_, err = m.Ping(ctx, p, id)
		case "enable":
			on := true
			_, err = m.Update(ctx, p, id, Input{Active: &on})
		case "delete":
			_, err = m.Delete(ctx, p, id)
		case "retry":
			did, _ := strconv.ParseInt(c.Params("delivery_id"), 10, 64)
			_, err = m.Retry(ctx, p, id, did)
		}
		if err != nil {
			if msg, ok := site.FormProblem(err); ok {
				return m.renderWebhooks(c, fiber.StatusConflict, "", msg)
			}
			return err
		}
		return site.Redirect(c, "/account/webhooks")
	}
}

// accountWebhook is one of the user's webhooks with its state in words
// (why it is failing or disabled: docs/webhooks.md), as the account page
// lists it.
type accountWebhook struct {
	URL, Events, State string
	Problem            bool
}

// AccountSection: the account page's Webhooks section, the user's
// webhooks with their state and a link to /account/webhooks.
func (m *Module) AccountSection(c *fiber.Ctx) (app.Component, error) {
	v := site.Current(c)
	if !v.SignedIn() {
		return nil, nil
	}
	hooks, err := OfUser(c.UserContext(), m.db, v.User.ID)
	if err != nil {
		return nil, err
	}
	list := make([]accountWebhook, 0, len(hooks))
	for i := range hooks {
		state, problem := hooks[i].State()
		list = append(list, accountWebhook{URL: hooks[i].URL, Events: strings.Join(hooks[i].EventList(), ", "), State: state, Problem: problem})
	}
	return accountSection(list), nil
}
