package pages_test

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/mailtest"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/users"
)

var resetLink = regexp.MustCompile(`(http://127\.0\.0\.1:\d+)(/reset/[0-9a-f]{64})`)

// TestForgotPassword: with ONAIR_SMTP_URL, "forgot password" (linked from
// the sign-in page) mails a one-time link to a real SMTP server; the link
// sets a new password through the form, once. An unknown address gets the
// same answer and no mail; a malformed one an error beside the field; past
// the limit per address or per client address, 429 with Retry-After.
func TestForgotPassword(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		smtp := mailtest.Start(t, mailtest.Options{User: "onair", Password: "mail-secret"})
		env := onairtest.New(t, onairtest.Options{Backend: backend, Configure: func(c *app.Config) {
			c.Set(users.SettingSMTPURL, smtp.URL)
			_, loopback, _ := net.ParseCIDR("127.0.0.0/8")
			c.TrustedProxies = []*net.IPNet{loopback}
		}})
		dj := newPerson(t, env, "Forgetful DJ")
		other := newPerson(t, env, "Other DJ")
		b := newVisitor(t, env)
		if p := b.get("/signin"); !strings.Contains(p.body, `href="/forgot"`) {
			t.Fatalf("the sign-in page does not link /forgot:\n%s", p.body)
		}
		ask := func(email, client string) page {
			t.Helper()
			form := b.get("/forgot")
			return b.do("POST", "/forgot", url.Values{"csrf": {formCSRF(t, form)}, "email": {email}},
				map[string]string{"X-Forwarded-For": client})
		}
		sent := func(p page) string {
			t.Helper()
			if p.status != http.StatusOK || !strings.Contains(p.body, `id="sent"`) {
				t.Fatalf("answer %d:\n%s", p.status, p.body)
			}
			return p.body
		}

		// Unknown address first, then a known one: the worker sends in
		// order, so the first mail being the known one's proves the
		// unknown address got none. Both answers read the same.
		unknown := sent(ask("nobody@example.com", "10.1.0.1"))
		known := sent(ask(strings.ToUpper(other.user.Email), "10.1.0.2"))
		strip := func(s, email string) string { return strings.ReplaceAll(s, email, "") }
		if strip(unknown, "nobody@example.com") != strip(known, strings.ToUpper(other.user.Email)) {
			t.Errorf("the answers differ for a known and an unknown address")
		}
		if m := smtp.Next(); len(m.To) != 1 || m.To[0] != other.user.Email {
			t.Fatalf("first mail to %v, want %s", m.To, other.user.Email)
		}

		sent(ask(dj.user.Email, "10.1.0.3"))
		m := smtp.Next()
		if m.To[0] != dj.user.Email || m.Mail.Header.Get("Subject") != "Reset your OnAir password" || !strings.Contains(m.Body, "Hello Forgetful DJ") {
			t.Fatalf("mail to %v %q:\n%s", m.To, m.Mail.Header.Get("Subject"), m.Body)
		}
		link := resetLink.FindStringSubmatch(m.Body)
		if link == nil || link[1] != env.URL {
			t.Fatalf("no reset link on %s in:\n%s", env.URL, m.Body)
		}
		form := b.get(link[2])
		if form.status != http.StatusOK || !strings.Contains(form.body, "Forgetful DJ") {
			t.Fatalf("reset form %d:\n%s", form.status, form.body)
		}
		done := b.post(link[2], url.Values{"csrf": {formCSRF(t, form)}, "password": {"a brand new secret"}, "password_confirm": {"a brand new secret"}})
		if done.status != http.StatusSeeOther || done.header.Get("Location") != "/account/profile?password=changed" {
			t.Fatalf("reset: %d %v\n%s", done.status, done.header, done.body)
		}
		if again := b.get(link[2]); again.status != http.StatusNotFound {
			t.Errorf("the link works twice: %d", again.status)
		}
		if p := b.get("/forgot"); p.status != http.StatusSeeOther || p.header.Get("Location") != "/account/profile" {
			t.Errorf("forgot, signed in: %d %v", p.status, p.header)
		}
		newVisitor(t, env).signIn(dj.user.Email, "a brand new secret")
		b = newVisitor(t, env)

		if p := ask("not an address", "10.1.0.4"); p.status != http.StatusUnprocessableEntity || !strings.Contains(p.body, "is not an email address") {
			t.Errorf("malformed address: %d\n%s", p.status, p.body)
		}

		// The limit per address: from different clients.
		for i := 0; i < users.ResetMailsPerAddress; i++ {
			sent(ask("target@example.com", fmt.Sprintf("10.2.0.%d", i+1)))
		}
		if p := ask("target@example.com", "10.2.0.99"); p.status != http.StatusTooManyRequests || p.header.Get("Retry-After") == "" {
			t.Errorf("past the limit per address: %d %v", p.status, p.header)
		}
		// The limit per client address: different addresses.
		for i := 0; i < users.ResetMailsPerClient; i++ {
			sent(ask(fmt.Sprintf("someone%d@example.com", i), "10.3.0.1"))
		}
		if p := ask("someone-else@example.com", "10.3.0.1"); p.status != http.StatusTooManyRequests || p.header.Get("Retry-After") == "" {
			t.Errorf("past the limit per client: %d %v", p.status, p.header)
		}
		sent(ask("someone-else@example.com", "10.3.0.2")) // another client still may
	})
}

// TestForgotPasswordWithoutMail: without ONAIR_SMTP_URL the page says to
// ask staff, and has no form; a post anyway is a 404.
func TestForgotPasswordWithoutMail(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{})
	b := newVisitor(t, env)
	p := b.get("/forgot")
	if p.status != http.StatusOK || !strings.Contains(p.body, `id="ask-staff"`) || strings.Contains(p.body, `name="email"`) {
		t.Fatalf("forgot without mail: %d\n%s", p.status, p.body)
	}
	form := b.get("/signin")
	if r := b.post("/forgot", url.Values{"csrf": {formCSRF(t, form)}, "email": {"dj@example.com"}}); r.status != http.StatusNotFound {
		t.Errorf("post without mail: %d", r.status)
	}
}
