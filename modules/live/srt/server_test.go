package srt

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	gosrt "github.com/datarhei/gosrt"

	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/live/streamcore"
)

// sink collects a publication.
type sink struct {
	mu     sync.Mutex
	units  int
	tracks string
	closed chan error
}

func (s *sink) Tracks(v, a bool) error {
	s.mu.Lock()
	s.tracks = strconv.FormatBool(v) + "," + strconv.FormatBool(a)
	s.mu.Unlock()
	return nil
}

func (s *sink) Write(streamcore.Unit) error {
	s.mu.Lock()
	s.units++
	s.mu.Unlock()
	return nil
}

func (s *sink) Close(err error) { s.closed <- err }

func (s *sink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.units
}

// startServer runs a server on loopback whose handler accepts the key
// "good" and hands out sinks on the channel.
func startServer(t *testing.T, s *Server) <-chan *sink {
	t.Helper()
	sinks := make(chan *sink, 16)
	s.Handler = HandlerFunc(func(_ context.Context, req PublishRequest) (Sink, error) {
		if req.Key != "good" {
			return nil, ErrUnauthorized
		}
		k := &sink{closed: make(chan error, 1)}
		sinks <- k
		return k, nil
	})
	if err := s.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	go s.Serve()
	t.Cleanup(func() { s.Close() })
	return sinks
}

func dial(addr, streamid string) (gosrt.Conn, error) {
	cfg := gosrt.DefaultConfig()
	cfg.StreamId = streamid
	return gosrt.Dial("srt", addr, cfg)
}

func isRejection(err error, r gosrt.RejectionReason) bool {
	return err != nil && strings.Contains(err.Error(), "REJECT ("+strconv.FormatUint(uint64(r), 32)+")")
}

// A publisher's MPEG-TS reaches its sink as units; a second publisher from
// the same address past MaxPublishersPerAddr is refused in the handshake
// (REJX_OVERLOAD), a wrong key before it as unauthorised; Close ends the first with
// ErrServerClosed.
func TestServerPublishersPerAddr(t *testing.T) {
	s := &Server{MaxPublishersPerAddr: 1, AdmissionTimeout: testload.Patience}
	sinks := startServer(t, s)
	addr := s.Addr().String()
	ts := tsStream(t, 90, 0)
	if _, err := dial(addr, "bad"); !isRejection(err, gosrt.REJX_UNAUTHORIZED) {
		t.Errorf("a wrong key: %v", err)
	}

	first, err := dial(addr, "#!::r=good,m=publish")
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if _, err := first.Write(ts[:len(ts)/2]); err != nil {
		t.Fatal(err)
	}
	k := <-sinks
	testload.Poll(t, "units at the sink", func() error {
		if n := k.count(); n < 20 {
			return errors.New("only " + strconv.Itoa(n))
		}
		return nil
	})
	if k.tracks != "true,true" {
		t.Errorf("tracks %s", k.tracks)
	}

	// A second publisher from the address is refused in the handshake.
	if _, err := dial(addr, "good"); !isRejection(err, gosrt.REJX_OVERLOAD) {
		t.Errorf("second publisher: %v", err)
	}
	if st := s.Stats(); st.RefusedPublishers != 1 {
		t.Errorf("stats %+v", st)
	}
	s.Close()
	select {
	case err := <-k.closed:
		if !errors.Is(err, ErrServerClosed) {
			t.Errorf("first publisher ended with %v", err)
		}
	case <-time.After(testload.Patience):
		t.Fatal("Close left the publisher running")
	}
}

// Callers that never send fill the pending pool of their address; the
// oldest is dropped for each newcomer.
func TestServerPendingEvicted(t *testing.T) {
	s := &Server{MaxPendingPerAddr: 2, AdmissionTimeout: testload.Patience}
	sinks := startServer(t, s)
	addr := s.Addr().String()
	for range 4 {
		c, err := dial(addr, "good")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	for range 4 {
		<-sinks
	}
	testload.Poll(t, "two evicted", func() error {
		if st, n := s.Stats(), s.Conns(); st.Evicted != 2 || n != 2 {
			return errors.New("evicted " + strconv.FormatUint(st.Evicted, 10) + ", open " + strconv.Itoa(n))
		}
		return nil
	})
}

// A server listening on every address (a dual-stack IPv6 socket) answers
// an IPv4 caller: its replies go to the caller's address mapped.
func TestServerDualStack(t *testing.T) {
	s := &Server{AdmissionTimeout: testload.Patience}
	sinks := make(chan *sink, 1)
	s.Handler = HandlerFunc(func(context.Context, PublishRequest) (Sink, error) {
		k := &sink{closed: make(chan error, 1)}
		sinks <- k
		return k, nil
	})
	if err := s.Listen(":0"); err != nil {
		t.Fatal(err)
	}
	go s.Serve()
	t.Cleanup(func() { s.Close() })
	port := s.Addr().(*net.UDPAddr).Port
	c, err := dial("127.0.0.1:"+strconv.Itoa(port), "good")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sendAndExpectUnits(t, c, sinks)
}

// sendAndExpectUnits writes a few seconds of stream to c and waits until
// the server's sink for it has its units.
func sendAndExpectUnits(t *testing.T, c gosrt.Conn, sinks <-chan *sink) {
	t.Helper()
	if _, err := c.Write(tsStream(t, 90, 0)); err != nil {
		t.Fatal(err)
	}
	k := <-sinks
	testload.Poll(t, "units at the sink", func() error {
		if k.count() < 20 {
			return errors.New("too few")
		}
		return nil
	})
}
