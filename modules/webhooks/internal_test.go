package webhooks

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

func TestPublicAddress(t *testing.T) {
	for addr, want := range map[string]bool{
		"93.184.216.34": true, "2606:2800:220:1:248:1893:25c8:1946": true, "8.8.8.8": true,
		"127.0.0.1": false, "127.1.2.3": false, "::1": false, "10.1.2.3": false, "172.16.0.1": false,
		"192.168.0.10": false, "169.254.169.254": false, "fe80::1": false, "fd00::1": false,
		"0.0.0.0": false, "::": false, "100.64.0.1": false, "224.0.0.1": false, "::ffff:127.0.0.1": false,
		"::ffff:10.0.0.1": false, "fd00:ec2::254": false, "255.255.255.255": false, "198.18.0.1": false,
	} {
		if got := PublicAddress(netip.MustParseAddr(addr)); got != want {
			t.Errorf("PublicAddress(%s) = %v, want %v", addr, got, want)
		}
	}
}

// The guard checks the address being dialled: a server on loopback is
// refused unless ONAIR_WEBHOOK_ALLOW_PRIVATE.
func TestClientRefusesPrivateAddresses(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	for _, allow := range []bool{false, true} {
		c := newClientSet(2*time.Second, allow)
		for _, u := range []string{srv.URL, strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)} {
			req, _ := http.NewRequest(http.MethodPost, u, nil)
			resp, err := c.do(context.Background(), req)
			if resp != nil {
				resp.Body.Close()
			}
			if allow && err != nil {
				t.Fatalf("allowed %s: %v", u, err)
			}
			if !allow && !errors.Is(err, errBlocked) {
				t.Fatalf("%s not refused: %v", u, err)
			}
		}
		c.close()
	}
}

func TestBackoffSchedule(t *testing.T) {
	want := []time.Duration{5 * time.Second, time.Minute, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour, 10 * time.Hour}
	for i, w := range want {
		for range 50 {
			got := Backoff(i + 1)
			if got < w*8/10 || got > w*12/10 {
				t.Fatalf("Backoff(%d) = %s, want %s ±20%%", i+1, got, w)
			}
		}
	}
	if Backoff(1) >= 10*time.Second {
		t.Fatal("first retry not within 10 s")
	}
}

// Sign agrees with the library's signer, byte for byte.
func TestSignMatchesTheLibrary(t *testing.T) {
	secret, err := newSecret()
	if err != nil {
		t.Fatal(err)
	}
	lib, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Unix(1700000000, 0)
	body := []byte(`{"id":"evt_x","type":"ping"}`)
	want, _ := lib.Sign("evt_x", ts, body)
	got, err := Sign(secret, "evt_x", ts, body)
	if err != nil || got != want {
		t.Fatalf("Sign = %q, %v; library %q", got, err, want)
	}
	if _, err := Sign("whsec_***", "evt_x", ts, body); err == nil {
		t.Fatal("a secret that is not base64 signed")
	}
}

func TestTruncate(t *testing.T) {
	s := strings.Repeat("é", 3000) // 6000 bytes
	got := truncate(s, maxResponseStore)
	if len(got) > maxResponseStore || !utf8.ValidString(got) {
		t.Fatalf("truncate: %d bytes, valid %v", len(got), utf8.ValidString(got))
	}
	if got := truncate("a\x00b\xff", 10); got != "ab\uFFFD" {
		t.Fatalf("truncate kept NUL or bad UTF-8: %q", got)
	}
}

func TestCheckURL(t *testing.T) {
	for u, ok := range map[string]bool{
		"https://example.com/x": true, "http://example.com:8080/x?y=1": true,
		"": false, "example.com": false, "ftp://example.com": false, "https://": false,
		"https://u:p@example.com": false, "https://example.com:0/": false, "javascript:alert(1)": false,
		"https://example.com:abc/": false, "mailto:a@example.com": false,
	} {
		if got := checkURL(u) == ""; got != ok {
			t.Errorf("checkURL(%q) ok = %v, want %v (%s)", u, got, ok, checkURL(u))
		}
	}
}

// FuzzCheckURL: no URL text makes the check (or the private-address rule)
// panic, and what passes is an http(s) URL without credentials.
func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{"https://example.com/x", "http://[::1]:80/", "https://a:b@c/", "http://%zz", "https://example.com:99999"} {
		f.Add(s)
	}
	m := &Module{}
	f.Fuzz(func(t *testing.T, s string) {
		if checkURL(s) != "" {
			return
		}
		_ = m.checkPrivate(s)
		if !strings.HasPrefix(s, "http://") && !strings.HasPrefix(s, "https://") {
			if !strings.HasPrefix(strings.ToLower(s), "http") {
				t.Fatalf("accepted %q", s)
			}
		}
	})
}
