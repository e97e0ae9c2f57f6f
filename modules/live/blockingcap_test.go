package live_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/live"
)

// TestBlockingReloadsCountPerClient: an LL-HLS blocking playlist reload
// holds its connection for up to three target durations. Behind a trusted
// proxy (whose own connections are not capped per address) each held
// reload counts for the client the proxy forwards: ONAIR_MAX_CONNS_PER_IP
// of them wait, the next is refused at once with 429 too_many_connections
// and Retry-After: 1, while a plain playlist request of that client (not
// held) and a held reload of another client go through; once the held
// reloads are answered, the client may hold again.
func TestBlockingReloadsCountPerClient(t *testing.T) {
	const limit = 2
	_, loopback, _ := net.ParseCIDR("127.0.0.0/8")
	env := onairtest.New(t, onairtest.Options{Configure: func(c *app.Config) {
		c.MaxConnsPerIP = limit
		c.TrustedProxies = []*net.IPNet{loopback}
	}})
	mod, ok := onairtest.Module[*live.Module](env)
	if !ok {
		t.Fatal("no live module")
	}
	_, token := env.CreateUser("Blocking Host")
	r := env.Do("POST", "/v1/shows", token, map[string]any{"name": "Held Reloads", "description": "ll-hls"}).Expect(t, http.StatusCreated)
	id := onairtest.ID(r.JSON(t)["show"].(map[string]any))
	mod.OpenLive(id)

	client := &http.Client{Transport: &http.Transport{}}
	get := func(from, query string) *http.Response {
		req, _ := http.NewRequest("GET", fmt.Sprintf("%s/media/shows/%d/index.m3u8%s", env.URL, id, query), nil)
		req.Header.Set("X-Forwarded-For", from)
		resp, err := client.Do(req)
		if err != nil {
			t.Error(err)
			return nil
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	const a, b = "203.0.113.7", "198.51.100.9"
	const blocking = "?_HLS_msn=5"
	// A held reload waits 6 s at most: a round whose held reloads were
	// answered before the one over the cap was asked proves nothing, and
	// is run again.
	for round := 1; ; round++ {
		var answered atomic.Int32
		held := make(chan int, limit)
		for range limit {
			go func() {
				resp := get(a, blocking)
				answered.Add(1)
				if resp != nil {
					held <- resp.StatusCode
				} else {
					held <- 0
				}
			}()
		}
		testload.Poll(t, fmt.Sprintf("%d held reloads", limit), func() error {
			if n := mod.Blocking(); n != limit {
				return fmt.Errorf("%d held", n)
			}
			return nil
		})
		req, _ := http.NewRequest("GET", fmt.Sprintf("%s/media/shows/%d/index.m3u8%s", env.URL, id, blocking), nil)
		req.Header.Set("X-Forwarded-For", a)
		over, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Error struct {
				Status int    `json:"status"`
				Code   string `json:"code"`
			} `json:"error"`
		}
		json.NewDecoder(over.Body).Decode(&body)
		over.Body.Close()
		if over.StatusCode != http.StatusTooManyRequests {
			if answered.Load() > 0 && round < 5 {
				t.Logf("round %d: a held reload was answered before the one over the cap was asked; again", round)
				for range limit {
					<-held
				}
				continue
			}
			t.Fatalf("reload %d of one client: %d, want 429", limit+1, over.StatusCode)
		}
		if body.Error.Code != "too_many_connections" || body.Error.Status != http.StatusTooManyRequests || over.Header.Get("Retry-After") != "1" {
			t.Errorf("the refusal: %+v, Retry-After %q", body, over.Header.Get("Retry-After"))
		}
		// Not held, not counted: the client's plain playlist request.
		if plain := get(a, ""); plain == nil || plain.StatusCode == http.StatusTooManyRequests {
			t.Errorf("a plain playlist request of the client at its cap was refused")
		}
		// Another client behind the same proxy is held, not refused.
		if other := get(b, blocking); other == nil || other.StatusCode == http.StatusTooManyRequests {
			t.Errorf("another client's held reload was refused")
		}
		for range limit {
			if code := <-held; code != http.StatusServiceUnavailable {
				t.Errorf("a held reload was answered %d, want 503 (nothing came within three target durations)", code)
			}
		}
		break
	}
	// The held reloads were answered: the client may hold again.
	done := make(chan *http.Response, 1)
	go func() { done <- get(a, blocking) }()
	if resp := <-done; resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("the client's reload after its held ones ended: %v, want held, then 503", resp)
	}
}
