package users

import (
	"context"
	"io"
	"log/slog"
	"mime"
	"strings"
	"testing"

	"github.com/onair/onair/internal/mailtest"
)

// TestMailerSecurity: the reset mail reaches a real SMTP server in each
// way ONAIR_SMTP_URL can ask: smtp:// to a server without TLS, smtp://
// upgraded with STARTTLS when offered, smtps:// with TLS throughout; each
// with PLAIN credentials. A certificate the mailer does not trust and
// wrong credentials are errors, not silent sends.
func TestMailerSecurity(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tt := range []struct {
		name     string
		security mailtest.Security
		tls      bool
	}{
		{"plain", mailtest.Plain, false},
		{"starttls", mailtest.StartTLS, true},
		{"implicit tls", mailtest.Implicit, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := mailtest.Start(t, mailtest.Options{Security: tt.security, User: "onair", Password: "s3cret"})
			m, err := newMailer(srv.URL, "", "https://onair.example", log)
			if err != nil {
				t.Fatal(err)
			}
			m.tls.RootCAs = srv.Roots
			if err := m.send(context.Background(), "dj@example.com", "Réglage du mot de passe", "Hello Zoë,\nopen https://onair.example/reset/abc\n"); err != nil {
				t.Fatal(err)
			}
			msg := srv.Next()
			subject, _ := new(mime.WordDecoder).DecodeHeader(msg.Mail.Header.Get("Subject"))
			if msg.TLS != tt.tls || msg.From != "onair@onair.example" || len(msg.To) != 1 || msg.To[0] != "dj@example.com" ||
				subject != "Réglage du mot de passe" || !strings.Contains(msg.Body, "Hello Zoë,\r\nopen https://onair.example/reset/abc") {
				t.Errorf("received tls=%v from %q to %v subject %q:\n%s", msg.TLS, msg.From, msg.To, subject, msg.Body)
			}
			if tt.security == mailtest.Plain {
				return
			}
			untrusted, _ := newMailer(srv.URL, "", "https://onair.example", log)
			if err := untrusted.send(context.Background(), "dj@example.com", "x", "x"); err == nil || !strings.Contains(err.Error(), "certificate") {
				t.Errorf("a certificate nobody vouches for: %v", err)
			}
		})
	}
	t.Run("wrong password", func(t *testing.T) {
		srv := mailtest.Start(t, mailtest.Options{Security: mailtest.StartTLS, User: "onair", Password: "s3cret"})
		m, _ := newMailer(strings.Replace(srv.URL, "s3cret", "wrong", 1), "OnAir <noreply@radio.example>", "", log)
		m.tls.RootCAs = srv.Roots
		if err := m.send(context.Background(), "dj@example.com", "x", "x"); err == nil || !strings.Contains(err.Error(), "auth") {
			t.Errorf("wrong credentials: %v", err)
		}
	})
}

// TestSMTPSettings: ONAIR_SMTP_URL takes smtp:// and smtps:// with a host;
// anything else stops start-up.
func TestSMTPSettings(t *testing.T) {
	for v, ok := range map[string]bool{
		"": true, "smtp://mail.example:587": true, "smtps://u:p@mail.example": true, "smtp://127.0.0.1:2525": true,
		"http://mail.example": false, "smtp://": false, "mail.example:25": false, "smtp://mail.example/path": false,
	} {
		if _, err := parseSMTPURL(v); (err == nil) != ok {
			t.Errorf("%q: %v", v, err)
		}
	}
	for v, ok := range map[string]bool{"": true, "OnAir <onair@example.com>": true, "onair@example.com": true, "not an address": false} {
		if _, err := parseFrom(v); (err == nil) != ok {
			t.Errorf("from %q: %v", v, err)
		}
	}
}
