package pages_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
)

// TestHealthStreamsCountPerClient: the studio's health event stream holds
// its connection for up to a minute. Behind a trusted proxy (whose own
// connections are not capped per address) each stream counts for the
// client the proxy forwards: ONAIR_MAX_CONNS_PER_IP streams run, the next
// is refused with 429 and Retry-After: 1, another client behind the same
// proxy is not, and a stream that ends gives its place back.
func TestHealthStreamsCountPerClient(t *testing.T) {
	t.Parallel()
	const limit = 2
	_, loopback, _ := net.ParseCIDR("127.0.0.0/8")
	env := onairtest.New(t, onairtest.Options{Configure: func(c *app.Config) {
		c.MaxConnsPerIP = limit
		c.TrustedProxies = []*net.IPNet{loopback}
	}})
	owner := newPerson(t, env, "Stream Owner")
	id := onairtest.CreateShow(t, env, owner.token, map[string]any{"name": "Health Stream"}).ID
	signed := owner.signedIn(t, env)
	// Its own transport: every stream on a connection of its own.
	client := &http.Client{Jar: signed.http.Jar, Transport: &http.Transport{}}
	open := func(from string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("GET", env.URL+path("/studio/shows/%d/health", id), nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("X-Forwarded-For", from)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode == http.StatusOK {
			// The stream runs once its first line comes.
			if line, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || !strings.HasPrefix(line, "retry:") {
				t.Fatalf("the stream began with %q (%v)", line, err)
			}
		}
		return resp
	}
	const a, b = "203.0.113.7", "198.51.100.9"
	var streams []*http.Response
	for i := range limit {
		r := open(a)
		if r.StatusCode != http.StatusOK {
			t.Fatalf("stream %d of %d from one client: %d", i+1, limit, r.StatusCode)
		}
		streams = append(streams, r)
	}
	refused := open(a)
	body := make([]byte, 64<<10)
	n, _ := refused.Body.Read(body)
	refused.Body.Close()
	if refused.StatusCode != http.StatusTooManyRequests || refused.Header.Get("Retry-After") != "1" ||
		!strings.Contains(string(body[:n]), fmt.Sprintf("at most %d connections per client address", limit)) {
		t.Fatalf("stream %d from one client: %d Retry-After %q\n%s", limit+1, refused.StatusCode, refused.Header.Get("Retry-After"), body[:n])
	}
	if other := open(b); other.StatusCode != http.StatusOK {
		t.Errorf("another client behind the proxy was refused: %d", other.StatusCode)
	} else {
		other.Body.Close()
	}
	// The server notices a stream's end at its next event (2 s).
	streams[0].Body.Close()
	testload.Poll(t, "a place for the client again", func() error {
		r := open(a)
		defer r.Body.Close()
		if r.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", r.StatusCode)
		}
		return nil
	})
	for _, r := range streams[1:] {
		r.Body.Close()
	}
}
