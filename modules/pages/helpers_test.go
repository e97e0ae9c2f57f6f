package pages_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/shows"
	"github.com/onair/onair/modules/users"
)

// browserless is a visitor of the pages without a browser: a cookie jar
// and no redirect following, so tests see every 303.
type browserless struct {
	t    *testing.T
	env  *onairtest.Env
	http *http.Client
	csrf string // the session's form token once signed in
}

func newVisitor(t *testing.T, env *onairtest.Env) *browserless {
	jar, _ := cookiejar.New(nil)
	return &browserless{t: t, env: env, http: &http.Client{
		Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

type page struct {
	status int
	header http.Header
	body   string
}

func (b *browserless) do(method, path string, form url.Values, header map[string]string) page {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.env.URL+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := b.http.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return page{status: resp.StatusCode, header: resp.Header, body: string(data)}
}

func (b *browserless) get(path string) page { b.t.Helper(); return b.do("GET", path, nil, nil) }

func (b *browserless) post(path string, form url.Values) page {
	b.t.Helper()
	return b.do("POST", path, form, nil)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([0-9a-f]{64})"`)

// formCSRF reads the form token out of a page.
func formCSRF(t *testing.T, p page) string {
	t.Helper()
	m := csrfField.FindStringSubmatch(p.body)
	if m == nil {
		t.Fatalf("no csrf field in the page (%d):\n%s", p.status, p.body)
	}
	return m[1]
}

// signIn signs the visitor in through the sign-in form.
func (b *browserless) signIn(email, password string) {
	b.t.Helper()
	form := b.get("/signin")
	r := b.post("/signin", url.Values{"csrf": {formCSRF(b.t, form)}, "email": {email}, "password": {password}})
	if r.status != http.StatusSeeOther {
		b.t.Fatalf("sign in: %d\n%s", r.status, r.body)
	}
	b.csrf = formCSRF(b.t, b.get("/account"))
}

// person is a user with a password and an API token.
type person struct {
	user     *users.User
	token    string
	password string
}

func newPerson(t *testing.T, env *onairtest.Env, name string, opts ...onairtest.UserOption) person {
	t.Helper()
	pw := "secret-" + strings.ToLower(strings.ReplaceAll(name, " ", "-"))
	u, token := env.CreateUser(name, append(opts, onairtest.Password(pw))...)
	return person{user: u, token: token, password: pw}
}

// signedIn returns a visitor signed in as p.
func (p person) signedIn(t *testing.T, env *onairtest.Env) *browserless {
	b := newVisitor(t, env)
	b.signIn(p.user.Email, p.password)
	return b
}

func showService(env *onairtest.Env) *shows.Service { return shows.From(env.Core) }

func takeOff(t *testing.T, env *onairtest.Env, id int64) {
	t.Helper()
	if _, err := showService(env).SetOff(context.Background(), id, true, nil); err != nil {
		t.Fatalf("take show %d off: %v", id, err)
	}
}

func path(format string, args ...any) string { return fmt.Sprintf(format, args...) }
