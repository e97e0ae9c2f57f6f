package pages_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/mailtest"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/podcast"
	"github.com/onair/onair/modules/users"
)

// TestAccountListening: the account page shows the user's podcast feed
// and, with mail on, the account's switch of go-live mails, which the
// API reads back; the user page links the feed in its head.
func TestAccountListening(t *testing.T) {
	smtp := mailtest.Start(t, mailtest.Options{})
	env := onairtest.New(t, onairtest.Options{Configure: func(c *app.Config) { c.Set(users.SettingSMTPURL, smtp.URL) }})
	me := newPerson(t, env, "Lis Tener")
	b := me.signedIn(t, env)
	feed := podcast.FeedURL(env.URL, me.user.ID)
	acc := b.get("/account")
	if acc.status != http.StatusOK || !strings.Contains(acc.body, `href="`+feed+`"`) || !strings.Contains(acc.body, "Stop all go-live mails") {
		t.Fatalf("account page %d without the feed %s or the mail switch:\n%s", acc.status, feed, acc.body)
	}
	if r := b.post("/account/notifications", url.Values{"csrf": {b.csrf}, "go_live_mail": {"0"}}); r.status != http.StatusSeeOther {
		t.Fatalf("switch off: %d\n%s", r.status, r.body)
	}
	got := env.Do("GET", "/v1/notifications", me.token, nil).Expect(t, http.StatusOK).JSON(t)["notifications"].(map[string]any)
	if got["go_live_mail"] != false {
		t.Errorf("after the account form: %v", got)
	}
	if r := b.post("/account/notifications", url.Values{"go_live_mail": {"1"}}); r.status != http.StatusForbidden {
		t.Errorf("the switch without a CSRF token: %d", r.status)
	}
	user := b.get("/" + me.user.Slug)
	if !strings.Contains(user.body, `<link rel="alternate" type="application/rss+xml" title="Lis Tener (podcast)" href="`+feed+`">`) {
		t.Errorf("user page head does not link the feed:\n%s", user.body)
	}
}
