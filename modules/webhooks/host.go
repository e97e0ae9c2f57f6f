package webhooks

import (
	"errors"
	"net/netip"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// A webhook URL's host is read the way a browser's URL parser reads it
// (the WHATWG URL standard's host parser), not only the way Go's resolver
// happens to: a host whose last label is a number is an IPv4 address in
// any of the spellings inet_aton takes — 0x7f000001, 2130706433, 127.1,
// 0177.0.0.1 — and glibc's resolver dials them as such. canonicalHost
// turns every spelling into the address it names, so no spelling of a
// private address passes a check meant for the address.

var (
	errBadHost = errors.New("not a valid host")
	// errOddIPv4 is an IPv4 address not written as four decimal numbers:
	// Go dials it only through a resolver that happens to read it.
	errOddIPv4 = errors.New("an IPv4 address must be written as four decimal numbers")
)

// canonicalHost reads the host of a URL (url.URL.Hostname: brackets and
// percent-escapes already gone). It returns the address the host names,
// or the invalid Addr and the host's lower-case ASCII (IDNA) form for a
// domain name. An IPv4 address in another spelling than a.b.c.d is
// returned with errOddIPv4, so the caller can judge the address first.
func canonicalHost(host string) (netip.Addr, string, error) {
	if host == "" {
		return netip.Addr{}, "", errBadHost
	}
	if strings.Contains(host, ":") {
		ip, err := netip.ParseAddr(host)
		if err != nil || !ip.Is6() {
			return netip.Addr{}, "", errBadHost
		}
		return ip.WithZone(""), "", nil
	}
	name := strings.ToLower(host)
	if !isASCII(name) {
		// As net/http does before it dials: full-width digits and dots
		// become ASCII ones here ("１２７．０．０．１").
		a, err := idna.Lookup.ToASCII(name)
		if err != nil {
			return netip.Addr{}, "", errBadHost
		}
		name = a
	}
	labels := strings.Split(name, ".")
	if len(labels) > 1 && labels[len(labels)-1] == "" {
		labels = labels[:len(labels)-1] // one trailing dot names the root
	}
	if !endsInNumber(labels[len(labels)-1]) {
		if strings.ContainsAny(name, " %/\\?#@[]<>^|") || strings.Contains(name, "..") || name == "." {
			return netip.Addr{}, "", errBadHost
		}
		return netip.Addr{}, strings.TrimSuffix(name, "."), nil
	}
	ip, ok := parseIPv4(labels)
	if !ok {
		return netip.Addr{}, "", errBadHost
	}
	if ip.String() != strings.TrimSuffix(name, ".") {
		return ip, "", errOddIPv4
	}
	return ip, "", nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// endsInNumber is the WHATWG rule: a last label of decimal digits, or one
// that parses as an IPv4 number (0x…), makes the host an IPv4 address.
func endsInNumber(label string) bool {
	if label != "" && strings.Trim(label, "0123456789") == "" {
		return true
	}
	_, ok := ipv4Number(label)
	return ok
}

// ipv4Number parses one part of an IPv4 address: decimal, 0x hex or
// 0-prefixed octal, as inet_aton and the WHATWG parser do.
func ipv4Number(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	base := 10
	switch {
	case len(s) >= 2 && (s[:2] == "0x" || s[:2] == "0X"):
		s, base = s[2:], 16
		if s == "" {
			return 0, true
		}
	case len(s) >= 2 && s[0] == '0':
		s, base = s[1:], 8
	}
	n, err := strconv.ParseUint(s, base, 64)
	if err != nil || strings.ContainsAny(s, "+-_") {
		return 0, false
	}
	return n, true
}

// parseIPv4 is the WHATWG IPv4 parser: one to four parts, every part but
// the last a byte, the last filling the bytes that remain (127.1 is
// 127.0.0.1; 2130706433 is 127.0.0.1).
func parseIPv4(parts []string) (netip.Addr, bool) {
	if len(parts) == 0 || len(parts) > 4 {
		return netip.Addr{}, false
	}
	var v uint64
	for i, p := range parts {
		n, ok := ipv4Number(p)
		if !ok {
			return netip.Addr{}, false
		}
		if i < len(parts)-1 {
			if n > 255 {
				return netip.Addr{}, false
			}
			v |= n << (8 * (3 - i))
			continue
		}
		if n >= 1<<(8*(5-len(parts))) {
			return netip.Addr{}, false
		}
		v |= n
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}
