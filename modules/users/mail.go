package users

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"net/smtp"
	"net/url"
	"strings"
	"time"

	"github.com/onair/onair/app"
)

// Password reset by email. With ONAIR_SMTP_URL set, "forgot password"
// (/forgot) mails a one-time reset link, the same link staff make in the
// console (suspend.go): ResetLifetime long, spent once. The answer is the
// same whether or not an account uses the address (the lookup, the link
// and the mail happen after the answer, on the mailer's worker, so its
// timing says nothing either), and a limit per address and per client
// address keeps the form from mailing anyone a flood.
//
// The mail goes through net/smtp: smtp://user:pass@host:port (587 unless
// given) upgrades with STARTTLS when the server offers it, smtps:// (465)
// speaks TLS from the start. Credentials are sent only over TLS, or to a
// server on the loopback (net/smtp's PlainAuth refuses otherwise).

// Settings of the mail.
const (
	SettingSMTPURL  = "ONAIR_SMTP_URL"
	SettingSMTPFrom = "ONAIR_SMTP_FROM"
)

// Limits of the reset mails: per address, and per client address, within
// ResetMailWindow. Past them the form answers 429.
const (
	ResetMailsPerAddress = 3
	ResetMailsPerClient  = 10
	ResetMailWindow      = time.Hour
)

// mailTimeout bounds one delivery (connect, TLS, the whole exchange).
const mailTimeout = 30 * time.Second

// mailQueue bounds the reset mails waiting for the worker; the limits keep
// it short, and a full queue drops (and logs) rather than blocks a request.
const mailQueue = 256

// parseSMTPURL checks ONAIR_SMTP_URL (empty: no mail).
func parseSMTPURL(v string) (any, error) {
	if v == "" {
		return "", nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "smtp" && u.Scheme != "smtps") || u.Hostname() == "" || (u.Path != "" && u.Path != "/") {
		return "", errors.New("must be smtp://user:pass@host:port or smtps://user:pass@host:port")
	}
	return v, nil
}

// parseFrom checks ONAIR_SMTP_FROM (empty: derived from ONAIR_PUBLIC_URL).
func parseFrom(v string) (any, error) {
	if v == "" {
		return "", nil
	}
	if _, err := mail.ParseAddress(v); err != nil {
		return "", errors.New("must be an address such as OnAir <onair@example.com>")
	}
	return v, nil
}

// mailer sends the reset mails from one worker goroutine.
type mailer struct {
	server *url.URL
	from   *mail.Address
	log    *slog.Logger
	// tls is the TLS configuration of the connections (RootCAs nil: the
	// system's roots); tests trust their own server's certificate.
	tls *tls.Config

	jobs chan func(context.Context)
}

// newMailer returns the mailer of ONAIR_SMTP_URL, nil when it is empty.
func newMailer(smtpURL, from, publicURL string, log *slog.Logger) (*mailer, error) {
	if smtpURL == "" {
		return nil, nil
	}
	u, err := url.Parse(smtpURL)
	if err != nil {
		return nil, fmt.Errorf("users: %s: %w", SettingSMTPURL, err)
	}
	if from == "" {
		host := "localhost"
		if pu, err := url.Parse(publicURL); err == nil && pu.Hostname() != "" {
			host = pu.Hostname()
		}
		from = "OnAir <onair@" + host + ">"
	}
	addr, err := mail.ParseAddress(from)
	if err != nil {
		return nil, fmt.Errorf("users: %s: %w", SettingSMTPFrom, err)
	}
	return &mailer{server: u, from: addr, log: log, tls: &tls.Config{ServerName: u.Hostname(), MinVersion: tls.VersionTLS12},
		jobs: make(chan func(context.Context), mailQueue)}, nil
}

// run is the mail worker, a Core.Go loop from Start until the module
// stops; mails still queued then are dropped (their senders ask again).
func (m *mailer) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case job := <-m.jobs:
			job(ctx)
		}
	}
}

// enqueue hands a job to the worker; false when the queue is full.
func (m *mailer) enqueue(job func(context.Context)) bool {
	select {
	case m.jobs <- job:
		return true
	default:
		return false
	}
}

// send delivers one plain-text message; headers are added to it as they
// are (names and values must be ASCII without line breaks).
func (m *mailer) send(ctx context.Context, to, subject, body string, headers ...[2]string) error {
	ctx, cancel := context.WithTimeout(ctx, mailTimeout)
	defer cancel()
	host, port := m.server.Hostname(), m.server.Port()
	implicit := m.server.Scheme == "smtps"
	if port == "" {
		port = "587"
		if implicit {
			port = "465"
		}
	}
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", net.JoinHostPort(host, port))
	if err != nil {
		return fmt.Errorf("users: mail: %w", err)
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	conn.SetDeadline(deadline)
	if implicit {
		tc := tls.Client(conn, m.tls)
		if err := tc.HandshakeContext(ctx); err != nil {
			return fmt.Errorf("users: mail: tls: %w", err)
		}
		conn = tc
	}
	c, err := smtp.NewClient(conn, host)
	if err != nil {
		return fmt.Errorf("users: mail: %w", err)
	}
	defer c.Close()
	if !implicit {
		if ok, _ := c.Extension("STARTTLS"); ok {
			if err := c.StartTLS(m.tls); err != nil {
				return fmt.Errorf("users: mail: starttls: %w", err)
			}
		}
	}
	if user := m.server.User; user != nil {
		pass, _ := user.Password()
		if err := c.Auth(smtp.PlainAuth("", user.Username(), pass, host)); err != nil {
			return fmt.Errorf("users: mail: auth: %w", err)
		}
	}
	if err := c.Mail(m.from.Address); err != nil {
		return fmt.Errorf("users: mail: from: %w", err)
	}
	if err := c.Rcpt(to); err != nil {
		return fmt.Errorf("users: mail: to: %w", err)
	}
	w, err := c.Data()
	if err != nil {
		return fmt.Errorf("users: mail: data: %w", err)
	}
	if _, err := w.Write(m.message(to, subject, body, headers...)); err != nil {
		return fmt.Errorf("users: mail: data: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("users: mail: data: %w", err)
	}
	return c.Quit()
}

// message is the RFC 5322 message: UTF-8 text, quoted-printable.
func (m *mailer) message(to, subject, body string, headers ...[2]string) []byte {
	id := make([]byte, 12)
	rand.Read(id)
	domain := m.from.Address[strings.LastIndex(m.from.Address, "@")+1:]
	var b bytes.Buffer
	fmt.Fprintf(&b, "From: %s\r\nTo: %s\r\nSubject: %s\r\nDate: %s\r\nMessage-ID: <%s@%s>\r\n",
		m.from.String(), to, mime.QEncoding.Encode("utf-8", subject), time.Now().Format(time.RFC1123Z), hex.EncodeToString(id), domain)
	for _, h := range headers {
		fmt.Fprintf(&b, "%s: %s\r\n", h[0], h[1])
	}
	b.WriteString("MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n")
	qp := quotedprintable.NewWriter(&b)
	qp.Write([]byte(strings.ReplaceAll(body, "\n", "\r\n")))
	qp.Close()
	return b.Bytes()
}

// MailsResets tells whether the service mails reset links (ONAIR_SMTP_URL
// is set); without it the forgot page sends people to staff.
func (s *Service) MailsResets() bool { return s.mail != nil }

// SendMail delivers one plain-text message through ONAIR_SMTP_URL for
// another module (the go-live mails of modules/notify), with extra
// headers (List-Unsubscribe...: ASCII, no line breaks). ErrNoMail without
// ONAIR_SMTP_URL.
func (s *Service) SendMail(ctx context.Context, to, subject, body string, headers ...[2]string) error {
	if s.mail == nil {
		return ErrNoMail
	}
	for _, h := range headers {
		if strings.ContainsAny(h[0]+h[1], "\r\n") {
			return fmt.Errorf("users: mail header %q has a line break", h[0])
		}
	}
	return s.mail.send(ctx, to, subject, body, headers...)
}

// ErrNoMail: RequestReset without ONAIR_SMTP_URL.
var ErrNoMail = app.NotFound("password reset by email")

// RequestReset is "forgot password" for an address, from a client address:
// within the limits it queues a job that, if an active account uses the
// address, issues a reset link and mails it. The answer never says
// whether one does. A malformed address is a validation error; past a
// limit, 429.
func (s *Service) RequestReset(ctx context.Context, email, client string) error {
	if s.mail == nil {
		return ErrNoMail
	}
	// Copies: both outlive the request (the limits' keys, the job), and a
	// handler's strings may be Fiber's reused buffers.
	email, client = strings.Clone(strings.ToLower(strings.TrimSpace(email))), strings.Clone(client)
	if a, err := mail.ParseAddress(email); err != nil || a.Address != email || len(email) > 254 {
		return app.Validation{"email": "is not an email address"}.Err()
	}
	for _, l := range []struct {
		t   throttle
		key string
	}{{s.resetMails, email}, {s.resetClients, client}} {
		wait, err := l.t.blocked(ctx, l.key)
		if err != nil {
			return err
		}
		if wait > 0 {
			secs := int((wait + time.Second - 1) / time.Second)
			return app.TooManyRequests(fmt.Sprintf("too many reset requests; try again in %d minutes", (secs+59)/60), secs)
		}
	}
	for _, l := range []struct {
		t   throttle
		key string
	}{{s.resetMails, email}, {s.resetClients, client}} {
		if err := l.t.fail(ctx, l.key); err != nil {
			return err
		}
	}
	if !s.mail.enqueue(func(ctx context.Context) { s.mailReset(ctx, email) }) {
		s.mail.log.Warn("users: reset mail queue full; request dropped")
	}
	return nil
}

// mailReset issues and mails the reset link of the account using email,
// if there is one (and it is not suspended).
func (s *Service) mailReset(ctx context.Context, email string) {
	u, err := s.Find(ctx, email)
	if errors.Is(err, ErrNotFound) || err == nil && u.SuspendedAt != nil {
		return
	}
	if err != nil {
		s.mail.log.Error("users: reset mail", "err", err)
		return
	}
	token, err := s.IssueReset(ctx, u.ID)
	if err != nil {
		s.mail.log.Error("users: reset mail", "user", u.ID, "err", err)
		return
	}
	body := fmt.Sprintf(`Hello %s,

Someone (we hope you) asked to reset the password of your OnAir account.
Open this link within %d hours to choose a new one; it works once:

%s/reset/%s

If you did not ask, ignore this message: your password stays as it is.
`, u.Name, int(ResetLifetime.Hours()), s.publicURL, token)
	if err := s.mail.send(ctx, u.Email, "Reset your OnAir password", body); err != nil {
		s.mail.log.Error("users: reset mail", "user", u.ID, "err", err)
		return
	}
	s.mail.log.Info("reset link mailed", "user", u.ID)
}
