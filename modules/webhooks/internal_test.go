package webhooks

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
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
		// IPv4 inside IPv6: mapped, 6to4, NAT64 (both prefixes), compatible.
		"::ffff:8.8.8.8": false, "2002:7f00:1::": false, "2002:808:808::": false, "64:ff9b::7f00:1": false,
		"64:ff9b::808:808": false, "64:ff9b:1::1": false, "::127.0.0.1": false, "::8.8.8.8": false,
		// The rest of IANA's special-purpose registries.
		"192.0.0.9": false, "192.0.2.1": false, "192.31.196.1": false, "192.52.193.1": false, "192.88.99.1": false,
		"192.175.48.1": false, "198.51.100.1": false, "203.0.113.1": false, "240.0.0.1": false, "100::1": false,
		"2001::1": false, "2001:2::1": false, "2001:20::1": false, "2001:db8::1": false, "2620:4f:8000::1": false,
		"3fff::1": false, "5f00::1": false, "ff02::1": false, "fe80::1%eth0": false,
		"1.1.1.1": true, "2a00:1450:4001:80b::200e": true,
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

// TestCanonicalHost: every spelling of an IPv4 address is the address;
// what is neither an address nor a name is refused.
func TestCanonicalHost(t *testing.T) {
	for _, tc := range []struct {
		host, ip, name string
		err            error
	}{
		{"example.com", "", "example.com", nil},
		{"EXAMPLE.com.", "", "example.com", nil},
		{"bücher.example", "", "xn--bcher-kva.example", nil},
		{"127.0.0.1", "127.0.0.1", "", nil},
		{"127.0.0.1.", "127.0.0.1", "", nil},
		{"0x7f000001", "127.0.0.1", "", errOddIPv4},
		{"0X7F000001", "127.0.0.1", "", errOddIPv4},
		{"2130706433", "127.0.0.1", "", errOddIPv4},
		{"127.1", "127.0.0.1", "", errOddIPv4},
		{"127.0.1", "127.0.0.1", "", errOddIPv4},
		{"0177.0.0.1", "127.0.0.1", "", errOddIPv4},
		{"0x7f.0x0.0.01", "127.0.0.1", "", errOddIPv4},
		{"017700000001", "127.0.0.1", "", errOddIPv4},
		{"\uff11\uff12\uff17\uff0e\uff10\uff0e\uff10\uff0e\uff11", "127.0.0.1", "", nil},
		{"0x", "0.0.0.0", "", errOddIPv4},
		{"8.8.2056", "8.8.8.8", "", errOddIPv4},
		{"::1", "::1", "", nil},
		{"fe80::1%eth0", "fe80::1", "", nil},
		{"1.2.3.256", "", "", errBadHost},
		{"1.2.3.4.5", "", "", errBadHost},
		{"4294967296", "", "", errBadHost},
		{"09.1.1.1", "", "", errBadHost},
		{"a.0x10", "", "", errBadHost},
		{"example.123", "", "", errBadHost},
		{"a..b", "", "", errBadHost},
		{"", "", "", errBadHost},
		{"1:2", "", "", errBadHost},
	} {
		ip, name, err := canonicalHost(tc.host)
		gotIP := ""
		if ip.IsValid() {
			gotIP = ip.String()
		}
		if gotIP != tc.ip || name != tc.name || !errors.Is(err, tc.err) || (err == nil) != (tc.err == nil) {
			t.Errorf("canonicalHost(%q) = %q, %q, %v; want %q, %q, %v", tc.host, gotIP, name, err, tc.ip, tc.name, tc.err)
		}
	}
}

// FuzzCanonicalHost: no host panics the parser; an address it returns is
// the one Go reads from its usual spelling, and a host it reads as an
// IPv4 address in the usual spelling is that.
func FuzzCanonicalHost(f *testing.F) {
	for _, s := range []string{"example.com", "0x7f000001", "127.1", "0177.0.0.1", "2130706433", "::1", "1.2.3.4.", "\uff11.1", "0x", "a.b.0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		ip, name, err := canonicalHost(host)
		if ip.IsValid() && name != "" {
			t.Fatalf("%q: both an address %s and a name %q", host, ip, name)
		}
		if err == nil && ip.IsValid() && ip.Is4() {
			if got := strings.TrimSuffix(strings.ToLower(host), "."); isASCII(host) && got != ip.String() {
				t.Fatalf("%q accepted as %s", host, ip)
			}
		}
		if want, perr := netip.ParseAddr(host); perr == nil && want.Is4() && (err != nil || ip != want) {
			t.Fatalf("%q: %s, %v; Go reads %s", host, ip, err, want)
		}
		if err == nil && !ip.IsValid() && name == "" {
			t.Fatalf("%q: neither address nor name, and no error", host)
		}
	})
}

// describe never names the address refused or the resolver asked.
func TestDescribeHidesAddresses(t *testing.T) {
	c := newClientSet(5*time.Second, false)
	defer c.close()
	req, _ := http.NewRequest(http.MethodPost, "http://localhost:9/x", nil)
	_, err := c.do(context.Background(), req)
	if got := describe(err); got != "destination refused: private address" {
		t.Errorf("refused dial: %q", got)
	}
	dns := &net.DNSError{Err: "no such host", Name: "nowhere.invalid", Server: "10.0.0.53:53", IsNotFound: true}
	if got := describe(&url.Error{Op: "Post", URL: "http://nowhere.invalid/", Err: &net.OpError{Op: "dial", Net: "tcp", Err: dns}}); got != "dns lookup failed: no such host" {
		t.Errorf("dns error: %q", got)
	}
	refused := &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.ParseIP("10.1.2.3"), Port: 443}, Err: errors.New("connect: connection refused")}
	if got := describe(refused); strings.Contains(got, "10.1.2.3") || got != "dial: connect: connection refused" {
		t.Errorf("dial error: %q", got)
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
