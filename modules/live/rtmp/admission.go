package rtmp

import (
	"container/list"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"
)

// Admission: who gets a connection slot and who keeps it.
//
// A connection is pending from accept until its publish is accepted by the
// Handler; then it is a publisher. Pending connections have
// AdmissionTimeout to handshake, connect and publish, and are few: at most
// MaxPendingPerAddr from one address and MaxPending in all. The deadline
// bounds what the client does, not the server's own work: it stops while
// the Handler decides on a publish (a stream key check that waits for the
// database when hundreds of encoders reconnect at once), which the
// Handler bounds itself. When either pool is full, the oldest pending
// connection of that pool is dropped to make room: one that has not
// completed the handshake first, then one that has not yet published, and
// one whose publish is being decided last; so idle sockets can delay a
// real encoder by a moment but never lock it out. A publisher is never
// dropped to admit anyone. When MaxConnections are all publishers, new
// connections are closed at once.
//
// Addresses are compared as AddrKey gives them.

// Defaults of the admission fields of Server.
const (
	DefaultAdmissionTimeout     = 5 * time.Second
	DefaultMaxPending           = 64
	DefaultMaxPendingPerAddr    = 8
	DefaultMaxPublishersPerAddr = 16
	DefaultKeyThrottle          = time.Minute
)

// Reasons a pending connection is cut off.
var (
	// ErrAdmissionTimeout ends a connection that did not publish within
	// AdmissionTimeout.
	ErrAdmissionTimeout = errors.New("rtmp: not publishing within the admission deadline")
	// ErrEvicted ends a pending connection dropped to admit a newer one.
	ErrEvicted = errors.New("rtmp: dropped to admit a newer connection")
)

// Stats are the admission counters of a Server since it started.
type Stats struct {
	// RefusedFull counts connections closed at accept because every slot
	// was held by a publisher.
	RefusedFull uint64
	// RefusedPublishers counts publishes refused because their address
	// already had MaxPublishersPerAddr publishers.
	RefusedPublishers uint64
	// Evicted counts pending connections dropped to admit newer ones.
	Evicted uint64
	// TimedOut counts connections closed by the admission deadline.
	TimedOut uint64
	// Throttled counts publishes refused by the stream key throttle,
	// without asking the Handler.
	Throttled uint64
}

type counters struct {
	refusedFull, refusedPublishers, evicted, timedOut, throttled atomic.Uint64
}

// Stats returns the admission counters.
func (s *Server) Stats() Stats {
	return Stats{
		RefusedFull:       s.counts.refusedFull.Load(),
		RefusedPublishers: s.counts.refusedPublishers.Load(),
		Evicted:           s.counts.evicted.Load(),
		TimedOut:          s.counts.timedOut.Load(),
		Throttled:         s.counts.throttled.Load(),
	}
}

type admState uint8

const (
	admPending admState = iota
	admPublisher
	admGone // evicted, timed out or ended: holds no slot
)

// admission is the state of the pools, guarded by Server.mu.
type admission struct {
	pending    list.List // *conn, oldest first
	publishers int
	addrs      map[string]*addrCount
	throttle   KeyThrottle
}

type addrCount struct{ pending, publishers int }

func limitOr(n, def int) int {
	if n > 0 {
		return n
	}
	return def
}

// admit gives nc a slot, dropping pending connections to make room, and
// returns its conn, or nil when every slot is held by a publisher.
// s.mu is held.
func (s *Server) admit(nc net.Conn) *conn {
	a := &s.adm
	if a.addrs == nil {
		a.addrs = map[string]*addrCount{}
	}
	addr := AddrKey(nc.RemoteAddr())
	ac := a.addrs[addr]
	if ac != nil && ac.pending >= limitOr(s.MaxPendingPerAddr, DefaultMaxPendingPerAddr) {
		s.evictOldest(addr)
	}
	if a.pending.Len() >= limitOr(s.MaxPending, DefaultMaxPending) {
		s.evictOldest("")
	}
	if a.pending.Len()+a.publishers >= limitOr(s.MaxConnections, DefaultMaxConnections) && !s.evictOldest("") {
		s.counts.refusedFull.Add(1)
		return nil
	}
	if ac == nil {
		ac = &addrCount{}
		a.addrs[addr] = ac
	}
	c := newConn(s, nc)
	c.addr = addr
	c.elem = a.pending.PushBack(c)
	ac.pending++
	c.admTimer = time.AfterFunc(durationOr(s.AdmissionTimeout, DefaultAdmissionTimeout), func() {
		s.mu.Lock()
		late := c.adm == admPending && !c.deciding
		if late {
			s.leavePending(c)
		}
		s.mu.Unlock()
		if late {
			s.counts.timedOut.Add(1)
			c.kill(ErrAdmissionTimeout)
		}
	})
	return c
}

// evictOldest drops the oldest pending connection (of addr, if not
// empty), preferring one that has not completed the handshake, then one
// whose publish is not being decided. It reports whether it dropped one.
// s.mu is held.
func (s *Server) evictOldest(addr string) bool {
	var victim *conn
	for e := s.adm.pending.Front(); e != nil; e = e.Next() {
		c := e.Value.(*conn)
		if addr != "" && c.addr != addr {
			continue
		}
		if !c.handshook.Load() {
			victim = c
			break
		}
		if victim == nil || victim.deciding && !c.deciding {
			victim = c
		}
	}
	if victim == nil {
		return false
	}
	s.leavePending(victim)
	s.counts.evicted.Add(1)
	victim.kill(ErrEvicted)
	return true
}

// leavePending takes a pending connection out of the pools. s.mu is held.
func (s *Server) leavePending(c *conn) {
	s.adm.pending.Remove(c.elem)
	c.elem = nil
	c.adm = admGone
	s.addrDone(c.addr, func(ac *addrCount) { ac.pending-- })
}

func (s *Server) addrDone(addr string, f func(*addrCount)) {
	ac := s.adm.addrs[addr]
	f(ac)
	if ac.pending == 0 && ac.publishers == 0 {
		delete(s.adm.addrs, addr)
	}
}

// release frees whatever slot c still holds once it has ended with err.
// A pending connection that ended on a read deadline (the handshake's)
// counts as timed out like one the admission timer closed.
func (s *Server) release(c *conn, err error) {
	c.admTimer.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	switch c.adm {
	case admPending:
		s.leavePending(c)
		if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
			s.counts.timedOut.Add(1)
		}
	case admPublisher:
		c.adm = admGone
		s.adm.publishers--
		s.addrDone(c.addr, func(ac *addrCount) { ac.publishers-- })
	}
}

// errTooManyPublishers refuses a publish from an address at its cap.
var errTooManyPublishers = &StatusError{Code: "NetStream.Publish.Rejected", Description: "Too many publishers from your address."}

// deciding stops c's admission deadline while the Handler decides on its
// publish. It reports false when c was dropped already.
func (s *Server) deciding(c *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.adm != admPending {
		return false
	}
	c.deciding = true
	c.admTimer.Stop()
	return true
}

// publisherRoom reports whether c's address may add a publisher.
func (s *Server) publisherRoom(c *conn) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ac := s.adm.addrs[c.addr]; ac != nil && ac.publishers >= limitOr(s.MaxPublishersPerAddr, DefaultMaxPublishersPerAddr) {
		s.counts.refusedPublishers.Add(1)
		return errTooManyPublishers
	}
	return nil
}

// promote makes a pending connection whose publish was accepted a
// publisher, which no longer has a deadline and is never evicted. It
// fails when c was dropped meanwhile or its address reached its cap.
func (s *Server) promote(c *conn) error {
	c.admTimer.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.adm != admPending {
		return fmt.Errorf("rtmp: publish accepted too late: %w", ErrAdmissionTimeout)
	}
	ac := s.adm.addrs[c.addr]
	if ac.publishers >= limitOr(s.MaxPublishersPerAddr, DefaultMaxPublishersPerAddr) {
		s.counts.refusedPublishers.Add(1)
		return errTooManyPublishers
	}
	s.adm.pending.Remove(c.elem)
	c.elem = nil
	c.adm = admPublisher
	ac.pending--
	ac.publishers++
	s.adm.publishers++
	return nil
}

// throttled reports how long key stays refused from addr (0: it is not).
func (s *Server) throttled(addr, key string, now time.Time) time.Duration {
	return s.adm.throttle.Wait(addr, key, now)
}

// keyResult records a refused (ok false) or accepted publish of key from
// addr in the key throttle.
func (s *Server) keyResult(addr, key string, ok bool, now time.Time) {
	s.adm.throttle.Record(addr, key, ok, now, durationOr(s.KeyThrottle, DefaultKeyThrottle))
}
