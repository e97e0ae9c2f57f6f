package rtmp

import (
	"crypto/sha256"
	"net"
	"net/netip"
	"sync"
	"time"
)

// keyFailureLimit is how many refused publishes of one key from one
// address, within the window, throttle that key there.
const keyFailureLimit = 3

// maxThrottleEntries bounds the memory of the key throttle.
const maxThrottleEntries = 4096

// KeyThrottle refuses a stream key from an address after keyFailureLimit
// refused publishes of it there within a window, for that window, so a
// guesser learns nothing and costs the database nothing. The RTMP and SRT
// servers each keep one. The zero value is ready; it is safe for
// concurrent use.
type KeyThrottle struct {
	mu       sync.Mutex
	failures map[throttleKey]*keyFailures
}

type throttleKey struct {
	addr string
	key  [sha256.Size]byte // the key itself may be long: keep a digest
}

type keyFailures struct {
	first time.Time // start of the counting window
	count int
	until time.Time // throttled until then
}

// Wait reports how long key stays refused from addr (0: it is not).
func (t *KeyThrottle) Wait(addr, key string, now time.Time) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.failures[throttleKey{addr, sha256.Sum256([]byte(key))}]
	if f == nil || !now.Before(f.until) {
		return 0
	}
	return f.until.Sub(now)
}

// Record notes a refused (ok false) or accepted publish of key from addr:
// the third refusal within window throttles the key there for window; an
// accepted one forgets the failures.
func (t *KeyThrottle) Record(addr, key string, ok bool, now time.Time, window time.Duration) {
	k := throttleKey{addr, sha256.Sum256([]byte(key))}
	t.mu.Lock()
	defer t.mu.Unlock()
	if ok {
		delete(t.failures, k)
		return
	}
	if t.failures == nil {
		t.failures = map[throttleKey]*keyFailures{}
	}
	f := t.failures[k]
	if f == nil || now.Sub(f.first) >= window && !now.Before(f.until) {
		if f == nil && len(t.failures) >= maxThrottleEntries {
			t.prune(now, window)
		}
		f = &keyFailures{first: now}
		t.failures[k] = f
	}
	f.count++
	if f.count >= keyFailureLimit {
		f.until = now.Add(window)
	}
}

// prune forgets expired entries and, if the table is still full, an
// arbitrary one: under a flood of distinct keys the throttle degrades to
// fewer remembered keys, never to unbounded memory. t.mu is held.
func (t *KeyThrottle) prune(now time.Time, window time.Duration) {
	for k, f := range t.failures {
		if now.Sub(f.first) >= window && !now.Before(f.until) {
			delete(t.failures, k)
		}
	}
	for k := range t.failures {
		if len(t.failures) < maxThrottleEntries {
			break
		}
		delete(t.failures, k)
	}
}

// AddrKey is the address a connection is counted under: the IPv4
// address, or the /64 prefix of an IPv6 one (one host usually owns a
// whole /64).
func AddrKey(a net.Addr) string {
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return a.String()
	}
	ip := ap.Addr().Unmap()
	if ip.Is4() {
		return ip.String()
	}
	p, _ := ip.Prefix(64)
	return p.String()
}
