package pages_test

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/users"
)

// trustLoopback lets the tests name a client with X-Forwarded-For.
func trustLoopback(c *app.Config) {
	_, loopback, _ := net.ParseCIDR("127.0.0.0/8")
	c.TrustedProxies = []*net.IPNet{loopback}
}

// signUpAs posts the sign-up form from client (an X-Forwarded-For address).
func signUpAs(t *testing.T, env *onairtest.Env, client, email string) page {
	t.Helper()
	b := newVisitor(t, env)
	form := b.do("GET", "/signup", nil, map[string]string{"X-Forwarded-For": client})
	return b.do("POST", "/signup", url.Values{"csrf": {formCSRF(t, form)}, "name": {"Prober"}, "email": {email}, "password": {"long enough"}},
		map[string]string{"X-Forwarded-For": client})
}

// TestSignUpThrottle: one client address probing which addresses have an
// account ("already registered") gets ONAIR_SIGNUP_LIMIT answers an hour,
// then 429 with Retry-After and nothing created; another client address
// still signs up.
func TestSignUpThrottle(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{Configure: trustLoopback})
	taken := newPerson(t, env, "Taken Address")
	var statuses []int
	for i := 0; i < 40; i++ {
		p := signUpAs(t, env, "10.9.0.1", taken.user.Email)
		statuses = append(statuses, p.status)
		switch {
		case i < users.DefaultSignupLimit && (p.status != http.StatusUnprocessableEntity || !strings.Contains(p.body, "already registered")):
			t.Fatalf("attempt %d: %d, want 422 already registered\n%s", i+1, p.status, p.body)
		case i >= users.DefaultSignupLimit && p.status != http.StatusTooManyRequests:
			t.Fatalf("attempt %d: %d, want 429 (statuses %v)", i+1, p.status, statuses)
		case i >= users.DefaultSignupLimit:
			if secs, err := strconv.Atoi(p.header.Get("Retry-After")); err != nil || secs <= 0 || secs > int(users.SignupWindow/time.Second) {
				t.Fatalf("attempt %d: Retry-After %q", i+1, p.header.Get("Retry-After"))
			}
			if strings.Contains(p.body, "already registered") {
				t.Fatalf("attempt %d: the throttled answer still says whether the address is taken", i+1)
			}
		}
	}
	// Throttled, a new address is not created either.
	if p := signUpAs(t, env, "10.9.0.1", "fresh@example.com"); p.status != http.StatusTooManyRequests {
		t.Errorf("a new address from the throttled client: %d", p.status)
	}
	if p := signUpAs(t, env, "10.9.0.2", "fresh@example.com"); p.status != http.StatusSeeOther {
		t.Errorf("another client: %d\n%s", p.status, p.body)
	}
}

// TestSignUpThrottleSetting: ONAIR_SIGNUP_LIMIT sets the budget.
func TestSignUpThrottleSetting(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{Configure: func(c *app.Config) {
		trustLoopback(c)
		c.Set(users.SettingSignupLimit, 2)
	}})
	for i, want := range []int{http.StatusSeeOther, http.StatusSeeOther, http.StatusTooManyRequests} {
		if p := signUpAs(t, env, "10.9.1.1", fmt.Sprintf("new%d@example.com", i)); p.status != want {
			t.Fatalf("sign-up %d: %d, want %d", i+1, p.status, want)
		}
	}
}

// TestSignUpThrottleSharedAcrossNodes: with Redis, as for sign-ins, two
// nodes share one client address's budget.
func TestSignUpThrottleSharedAcrossNodes(t *testing.T) {
	if os.Getenv(onairtest.MySQLEnv) == "" || os.Getenv(onairtest.RedisEnv) == "" {
		testload.Skip(t, "needs %s and %s (the README's test command sets both)", onairtest.MySQLEnv, onairtest.RedisEnv)
	}
	db := onairtest.FreshMySQL(t)
	prefix := fmt.Sprintf("onairtest:%d:", time.Now().UnixNano())
	a := onairtest.New(t, onairtest.Options{DatabaseURL: db, Redis: true, RedisPrefix: prefix, Configure: trustLoopback})
	b := onairtest.New(t, onairtest.Options{DatabaseURL: db, Redis: true, RedisPrefix: prefix, Configure: trustLoopback})
	taken := newPerson(t, a, "Shared Taken")
	for i := 0; i < users.DefaultSignupLimit; i++ {
		node := []*onairtest.Env{a, b}[i%2]
		if p := signUpAs(t, node, "10.9.2.1", taken.user.Email); p.status != http.StatusUnprocessableEntity {
			t.Fatalf("attempt %d: %d, want 422", i+1, p.status)
		}
	}
	for name, node := range map[string]*onairtest.Env{"a": a, "b": b} {
		if p := signUpAs(t, node, "10.9.2.1", taken.user.Email); p.status != http.StatusTooManyRequests {
			t.Errorf("node %s after the shared budget: %d, want 429", name, p.status)
		}
	}
}

// TestResetPageSendsNoReferrer: a reset link's page keeps its own
// Referrer-Policy (the link is a secret; no request from the page may
// carry it), while other pages keep the default.
func TestResetPageSendsNoReferrer(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{})
	dj := newPerson(t, env, "Reset Referrer")
	svc, _ := onairtest.Module[*users.Module](env)
	token, err := svc.Service.IssueReset(t.Context(), dj.user.ID)
	if err != nil {
		t.Fatal(err)
	}
	b := newVisitor(t, env)
	form := b.get("/reset/" + token)
	if form.status != http.StatusOK || form.header.Get("Referrer-Policy") != "no-referrer" {
		t.Fatalf("GET the reset page: %d, Referrer-Policy %q", form.status, form.header.Get("Referrer-Policy"))
	}
	p := b.post("/reset/"+token, url.Values{"csrf": {formCSRF(t, form)}, "password": {"one new secret"}, "password_confirm": {"another"}})
	if p.status != http.StatusUnprocessableEntity || p.header.Get("Referrer-Policy") != "no-referrer" {
		t.Errorf("the reset form with an error: %d, Referrer-Policy %q", p.status, p.header.Get("Referrer-Policy"))
	}
	if p := b.get("/signin"); p.header.Get("Referrer-Policy") != "strict-origin-when-cross-origin" {
		t.Errorf("sign-in page: Referrer-Policy %q", p.header.Get("Referrer-Policy"))
	}
}
