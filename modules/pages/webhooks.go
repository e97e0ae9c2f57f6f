package pages

import (
	"errors"
	"sort"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/app"
	"github.com/onair/onair/modules/webhooks"
)

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
func (m *Module) webhooksPage(c *fiber.Ctx, v *visitor) error {
	return m.renderWebhooks(c, v, fiber.StatusOK, "", "")
}

func (m *Module) renderWebhooks(c *fiber.Ctx, v *visitor, status int, secret, problem string) error {
	if !v.signedIn() {
		return redirect(c, "/signin?next=/account/webhooks")
	}
	if m.webhooks == nil {
		return app.NotFound("page")
	}
	d := webhooksData{CSRF: v.csrf(), APIURL: m.public + "/v1/webhooks", NewSecret: secret, Problem: problem, Events: webhooks.Events}
	hooks, err := webhooks.OfUser(c.UserContext(), m.users.DB(), v.user.ID)
	if err != nil {
		return err
	}
	for i := range hooks {
		w := &hooks[i]
		state, bad := w.State()
		pw := pageWebhook{ID: strconv.FormatInt(w.ID, 10), URL: w.URL, Events: strings.Join(w.EventList(), ", "),
			Description: w.Description, State: state, Problem: bad, Active: w.Active}
		list, _, err := m.webhooks.Deliveries(c.UserContext(), v.p, w.ID, app.Page{Number: 1, Size: recentDeliveries})
		if err != nil {
			return err
		}
		for _, dl := range list {
			pd := pageDelivery{ID: strconv.FormatInt(dl.ID, 10), Event: dl.EventID, Type: dl.Type, Status: dl.Status,
				When: utc(dl.CreatedAt), Attempts: dl.Attempts}
			switch {
			case dl.StatusCode != nil:
				pd.Result = "HTTP " + strconv.Itoa(*dl.StatusCode)
			case dl.Error != "":
				pd.Result = dl.Error
			}
			if dl.Status == webhooks.StatusPending && dl.NextAttemptAt != nil {
				pd.Next = utc(*dl.NextAttemptAt)
			}
			pw.Deliveries = append(pw.Deliveries, pd)
		}
		d.Webhooks = append(d.Webhooks, pw)
	}
	noStore(c)
	return m.render(c, status, webhooksView(m.layout(c, v, "Webhooks", ""), d))
}

// formProblem turns a refusal of a webhook form into a line for the page;
// other errors are not the form's.
func formProblem(err error) (string, bool) {
	var apiErr *app.Error
	if !errors.As(err, &apiErr) || apiErr.Status >= 500 || apiErr.Status == fiber.StatusNotFound {
		return "", false
	}
	if len(apiErr.Fields) == 0 {
		return apiErr.Message, true
	}
	var parts []string
	for f, p := range apiErr.Fields {
		parts = append(parts, f+" "+p)
	}
	sort.Strings(parts)
	return strings.Join(parts, "; "), true
}

// createWebhook is POST /account/webhooks: the page shows the new
// webhook's secret once.
func (m *Module) createWebhook(c *fiber.Ctx, v *visitor) error {
	if err := m.signedInPost(c, v); err != nil {
		return err
	}
	if m.webhooks == nil {
		return app.NotFound("page")
	}
	url, desc := c.FormValue("url"), c.FormValue("description")
	var events []string
	c.Request().PostArgs().VisitAll(func(k, val []byte) {
		if string(k) == "events" {
			events = append(events, string(val))
		}
	})
	w, err := m.webhooks.Create(c.UserContext(), v.p, webhooks.Input{URL: &url, Description: &desc, Events: &events})
	if err != nil {
		if msg, ok := formProblem(err); ok {
			return m.renderWebhooks(c, v, fiber.StatusUnprocessableEntity, "", msg)
		}
		return err
	}
	return m.renderWebhooks(c, v, fiber.StatusOK, w.Secret, "")
}

// webhookAction is a POST on one webhook: ping, enable, delete, or retry
// a delivery; then back to the page (or the page with the refusal).
func (m *Module) webhookAction(act string) func(c *fiber.Ctx, v *visitor) error {
	return func(c *fiber.Ctx, v *visitor) error {
		if err := m.signedInPost(c, v); err != nil {
			return err
		}
		if m.webhooks == nil {
			return app.NotFound("page")
		}
		id, _ := strconv.ParseInt(c.Params("id"), 10, 64)
		ctx := c.UserContext()
		var err error
		switch act {
		case "ping":
			_, err = m.webhooks.Ping(ctx, v.p, id)
		case "enable":
			on := true
			_, err = m.webhooks.Update(ctx, v.p, id, webhooks.Input{Active: &on})
		case "delete":
			_, err = m.webhooks.Delete(ctx, v.p, id)
		case "retry":
			did, _ := strconv.ParseInt(c.Params("delivery_id"), 10, 64)
			_, err = m.webhooks.Retry(ctx, v.p, id, did)
		}
		if err != nil {
			if msg, ok := formProblem(err); ok {
				return m.renderWebhooks(c, v, fiber.StatusConflict, "", msg)
			}
			return err
		}
		return redirect(c, "/account/webhooks")
	}
}
