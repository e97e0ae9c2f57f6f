package webhooks_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/webhooks"
)

func deliveries(t *testing.T, env *onairtest.Env, tok string, id int64) []map[string]any {
	t.Helper()
	body := env.Do("GET", fmt.Sprintf("/v1/webhooks/%d/deliveries", id), tok, nil).Expect(t, 200).JSON(t)
	var out []map[string]any
	for _, d := range body["deliveries"].([]any) {
		out = append(out, d.(map[string]any))
	}
	return out
}

// A receiver that answers 500 gets the same delivery again within 10 s,
// with the same webhook-id; the deliveries list shows both attempts; a
// manual retry sends it a third time, still with the same id.
func TestFailedDeliveryIsRetriedWithTheSameID(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env := newEnv(t, backend)
		rcv := newReceiver(t, 500)
		_, tok := env.CreateUser("Rita Retry")
		id, secret := createWebhook(t, env, tok, rcv.URL, "ping")
		ping := env.Do("POST", fmt.Sprintf("/v1/webhooks/%d/ping", id), tok, nil).Expect(t, 202).JSON(t)["delivery"].(map[string]any)
		if ping["type"] != "ping" || ping["status"] != "pending" {
			t.Fatalf("ping delivery %v", ping)
		}
		got := rcv.waitFor(2)
		if got[0].Header.Get("webhook-id") != got[1].Header.Get("webhook-id") || string(got[0].Body) != string(got[1].Body) {
			t.Fatalf("retry changed the message: %q vs %q", got[0].Header.Get("webhook-id"), got[1].Header.Get("webhook-id"))
		}
		if gap := got[1].At.Sub(got[0].At); gap > 10*time.Second || gap < 3*time.Second {
			t.Fatalf("first retry after %s, want 4-6 s", gap)
		}
		verify(t, secret, got[0])
		verify(t, secret, got[1])

		var d map[string]any
		testload.Poll(t, "delivery succeeded", func() error {
			d = deliveries(t, env, tok, id)[0]
			if d["status"] != "succeeded" {
				return fmt.Errorf("status %v", d["status"])
			}
			return nil
		})
		atts := d["attempts"].([]any)
		if d["attempt"] != float64(2) || len(atts) != 2 || d["status_code"] != float64(200) || d["next_attempt_at"] != nil || d["event_id"] != got[0].Header.Get("webhook-id") {
			t.Fatalf("delivery %v", d)
		}
		first, second := atts[0].(map[string]any), atts[1].(map[string]any)
		if first["status_code"] != float64(500) || first["error"] != "HTTP 500" || first["next_attempt_at"] == nil || !strings.Contains(first["response"].(string), "500") {
			t.Fatalf("first attempt %v", first)
		}
		if second["status_code"] != float64(200) || second["error"] != nil || second["next_attempt_at"] != nil {
			t.Fatalf("second attempt %v", second)
		}

		// A manual retry resends it, same id.
		did := onairtest.ID(d)
		env.Do("POST", fmt.Sprintf("/v1/webhooks/%d/deliveries/%d/retry", id, did), tok, nil).Expect(t, 202)
		got = rcv.waitFor(3)
		if got[2].Header.Get("webhook-id") != got[0].Header.Get("webhook-id") {
			t.Fatal("manual retry changed the webhook-id")
		}
		testload.Poll(t, "third attempt recorded", func() error {
			if n := deliveries(t, env, tok, id)[0]["attempt"]; n != float64(3) {
				return fmt.Errorf("attempt %v", n)
			}
			return nil
		})
	})
}

// A delivery that keeps failing stops at ONAIR_WEBHOOK_MAX_ATTEMPTS; a
// webhook failing for ONAIR_WEBHOOK_DISABLE_AFTER is disabled and says why
// (moved with the module's clock).
func TestWebhookDisabledAfterTheFailureWindow(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env := newEnv(t, backend, func(c *app.Config) { c.Set(webhooks.SettingMaxAttempts, 3) })
		rcv := newReceiver(t, 500, 500, 500, 500, 500, 500, 500, 500)
		_, tok := env.CreateUser("Fay Failing")
		id, _ := createWebhook(t, env, tok, rcv.URL, "ping")
		m := module(t, env)
		clock := onairtest.NewFakeClock(time.Now().UTC())
		env.Core.Clock.Set(clock.Now)

		// Attempts 1-3, the clock moved past each retry: then failed.
		env.Do("POST", fmt.Sprintf("/v1/webhooks/%d/ping", id), tok, nil).Expect(t, 202)
		for n := 1; n <= 3; n++ {
			rcv.waitFor(n)
			testload.Poll(t, "attempt recorded", func() error {
				if a := deliveries(t, env, tok, id)[0]["attempt"]; a != float64(n) {
					return fmt.Errorf("attempt %v", a)
				}
				return nil
			})
			clock.Add(2 * time.Minute) // past the first two retry delays (5 s, 1 min, ±20 %)
			m.Wake()
		}
		d := deliveries(t, env, tok, id)[0]
		if d["status"] != "failed" || d["next_attempt_at"] != nil {
			t.Fatalf("after max attempts: %v", d)
		}
		w := env.Do("GET", fmt.Sprintf("/v1/webhooks/%d", id), tok, nil).Expect(t, 200).JSON(t)["webhook"].(map[string]any)
		if w["active"] != true || w["failing_since"] == nil {
			t.Fatalf("webhook after failures %v", w)
		}

		// Three days later, still failing: disabled.
		clock.Add(72 * time.Hour)
		env.Do("POST", fmt.Sprintf("/v1/webhooks/%d/ping", id), tok, nil).Expect(t, 202)
		testload.Poll(t, "webhook disabled", func() error {
			w = env.Do("GET", fmt.Sprintf("/v1/webhooks/%d", id), tok, nil).Expect(t, 200).JSON(t)["webhook"].(map[string]any)
			if w["active"] != false {
				return fmt.Errorf("active %v", w["active"])
			}
			return nil
		})
		if r, _ := w["disabled_reason"].(string); !strings.Contains(r, "HTTP 500") {
			t.Fatalf("disabled_reason %q", r)
		}
		n := len(rcv.all())
		env.Do("POST", fmt.Sprintf("/v1/webhooks/%d/ping", id), tok, nil).Expect(t, 409)

		// Enabled again by its owner: failures forgotten, pings flow.
		w = env.Do("PUT", fmt.Sprintf("/v1/webhooks/%d", id), tok, map[string]any{"active": true}).Expect(t, 200).JSON(t)["webhook"].(map[string]any)
		if w["disabled_reason"] != nil || w["failing_since"] != nil {
			t.Fatalf("re-enabled %v", w)
		}
		env.Do("POST", fmt.Sprintf("/v1/webhooks/%d/ping", id), tok, nil).Expect(t, 202)
		rcv.waitFor(n + 1)
	})
}

// After a rotation both secrets sign for 24 hours: a receiver still on the
// old secret and one on the new both verify; after the 24 hours only the
// new one does.
func TestRotationSignsWithBothSecrets(t *testing.T) {
	env := newEnv(t, "sqlite")
	rcv := newReceiver(t)
	_, tok := env.CreateUser("Rob Rotate")
	id, old := createWebhook(t, env, tok, rcv.URL, "ping")
	w := env.Do("POST", fmt.Sprintf("/v1/webhooks/%d/secret", id), tok, nil).Expect(t, 200).JSON(t)["webhook"].(map[string]any)
	fresh := w["secret"].(string)
	if fresh == old || !strings.HasPrefix(fresh, "whsec_") {
		t.Fatalf("new secret %q", fresh)
	}
	env.Do("POST", fmt.Sprintf("/v1/webhooks/%d/ping", id), tok, nil).Expect(t, 202)
	g := rcv.waitFor(1)[0]
	if sigs := strings.Fields(g.Header.Get("webhook-signature")); len(sigs) != 2 {
		t.Fatalf("signatures %q, want two", g.Header.Get("webhook-signature"))
	}
	verify(t, old, g)
	verify(t, fresh, g)

	clock := onairtest.NewFakeClock(time.Now().UTC().Add(24*time.Hour + time.Minute))
	env.Core.Clock.Set(clock.Now)
	env.Do("POST", fmt.Sprintf("/v1/webhooks/%d/ping", id), tok, nil).Expect(t, 202)
	g = rcv.waitFor(2)[1]
	if sigs := strings.Fields(g.Header.Get("webhook-signature")); len(sigs) != 1 {
		t.Fatalf("signatures a day later %q, want one", g.Header.Get("webhook-signature"))
	}
	wh, _ := standardwebhooks.NewWebhook(old)
	if err := wh.VerifyIgnoringTimestamp(g.Body, g.Header); !errors.Is(err, standardwebhooks.ErrNoMatchingSignature) {
		t.Fatalf("the old secret still verifies a day later: %v", err)
	}
	wh, _ = standardwebhooks.NewWebhook(fresh)
	if err := wh.VerifyIgnoringTimestamp(g.Body, g.Header); err != nil {
		t.Fatal(err)
	}
}

// Redirects are not followed, a slow receiver times out
// (ONAIR_WEBHOOK_TIMEOUT), and a large response is kept truncated: each
// is a failed attempt, recorded with why.
func TestRedirectsTimeoutsAndLargeResponses(t *testing.T) {
	env := newEnv(t, "sqlite", func(c *app.Config) { c.Set(webhooks.SettingTimeout, 300*time.Millisecond) })
	var mu sync.Mutex
	followed := false
	mux := http.NewServeMux()
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/target", http.StatusFound)
	})
	mux.HandleFunc("/target", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		followed = true
		mu.Unlock()
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	mux.HandleFunc("/large", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		_, _ = w.Write([]byte(strings.Repeat("x", 200<<10)))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	_, tok := env.CreateUser("Rex Redirect")
	for path, want := range map[string]string{
		"/redirect": "HTTP 302 (redirects are not followed)",
		"/slow":     "timed out",
		"/large":    "HTTP 502",
	} {
		id, _ := createWebhook(t, env, tok, srv.URL+path, "ping")
		env.Do("POST", fmt.Sprintf("/v1/webhooks/%d/ping", id), tok, nil).Expect(t, 202)
		var att map[string]any
		testload.Poll(t, path+" attempt", func() error {
			d := deliveries(t, env, tok, id)[0]
			if a := d["attempts"].([]any); len(a) > 0 {
				att = a[0].(map[string]any)
				return nil
			}
			return fmt.Errorf("no attempt yet")
		})
		if att["error"] != want || att["next_attempt_at"] == nil {
			t.Fatalf("%s: attempt %v, want error %q and a retry", path, att, want)
		}
		if path == "/large" && len(att["response"].(string)) != 4096 {
			t.Fatalf("stored response of %d bytes, want 4096", len(att["response"].(string)))
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if followed {
		t.Fatal("a redirect was followed")
	}
}

// Deliveries older than ONAIR_WEBHOOK_RETENTION go, with their attempts,
// unless they are still pending.
func TestPurgeKeepsPendingDeliveries(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env := newEnv(t, backend)
		rcv := newReceiver(t)
		_, tok := env.CreateUser("Pete Purge")
		id, _ := createWebhook(t, env, tok, rcv.URL, "ping")
		env.Do("POST", fmt.Sprintf("/v1/webhooks/%d/ping", id), tok, nil).Expect(t, 202)
		testload.Poll(t, "ping delivered", func() error {
			if s := deliveries(t, env, tok, id)[0]["status"]; s != "succeeded" {
				return fmt.Errorf("status %v", s)
			}
			return nil
		})
		m := module(t, env)
		m.Stop(context.Background()) // no worker: the next ping stays pending
		env.Do("POST", fmt.Sprintf("/v1/webhooks/%d/ping", id), tok, nil).Expect(t, 202)
		if n, err := m.Purge(context.Background()); err != nil || n != 0 {
			t.Fatalf("purge of fresh deliveries: %d, %v", n, err)
		}
		clock := onairtest.NewFakeClock(time.Now().UTC().Add(721 * time.Hour))
		env.Core.Clock.Set(clock.Now)
		if n, err := m.Purge(context.Background()); err != nil || n != 1 {
			t.Fatalf("purge a month later: %d, %v; want 1", n, err)
		}
		left := deliveries(t, env, tok, id)
		if len(left) != 1 || left[0]["status"] != "pending" {
			t.Fatalf("left %v", left)
		}
		n, err := env.Core.DB.NewSelect().Model((*webhooks.Attempt)(nil)).Count(context.Background())
		if err != nil || n != 0 {
			t.Fatalf("attempts left %d, %v", n, err)
		}
	})
}
