package srt

import (
	"container/list"
	"context"
	"sync/atomic"
	"time"

	"github.com/onair/onair/modules/live/rtmp"
)

// Admission: the RTMP server's rules (rtmp/admission.go), for SRT. A
// caller is pending from its handshake request until its program map has
// been read (it is sending media); then it is a publisher. Pending callers
// have AdmissionTimeout to get there, and are few: MaxPendingPerAddr from
// one address, MaxPending in all; a full pool drops its oldest to admit a
// newcomer. MaxConnections caps callers in all (a full server refuses with
// REJX_OVERLOAD), MaxPublishersPerAddr the publishers of one address. The
// stream key throttle refuses a key from an address after three
// unauthorised tries within KeyThrottle, for KeyThrottle, without asking
// the Handler. Addresses are compared by IPv4 address or IPv6 /64.

type admState uint8

const (
	admPending admState = iota
	admPublisher
	admGone
)

type pendingElem = list.Element

type admission struct {
	pending    list.List // *conn, oldest first
	publishers int
	addrs      map[string]*addrCount
	throttle   rtmp.KeyThrottle
}

type addrCount struct{ pending, publishers int }

type counters struct {
	refusedFull, refusedPublishers, evicted, timedOut, throttled atomic.Uint64
}

// Stats are the admission counters, in the RTMP server's form.
func (s *Server) Stats() rtmp.Stats {
	return rtmp.Stats{
		RefusedFull:       s.counts.refusedFull.Load(),
		RefusedPublishers: s.counts.refusedPublishers.Load(),
		Evicted:           s.counts.evicted.Load(),
		TimedOut:          s.counts.timedOut.Load(),
		Throttled:         s.counts.throttled.Load(),
	}
}

func limitOr(n, def int) int {
	if n > 0 {
		return n
	}
	return def
}

// admitRequest decides a handshake request before anything is asked of
// the Handler: the streamid, the throttle, the pools. It returns the new
// pending conn, or nil and the rejection.
func (s *Server) admitRequest(req *request) (*conn, rejection) {
	remote := req.RemoteAddr()
	if remote == nil {
		return nil, rejRogue
	}
	key, err := ParseStreamID(req.StreamID())
	switch err {
	case nil:
	case ErrNotPublish:
		return nil, rejxBadMode
	default:
		return nil, rejxBadRequest
	}
	addr := rtmp.AddrKey(remote)
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.draining {
		return nil, rejxDown
	}
	if s.adm.throttle.Wait(addr, key, now) > 0 {
		s.counts.throttled.Add(1)
		return nil, rejxUnauth
	}
	a := &s.adm
	if a.addrs == nil {
		a.addrs = map[string]*addrCount{}
	}
	ac := a.addrs[addr]
	if ac != nil && ac.pending >= limitOr(s.MaxPendingPerAddr, rtmp.DefaultMaxPendingPerAddr) {
		s.evictOldest(addr)
	}
	if a.pending.Len() >= limitOr(s.MaxPending, rtmp.DefaultMaxPending) {
		s.evictOldest("")
	}
	if a.pending.Len()+a.publishers >= limitOr(s.MaxConnections, rtmp.DefaultMaxConnections) && !s.evictOldest("") {
		s.counts.refusedFull.Add(1)
		return nil, rejxOverload
	}
	if ac = a.addrs[addr]; ac == nil {
		ac = &addrCount{}
		a.addrs[addr] = ac
	}
	c := &conn{s: s, addr: addr, key: key, remote: remote}
	c.ctx, c.cancel = context.WithCancelCause(context.Background())
	c.pendingE = a.pending.PushBack(c)
	ac.pending++
	s.conns[c] = struct{}{}
	c.timer = time.AfterFunc(durationOr(s.AdmissionTimeout, rtmp.DefaultAdmissionTimeout), func() {
		s.mu.Lock()
		late := c.state == admPending
		if late {
			s.leavePending(c)
		}
		s.mu.Unlock()
		if late {
			s.counts.timedOut.Add(1)
			c.kill(rtmp.ErrAdmissionTimeout)
		}
	})
	return c, 0
}

// evictOldest drops the oldest pending caller (of addr, if not empty).
// s.mu is held.
func (s *Server) evictOldest(addr string) bool {
	for e := s.adm.pending.Front(); e != nil; e = e.Next() {
		c := e.Value.(*conn)
		if addr != "" && c.addr != addr {
			continue
		}
		s.leavePending(c)
		s.counts.evicted.Add(1)
		c.kill(rtmp.ErrEvicted)
		return true
	}
	return false
}

// leavePending takes a pending caller out of the pools. s.mu is held.
func (s *Server) leavePending(c *conn) {
	s.adm.pending.Remove(c.pendingE)
	c.pendingE = nil
	c.state = admGone
	s.addrDone(c.addr, func(ac *addrCount) { ac.pending-- })
}

func (s *Server) addrDone(addr string, f func(*addrCount)) {
	ac := s.adm.addrs[addr]
	f(ac)
	if ac.pending == 0 && ac.publishers == 0 {
		delete(s.adm.addrs, addr)
	}
}

// publisherRoom refuses a caller whose address is at its publisher cap.
func (s *Server) publisherRoom(c *conn) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ac := s.adm.addrs[c.addr]; ac != nil && ac.publishers >= limitOr(s.MaxPublishersPerAddr, rtmp.DefaultMaxPublishersPerAddr) {
		s.counts.refusedPublishers.Add(1)
		return errTooManyPublishers
	}
	return nil
}

var errTooManyPublishers = errorString("srt: too many publishers from the address")

type errorString string

func (e errorString) Error() string { return string(e) }

// promote makes a pending caller that sends media a publisher.
func (s *Server) promote(c *conn) error {
	c.timer.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.state != admPending {
		return rtmp.ErrAdmissionTimeout
	}
	ac := s.adm.addrs[c.addr]
	if ac.publishers >= limitOr(s.MaxPublishersPerAddr, rtmp.DefaultMaxPublishersPerAddr) {
		s.counts.refusedPublishers.Add(1)
		return errTooManyPublishers
	}
	s.adm.pending.Remove(c.pendingE)
	c.pendingE = nil
	c.state = admPublisher
	ac.pending--
	ac.publishers++
	s.adm.publishers++
	return nil
}

// release frees the slot of a caller that ended.
func (s *Server) release(c *conn, _ error) {
	c.timer.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.conns, c)
	switch c.state {
	case admPending:
		s.leavePending(c)
	case admPublisher:
		c.state = admGone
		s.adm.publishers--
		s.addrDone(c.addr, func(ac *addrCount) { ac.publishers-- })
	}
}

// keyResult records a refused (ok false) or accepted publish of key.
func (s *Server) keyResult(addr, key string, ok bool, now time.Time) {
	s.adm.throttle.Record(addr, key, ok, now, durationOr(s.KeyThrottle, rtmp.DefaultKeyThrottle))
}
