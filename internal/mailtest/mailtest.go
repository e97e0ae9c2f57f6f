// Package mailtest runs a real SMTP server for tests (emersion/go-smtp) on
// 127.0.0.1: it takes every message, optionally after STARTTLS or over
// TLS from the start, with PLAIN authentication, and hands the messages
// to the test.
package mailtest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/onair/onair/internal/testload"
)

// Security is how the server speaks TLS.
type Security int

const (
	Plain    Security = iota // no TLS offered (smtp://)
	StartTLS                 // STARTTLS offered (smtp://)
	Implicit                 // TLS from the first byte (smtps://)
)

// Options of a server.
type Options struct {
	Security Security
	// User and Password, when set, are required (AUTH PLAIN) before MAIL.
	User, Password string
}

// Message is one message the server took.
type Message struct {
	From string
	To   []string
	TLS  bool // it came over TLS
	Mail *mail.Message
	Body string // the decoded body (quoted-printable undone)
}

// Server is a running SMTP server.
type Server struct {
	URL      string         // smtp://user:pass@127.0.0.1:port or smtps://…
	Roots    *x509.CertPool // trusts the server's certificate
	messages chan Message
	t        testing.TB
}

// Start runs a server until the test ends.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	s := &Server{messages: make(chan Message, 100), t: t}
	cert, roots := certificate(t)
	s.Roots = roots
	srv := smtp.NewServer(backend{s, opts})
	srv.Domain = "127.0.0.1"
	srv.ReadTimeout, srv.WriteTimeout = testload.Patience, testload.Patience
	srv.AllowInsecureAuth = opts.Security == Plain
	tlsConfig := &tls.Config{Certificates: []tls.Certificate{cert}}
	if opts.Security == StartTLS {
		srv.TLSConfig = tlsConfig
	}
	var ln net.Listener
	var err error
	scheme := "smtp"
	if opts.Security == Implicit {
		ln, err = tls.Listen("tcp", "127.0.0.1:0", tlsConfig)
		scheme = "smtps"
	} else {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
	}
	if err != nil {
		t.Fatalf("mailtest: listen: %v", err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	user := ""
	if opts.User != "" {
		user = opts.User + ":" + opts.Password + "@"
	}
	s.URL = scheme + "://" + user + ln.Addr().String()
	return s
}

// Next waits for the next message (testload.Patience bounds a hang).
func (s *Server) Next() Message {
	s.t.Helper()
	select {
	case m := <-s.messages:
		return m
	case <-time.After(testload.Patience):
		s.t.Fatalf("mailtest: no message within %s", testload.Patience)
		return Message{}
	}
}

// certificate is a self-signed certificate for 127.0.0.1 and a pool that
// trusts it.
func certificate(t testing.TB) (tls.Certificate, *x509.CertPool) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mailtest"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

type backend struct {
	s    *Server
	opts Options
}

func (b backend) NewSession(c *smtp.Conn) (smtp.Session, error) {
	return &session{s: b.s, opts: b.opts, conn: c}, nil
}

type session struct {
	s      *Server
	opts   Options
	conn   *smtp.Conn
	authed bool
	msg    Message
}

var errAuth = &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8}, Message: "bad credentials"}

func (s *session) AuthMechanisms() []string { return []string{sasl.Plain} }

func (s *session) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != s.opts.User || pass != s.opts.Password {
			return errAuth
		}
		s.authed = true
		return nil
	}), nil
}

func (s *session) Mail(from string, _ *smtp.MailOptions) error {
	if s.opts.User != "" && !s.authed {
		return smtp.ErrAuthRequired
	}
	s.msg = Message{From: from}
	return nil
}

func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.msg.To = append(s.msg.To, to)
	return nil
}

func (s *session) Data(r io.Reader) error {
	m, err := mail.ReadMessage(r)
	if err != nil {
		return err
	}
	body, err := io.ReadAll(m.Body)
	if err != nil {
		return err
	}
	if strings.EqualFold(m.Header.Get("Content-Transfer-Encoding"), "quoted-printable") {
		if body, err = io.ReadAll(quotedPrintable(body)); err != nil {
			return err
		}
	}
	_, s.msg.TLS = s.conn.TLSConnectionState()
	s.msg.Mail, s.msg.Body = m, string(body)
	select {
	case s.s.messages <- s.msg:
		return nil
	default:
		return errors.New("mailtest: too many messages not read")
	}
}

func (s *session) Reset()        { s.msg = Message{} }
func (s *session) Logout() error { return nil }

func quotedPrintable(b []byte) io.Reader { return quotedprintable.NewReader(bytes.NewReader(b)) }

// Waiting returns the messages the server has taken and the test has not
// read yet, without waiting for more.
func (s *Server) Waiting() []Message {
	var out []Message
	for {
		select {
		case m := <-s.messages:
			out = append(out, m)
		default:
			return out
		}
	}
}
