package srt

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/live/streamcore"
)

// coreSink feeds a stream core, as the live module's sink does: inline
// once the core has decided the tracks. write, if set, runs before each
// unit is written.
type coreSink struct {
	core   *streamcore.Stream
	write  func(streamcore.Unit)
	closed chan error
}

func (s *coreSink) Tracks(video, audio bool) error {
	meta := map[string]any{}
	if video {
		meta["videocodecid"] = 7.0
	}
	if audio {
		meta["audiocodecid"] = 10.0
	}
	return s.core.Metadata(meta)
}

func (s *coreSink) Write(u streamcore.Unit) error {
	if s.write != nil {
		s.write(u)
	}
	return s.core.Write(u)
}

func (s *coreSink) Inline() bool { return s.core.Decided() }

func (s *coreSink) Close(err error) {
	s.core.Close()
	s.closed <- err
}

// counter is a reader that counts the pictures.
type counter struct{ pictures atomic.Int64 }

func (c *counter) Tracks(streamcore.Tracks) error { return nil }
func (c *counter) Unit(u *streamcore.Unit) error {
	if u.Video {
		c.pictures.Add(1)
	}
	return nil
}
func (c *counter) Close() {}

// stuck is a reader that stops at its first unit until released.
type stuck struct{ release chan struct{} }

func (s *stuck) Tracks(streamcore.Tracks) error { return nil }
func (s *stuck) Unit(*streamcore.Unit) error    { <-s.release; return nil }
func (s *stuck) Close()                         {}

// startCoreServer runs a server whose publications feed stream cores
// with the readers add gives them; sinks come on the channel.
func startCoreServer(t *testing.T, s *Server, add func(*streamcore.Stream), write func(*coreSink, PublishRequest, streamcore.Unit)) <-chan *coreSink {
	t.Helper()
	sinks := make(chan *coreSink, 4)
	s.Handler = HandlerFunc(func(_ context.Context, req PublishRequest) (Sink, error) {
		k := &coreSink{closed: make(chan error, 1)}
		k.core = streamcore.New(time.Now(), streamcore.Options{TrackWait: time.Second,
			Decided: func(streamcore.Tracks) error { add(k.core); return nil }})
		if write != nil {
			k.write = func(u streamcore.Unit) { write(k, req, u) }
		}
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

// pumped reports whether s's connections are all read on the socket's
// goroutine.
func pumped(s *Server) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ln.mu.Lock()
	defer s.ln.mu.Unlock()
	for c := range s.conns {
		if sc := c.srt.Load(); sc == nil || sc.pump == nil {
			return false
		}
	}
	return len(s.conns) > 0
}

// Once the core has decided the tracks, the socket's goroutine demuxes
// the stream itself; a reader of the core that stops reading is skipped
// by the core and stalls neither the socket nor the other readers: every
// picture reaches the reader that keeps up.
func TestServerInlineSlowReader(t *testing.T) {
	s := &Server{AdmissionTimeout: testload.Patience}
	healthy := &counter{}
	slow := &stuck{release: make(chan struct{})}
	defer close(slow.release) // before the server's Close, which waits for the readers
	sinks := startCoreServer(t, s, func(core *streamcore.Stream) {
		core.AddReader(slow, streamcore.ReaderOptions{Name: "stuck", Queue: 8})
		core.AddReader(healthy, streamcore.ReaderOptions{Name: "counter"})
	}, nil)
	caller, err := dial(s.Addr().String(), "good")
	if err != nil {
		t.Fatal(err)
	}
	defer caller.Close()
	const frames = 300
	if _, err := caller.Write(tsStream(t, frames, 0)); err != nil {
		t.Fatal(err)
	}
	<-sinks
	testload.Poll(t, "every picture at the reader that keeps up", func() error {
		// The demuxer holds the last picture until the next PES starts.
		if n := healthy.pictures.Load(); n < frames-1 {
			return fmt.Errorf("%d of %d pictures", n, frames)
		}
		return nil
	})
	if !pumped(s) {
		t.Error("the stream is not demuxed on the socket's goroutine")
	}
}

// A sink that cuts its publisher off from Write, on the socket's
// goroutine (the live module's does when a stream fails), ends the
// publication; the listener goes on serving.
func TestServerInlineDisconnect(t *testing.T) {
	s := &Server{AdmissionTimeout: testload.Patience}
	errCut := errors.New("cut off by the sink")
	var units atomic.Int64
	sinks := startCoreServer(t, s, func(*streamcore.Stream) {}, func(k *coreSink, req PublishRequest, _ streamcore.Unit) {
		if k.Inline() && units.Add(1) == 20 {
			req.Disconnect(errCut)
		}
	})
	caller, err := dial(s.Addr().String(), "good")
	if err != nil {
		t.Fatal(err)
	}
	defer caller.Close()
	if _, err := caller.Write(tsStream(t, 300, 0)); err != nil {
		t.Fatal(err)
	}
	k := <-sinks
	select {
	case err := <-k.closed:
		if !errors.Is(err, errCut) {
			t.Errorf("ended with %v", err)
		}
	case <-time.After(testload.Patience):
		t.Fatal("the publisher was never cut off")
	}
	testload.Poll(t, "the connection gone", func() error {
		if n := s.Conns(); n != 0 {
			return fmt.Errorf("%d connections", n)
		}
		return nil
	})
	// The socket still answers: a new caller publishes.
	again, err := dial(s.Addr().String(), "good")
	if err != nil {
		t.Fatal(err)
	}
	again.Close()
}

// A publisher that stays connected but delivers nothing is cut off with
// ErrIdle once IdleTimeout passes after its last bytes, also when the
// socket's goroutine demuxes it; one that delivers is not, however long
// it streams past IdleTimeout.
func TestServerIdleTimeout(t *testing.T) {
	const idle = 700 * time.Millisecond
	s := &Server{AdmissionTimeout: testload.Patience, IdleTimeout: idle}
	sinks := startCoreServer(t, s, func(*streamcore.Stream) {}, nil)
	caller, err := dial(s.Addr().String(), "good")
	if err != nil {
		t.Fatal(err)
	}
	defer caller.Close()
	ts := tsStream(t, 150, 0)
	const chunks = 15 // 2.1 s of writes, three idle timeouts
	step := len(ts) / chunks / 1316 * 1316
	var k *coreSink
	var last time.Time
	for i := range chunks {
		end := (i + 1) * step
		if i == chunks-1 {
			end = len(ts)
		}
		if _, err := caller.Write(ts[i*step : end]); err != nil {
			t.Fatal(err)
		}
		last = time.Now()
		if k == nil {
			k = <-sinks
		}
		select {
		case err := <-k.closed:
			t.Fatalf("cut off while delivering, after %d chunks: %v", i, err)
		case <-time.After(idle / 5):
		}
	}
	if !pumped(s) {
		t.Error("the stream is not demuxed on the socket's goroutine")
	}
	select {
	case err := <-k.closed:
		if !errors.Is(err, ErrIdle) {
			t.Errorf("ended with %v", err)
		}
		// The last bytes are delivered a latency after they were sent.
		if waited := time.Since(last); waited < idle {
			t.Errorf("cut off %v after the last write", waited)
		}
	case <-time.After(testload.Patience):
		t.Fatal("the idle publisher was never cut off")
	}
}
