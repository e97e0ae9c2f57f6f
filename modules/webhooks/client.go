package webhooks

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// errBlocked is an address the private-address guard refuses.
var errBlocked = errors.New("address not allowed")

// refusedPrivate is what a delivery to a refused address records: neither
// the address a name resolved to nor the resolver is told, since both are
// facts about the inside of the network the owner should not learn.
const refusedPrivate = "destination refused: private address"

// blockedErr is a dial the guard refused.
type blockedErr struct{}

func (*blockedErr) Error() string { return refusedPrivate }
func (*blockedErr) Unwrap() error { return errBlocked }

// special are the blocks of IANA's IPv4 and IPv6 Special-Purpose Address
// Registries (RFC 6890 and its updates, as of 2024) that net/netip's
// predicates do not already cover, all refused, globally reachable or not:
// no webhook receiver lives in them, and several (6to4, NAT64, Teredo)
// carry an IPv4 address that a relay or translator would reach. IPv6
// outside 2000::/3, the global unicast space (so ::/128, ::1, the
// IPv4-mapped ::ffff:0:0/96, 64:ff9b::/96, 64:ff9b:1::/48, 100::/64,
// 5f00::/16, fc00::/7, fe80::/10, ff00::/8), is refused as a whole.
var special = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),         // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),     // shared address space (CGN)
	netip.MustParsePrefix("192.0.0.0/24"),      // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),      // documentation (TEST-NET-1)
	netip.MustParsePrefix("192.31.196.0/24"),   // AS112-v4
	netip.MustParsePrefix("192.52.193.0/24"),   // AMT
	netip.MustParsePrefix("192.88.99.0/24"),    // deprecated 6to4 relay anycast
	netip.MustParsePrefix("192.175.48.0/24"),   // direct delegation AS112
	netip.MustParsePrefix("198.18.0.0/15"),     // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"),   // documentation (TEST-NET-2)
	netip.MustParsePrefix("203.0.113.0/24"),    // documentation (TEST-NET-3)
	netip.MustParsePrefix("240.0.0.0/4"),       // reserved, and the broadcast address
	netip.MustParsePrefix("2001::/23"),         // IETF protocol assignments (Teredo, ORCHID, benchmarking)
	netip.MustParsePrefix("2001:db8::/32"),     // documentation
	netip.MustParsePrefix("2002::/16"),         // 6to4, whatever IPv4 address it embeds
	netip.MustParsePrefix("2620:4f:8000::/48"), // direct delegation AS112
	netip.MustParsePrefix("3fff::/20"),         // documentation
	netip.MustParsePrefix("fd00:ec2::254/128"), // a cloud's metadata service (also in fc00::/7)
}

// globalUnicast6 is the IPv6 space IANA allocates for global unicast.
var globalUnicast6 = netip.MustParsePrefix("2000::/3")

// PublicAddress tells whether a webhook may connect to ip: not loopback,
// private (RFC 1918, fc00::/7), link-local (169.254.0.0/16 with the cloud
// metadata address, fe80::/10), unspecified, multicast, nor any other
// special-purpose block; an IPv6 address must be global unicast (2000::/3)
// and an IPv4-mapped one is refused whatever it maps.
func PublicAddress(ip netip.Addr) bool {
	ip = ip.WithZone("")
	if !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() {
		return false
	}
	if ip.Is6() && !globalUnicast6.Contains(ip) {
		return false
	}
	for _, p := range special {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// clientSet is the HTTP client of the deliveries: no proxy, no redirects
// (a 3xx is the attempt's answer, so a Location naming an inside address
// is never followed),
// the timeout of ONAIR_WEBHOOK_TIMEOUT, and a dialer that checks the
// address it is about to connect to (after DNS resolution, so a name that
// resolves to 127.0.0.1 is refused as 127.0.0.1 is, and a rebinding
// answer cannot slip through between a check and the connect).
type clientSet struct {
	http *http.Client
}

func newClientSet(timeout time.Duration, allowPrivate bool) *clientSet {
	dialer := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	if !allowPrivate {
		dialer.Control = func(network, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil || !PublicAddress(ap.Addr()) {
				return &blockedErr{}
			}
			return nil
		}
	}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   2,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   timeout,
		ResponseHeaderTimeout: timeout,
	}
	return &clientSet{http: &http.Client{
		Transport: tr,
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}}
}

func (c *clientSet) close() {
	if tr, ok := c.http.Transport.(*http.Transport); ok {
		tr.CloseIdleConnections()
	}
}

// do is the client's Do bounded by ctx.
func (c *clientSet) do(ctx context.Context, req *http.Request) (*http.Response, error) {
	return c.http.Do(req.WithContext(ctx))
}
