package webhooks_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/onair/onair/admin/admintest"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/webhooks"
)

// The console's Webhooks page lists failing and disabled webhooks to
// staff, and to nobody else.
func TestConsoleListsFailingWebhooks(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env := admintest.NewEnv(t, backend)
		_, tok := env.CreateUser("Frank Failing")
		failing, _ := createWebhook(t, env, tok, "https://failing.example.com/hook", "ping")
		disabled, _ := createWebhook(t, env, tok, "https://disabled.example.com/hook", "ping")
		createWebhook(t, env, tok, "https://healthy.example.com/hook", "ping")
		since := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
		ctx := context.Background()
		db := env.Core.DB
		if _, err := db.NewUpdate().Model((*webhooks.Webhook)(nil)).Set("failing_since = ?", since).Where("id = ?", failing).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := db.NewUpdate().Model((*webhooks.Webhook)(nil)).Set("active = ?", false).
			Set("disabled_reason = ?", "disabled at X: every delivery failed").Where("id = ?", disabled).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		for _, kind := range admintest.Roles {
			c := admintest.Visitor(t, env, kind)
			r := c.Get("/admin/webhooks")
			switch kind {
			case "admin", "moderator":
				r.Expect(t, 200).Contains(t, "failing.example.com", "disabled.example.com", "every delivery failed", since.Format("2006-01-02 15:04:05"))
				if strings.Contains(r.Body, "healthy.example.com") {
					t.Fatal("a healthy webhook is listed")
				}
			default:
				r.Refused(t, kind)
			}
		}
	})
}

// The owner sees their webhooks on /account, with why one is disabled.
func TestAccountPageShowsWebhookState(t *testing.T) {
	env := admintest.NewEnv(t, "sqlite")
	u, tok := env.CreateUser("Wanda Web")
	createWebhook(t, env, tok, "https://fine.example.com/hook", "show.live")
	bad, _ := createWebhook(t, env, tok, "https://broken.example.com/hook", "ping", "show.stopped")
	if _, err := env.Core.DB.NewUpdate().Model((*webhooks.Webhook)(nil)).Set("active = ?", false).
		Set("disabled_reason = ?", "disabled at Y: every delivery failed since Z (last: HTTP 500)").Where("id = ?", bad).Exec(context.Background()); err != nil {
		t.Fatal(err)
	}
	c := admintest.New(t, env)
	c.Get(fmt.Sprintf("/_test/session/%d", u.ID)).Expect(t, 200)
	c.Get("/account").Expect(t, 200).Contains(t, "Webhooks", "https://fine.example.com/hook", "Active",
		"https://broken.example.com/hook", "ping, show.stopped", "Disabled: disabled at Y: every delivery failed since Z (last: HTTP 500)")
	// Another user's page does not list them.
	other, _ := env.CreateUser("Otto Other")
	c2 := admintest.New(t, env)
	c2.Get(fmt.Sprintf("/_test/session/%d", other.ID)).Expect(t, 200)
	if r := c2.Get("/account").Expect(t, 200); strings.Contains(r.Body, "example.com/hook") {
		t.Fatal("another user's account lists the webhooks")
	}
}
