package app

import (
	"net"
	"net/netip"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// Client addresses behind a reverse proxy.
//
// The peer of a connection is the client unless it is one of
// ONAIR_TRUSTED_PROXIES; then X-Forwarded-For names the client. Fiber's own
// ProxyHeader takes the leftmost address of that header, which is whatever
// the client wrote there (nginx and most proxies append the address they
// saw), so one spoofed header would let a client pick its address and slip
// out of every per-address limit. clientAddress walks the header from the
// right instead, skipping trusted proxies, and stops at the first address
// no trusted proxy vouches for. It then sets it as the request's remote
// address, so c.IP() is the client everywhere: the access log, the rate
// limits, the auth throttle, chat.

// trustedProxies answers whether a peer is one of ONAIR_TRUSTED_PROXIES.
type trustedProxies []*net.IPNet

func (t trustedProxies) trusts(a netip.Addr) bool {
	ip := net.IP(a.Unmap().AsSlice())
	for _, n := range t {
		if n.Contains(ip) {
			return true
		}
	}
	return false
}

// clientAddress is the middleware that makes c.IP() the client's address.
// It runs first on every request; fasthttp keeps one request context per
// connection, so it starts from the connection's peer each time.
func clientAddress(trusted trustedProxies) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if len(trusted) != 0 {
			trusted.setClient(c.Context())
		}
		return c.Next()
	}
}

// setClient makes fc's remote address the client's (clientAddress; the
// server's front calls it too).
func (trusted trustedProxies) setClient(fc *fasthttp.RequestCtx) {
	fc.SetRemoteAddr(nil)
	peer, ok := addrOf(fc.RemoteAddr())
	if !ok || !trusted.trusts(peer) {
		return
	}
	var hops []string
	for _, v := range fc.Request.Header.PeekAll(fiber.HeaderXForwardedFor) {
		hops = append(hops, strings.Split(string(v), ",")...)
	}
	if client, ok := forwardedClient(hops, trusted); ok {
		fc.SetRemoteAddr(&net.TCPAddr{IP: client.AsSlice(), Zone: client.Zone()})
	}
}

// forwardedClient reads X-Forwarded-For hops (oldest first) from the right:
// the first address that is not a trusted proxy is the client. When every
// hop is trusted, the leftmost is. A hop that is not an address ends the
// walk: nothing to its left was written by a proxy we trust.
func forwardedClient(hops []string, trusted trustedProxies) (netip.Addr, bool) {
	var last netip.Addr
	for i := len(hops) - 1; i >= 0; i-- {
		a, ok := parseHop(hops[i])
		if !ok {
			break
		}
		last = a
		if !trusted.trusts(a) {
			return a, true
		}
	}
	return last, last.IsValid()
}

// parseHop reads one X-Forwarded-For entry: an address, optionally with a
// port ("203.0.113.7:5123", "[2001:db8::1]:443").
func parseHop(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap(), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap(), true
	}
	return netip.Addr{}, false
}

func addrOf(a net.Addr) (netip.Addr, bool) {
	if tcp, ok := a.(*net.TCPAddr); ok {
		ip, ok := netip.AddrFromSlice(tcp.IP)
		return ip.Unmap(), ok
	}
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.Addr{}, false
	}
	return ap.Addr().Unmap(), true
}

// ClientKey is the key per-address limits count under: an IPv4 address, or
// the /64 network of an IPv6 one (one subscriber usually holds a whole /64,
// so counting single IPv6 addresses would let one client take 2^64 shares).
// Modules with limits per client (chat's sockets) use it with c.IP().
func ClientKey(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return ip
	}
	return clientKey(a)
}

func clientKey(a netip.Addr) string {
	a = a.Unmap()
	if a.Is4() {
		return a.String()
	}
	p, _ := a.WithZone("").Prefix(64)
	return p.String()
}
