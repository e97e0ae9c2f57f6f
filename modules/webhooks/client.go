package webhooks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// errBlocked is an address the private-address guard refuses.
var errBlocked = errors.New("address not allowed")

// blockedErr names the refused address.
type blockedErr struct{ addr string }

func (e *blockedErr) Error() string {
	return fmt.Sprintf("%s is a loopback, private, link-local or reserved address (set %s=true to allow)", e.addr, SettingAllowPrivate)
}
func (e *blockedErr) Unwrap() error { return errBlocked }

// reserved are the ranges net/netip does not classify but a webhook must
// not reach: carrier-grade NAT, the "this network" block, benchmarking,
// IPv4-mapped addresses are unmapped before the check.
var reserved = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("fd00:ec2::254/128"),
}

// PublicAddress tells whether a webhook may connect to ip: not loopback,
// private (RFC 1918, fc00::/7), link-local (169.254.0.0/16 with the cloud
// metadata address, fe80::/10), unspecified, multicast or reserved.
func PublicAddress(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() {
		return false
	}
	for _, p := range reserved {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// clientSet is the HTTP client of the deliveries: no proxy, no redirects,
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
			if err != nil {
				return &blockedErr{addr: address}
			}
			if !PublicAddress(ap.Addr()) {
				return &blockedErr{addr: ap.Addr().String()}
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
