package webhooks_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/admin/admintest"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/users"
)

// pagesEnv is admintest.NewEnv (a test route that signs a browser in as
// any user) with deliveries to loopback allowed.
func pagesEnv(t *testing.T) *onairtest.Env {
	var env *onairtest.Env
	env = onairtest.New(t, onairtest.Options{Configure: configure(), Mount: func(a *fiber.App) {
		a.Get("/_test/session/:id", func(c *fiber.Ctx) error {
			m, _ := onairtest.Module[*users.Module](env)
			id, err := c.ParamsInt("id")
			if err != nil {
				return err
			}
			if _, err := m.Service.StartSession(c, int64(id)); err != nil {
				return err
			}
			return c.SendString("signed in")
		})
	}})
	return env
}

func browserOf(t *testing.T, env *onairtest.Env, u *users.User) *admintest.Client {
	c := admintest.New(t, env)
	c.Get(fmt.Sprintf("/_test/session/%d", u.ID)).Expect(t, 200)
	return c
}

// /account/webhooks: add a webhook (its secret shown once), ping it, see
// the delivery, retry it, refusals shown on the page, another user kept out.
func TestAccountWebhooksPage(t *testing.T) {
	env := pagesEnv(t)
	rcv := newReceiver(t)
	u, _ := env.CreateUser("Paula Pages")
	c := browserOf(t, env, u)
	c.Get("/account").Expect(t, 200).Contains(t, `href="/account/webhooks"`)
	c.Get("/account/webhooks").Expect(t, 200).Contains(t, "Add a webhook", "show.live", "user.followed")

	// Refusals are shown on the page, naming the problem.
	c.Post("/account/webhooks", url.Values{"url": {"ftp://x"}, "events": {"ping"}}).Expect(t, 422).Contains(t, "url must be an absolute http or https URL")
	c.Post("/account/webhooks", url.Values{"url": {rcv.URL}, "events": {"show.exploded"}}).Expect(t, 422).Contains(t, "unknown event")
	c.Post("/account/webhooks", url.Values{"url": {rcv.URL}}).Expect(t, 422).Contains(t, "events must name at least one event")

	r := c.Post("/account/webhooks", url.Values{"url": {rcv.URL}, "events": {"ping", "show.live"}, "description": {"from the page"}}).Expect(t, 200)
	r.Contains(t, "whsec_", rcv.URL, "ping, show.live", "from the page", "No deliveries yet.")
	secret := r.Body[strings.Index(r.Body, "whsec_"):]
	secret = secret[:strings.Index(secret, "<")]
	if strings.Contains(c.Get("/account/webhooks").Expect(t, 200).Body, secret) {
		t.Fatal("the secret is shown again")
	}
	id := webhookIDIn(t, c.Get("/account/webhooks").Body)

	// Ping from the page: delivered, signed with the secret shown.
	c.Post("/account/webhooks/"+id+"/ping", nil).Expect(t, 303)
	g := rcv.waitFor(1)[0]
	verify(t, secret, g)
	testload.Poll(t, "delivery listed", func() error {
		if body := c.Get("/account/webhooks").Body; !strings.Contains(body, "succeeded") || !strings.Contains(body, g.Event.ID) {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	page := c.Get("/account/webhooks").Body
	i := strings.Index(page, "/deliveries/")
	did := page[i+len("/deliveries/") : i+len("/deliveries/")+strings.Index(page[i+len("/deliveries/"):], "/")]
	c.Post("/account/webhooks/"+id+"/deliveries/"+did+"/retry", nil).Expect(t, 303)
	if again := rcv.waitFor(2)[1]; again.Event.ID != g.Event.ID {
		t.Fatalf("retry sent %s, want %s", again.Event.ID, g.Event.ID)
	}

	// Another user can neither ping nor delete it.
	other, _ := env.CreateUser("Oscar Other")
	o := browserOf(t, env, other)
	o.Get("/account/webhooks").Expect(t, 200)
	o.Post("/account/webhooks/"+id+"/ping", nil).Expect(t, 404)
	o.Post("/account/webhooks/"+id+"/delete", nil).Expect(t, 404)
	// Without the CSRF token nothing happens.
	c.PostNoCSRF("/account/webhooks/"+id+"/delete", url.Values{}).Expect(t, 403)

	c.Get("/account/webhooks")
	c.Post("/account/webhooks/"+id+"/delete", nil).Expect(t, 303)
	if strings.Contains(c.Get("/account/webhooks").Body, rcv.URL) {
		t.Fatal("deleted webhook still listed")
	}
	// An account page: signed out, a GET goes to sign in and back, a form
	// is a 401 page; another user's webhook is the HTML 404 page.
	anon := admintest.New(t, env)
	if r := anon.Get("/account/webhooks").Expect(t, 303); r.Location != "/signin?next=/account/webhooks" {
		t.Fatalf("signed out: sent to %q", r.Location)
	}
	anon.PostNoCSRF("/account/webhooks", url.Values{"url": {rcv.URL}, "events": {"ping"}}).Expect(t, 401).Contains(t, `<header class="site">`)
	o.Post("/account/webhooks/"+id+"/ping", nil).Expect(t, 404).Contains(t, "There is nothing here.")
}

func webhookIDIn(t *testing.T, body string) string {
	t.Helper()
	i := strings.Index(body, "/account/webhooks/")
	if i < 0 {
		t.Fatal("no webhook on the page")
	}
	rest := body[i+len("/account/webhooks/"):]
	return rest[:strings.Index(rest, "/")]
}
