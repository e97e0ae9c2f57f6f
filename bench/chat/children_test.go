package main

import (
	"context"
	"crypto/sha1"
	"encoding/base64"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestViewerChildOverPipes: a viewers' process, spoken to in its JSON
// lines as the parent speaks to it, opens its sockets on a real
// WebSocket endpoint, counts what arrives, tells the socket the server
// closed and hands back the sampled socket's latency.
func TestViewerChildOverPipes(t *testing.T) {
	sent := time.Now().Add(-time.Second).UnixNano()
	chat := frame(1, []byte(`{"type":"chat.created","show_id":1,"chat":{"message":"message 1 bench t=`+strconv.FormatInt(sent, 10)+`"}}`))
	presence := frame(1, []byte(`{"type":"presence","show_id":1,"count":2}`))
	var conns atomic.Int64
	quit, closeOne := make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sum := sha1.Sum([]byte(r.Header.Get("Sec-WebSocket-Key") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		out := []byte("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " +
			base64.StdEncoding.EncodeToString(sum[:]) + "\r\n\r\n")
		out = append(append(out, chat...), presence...)
		conn.Write(out)
		if conns.Add(1) == 2 { // the second socket is closed once all are open: 1001
			<-closeOne
			conn.Write(frame(8, []byte{0x03, 0xe9}))
		}
		<-quit
	}))
	defer srv.Close()
	defer close(quit)

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- viewerChild(context.Background(), inR, outW); outW.Close() }()
	enc, dec := json.NewEncoder(inW), json.NewDecoder(outR)
	prof := filepath.Join(t.TempDir(), "viewers.cpu.pprof")
	job := viewerJob{URL: "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws/shows/1", Viewers: 3, Concurrency: 2, Sample: 1, Within: time.Minute, SharedID: "same",
		CPUProfile: prof, ProfileSeconds: 600}
	if err := enc.Encode(job); err != nil {
		t.Fatal(err)
	}
	var hello viewerHello
	if err := dec.Decode(&hello); err != nil || hello.Connected != 3 || len(hello.Failed) != 0 {
		t.Fatalf("hello %+v (%v)", hello, err)
	}
	if err := enc.Encode("profile"); err != nil {
		t.Fatal(err)
	}
	var ack viewerAck
	if err := dec.Decode(&ack); err != nil || ack.Err != "" {
		t.Fatalf("profile: %+v (%v)", ack, err)
	}
	close(closeOne)
	var tot viewerTotals
	for deadline := time.Now().Add(30 * time.Second); tot.Chats < 3 || tot.Closed < 1; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("totals %+v after 30 s, want 3 chats and 1 closed", tot)
		}
		if err := enc.Encode("totals"); err != nil {
			t.Fatal(err)
		}
		if err := dec.Decode(&tot); err != nil {
			t.Fatal(err)
		}
	}
	if tot.Presence != 3 || tot.Other != 0 {
		t.Errorf("totals %+v, want 3 presence events", tot)
	}
	if err := enc.Encode("close"); err != nil {
		t.Fatal(err)
	}
	var final viewerFinal
	if err := dec.Decode(&final); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("child: %v", err)
	}
	// One socket sampled (3 sockets, a sample of 1), one chat message on it.
	if len(final.Latency) != 1 || final.Latency[0] < time.Second || final.Latency[0] > time.Minute {
		t.Errorf("latencies %v, want one of about a second", final.Latency)
	}
	if !slices.Equal(final.Why, []string{"close 1001"}) {
		t.Errorf("why %q", final.Why)
	}
	// "close" ended the profile long before its 600 s: a gzipped pprof.
	if b, err := os.ReadFile(prof); err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Errorf("the viewers' CPU profile: %d bytes (%v), want a gzipped profile", len(b), err)
	}
}

// TestMergeNodesAndChildren: the parts of a run spread over nodes and
// processes add up to the whole.
func TestMergeNodesAndChildren(t *testing.T) {
	for _, c := range []struct {
		n, k int
		want []int
	}{{20000, 2, []int{10000, 10000}}, {19801, 2, []int{9901, 9900}}, {7, 3, []int{3, 2, 2}}, {5000, 1, []int{5000}}} {
		if got := shares(c.n, c.k); !slices.Equal(got, c.want) {
			t.Errorf("shares(%d, %d) = %v, want %v", c.n, c.k, got, c.want)
		}
	}
	if got := sumTotals([]viewerTotals{{1, 2, 3, 4}, {10, 20, 30, 40}}); got != (viewerTotals{11, 22, 33, 44}) {
		t.Errorf("sumTotals: %+v", got)
	}
	f := mergeFinals([]viewerFinal{{Latency: []time.Duration{1, 2}, Why: []string{"end of file"}}, {Latency: []time.Duration{3}}})
	if !slices.Equal(f.Latency, []time.Duration{1, 2, 3}) || !slices.Equal(f.Why, []string{"end of file"}) {
		t.Errorf("mergeFinals: %+v", f)
	}

	// Two nodes' histograms: 90 fast POSTs on one, 10 slow on the other;
	// the sum's p99 is the slow bucket, its p50 the fast one.
	bounds := []float64{0.005, 0.05, 0.5, math.Inf(1)}
	a := serverTimes{handler: buckets{count: 90, bounds: bounds, counts: []uint64{90, 90, 90, 90}}, mem: memory{heap: 1, stack: 2, goroutines: 3}}
	b := serverTimes{handler: buckets{count: 10, bounds: bounds, counts: []uint64{0, 0, 10, 10}}, mem: memory{heap: 10, stack: 20, goroutines: 30}}
	sum := serverTimes{}.add(a).add(b)
	if sum.handler.count != 100 || sum.handler.quantile(0.99) != 0.5 || sum.handler.quantile(0.5) != 0.005 || sum.handler.over(0.05) != 10 {
		t.Errorf("summed handler histogram %+v", sum.handler)
	}
	if sum.mem != (memory{11, 22, 33}) {
		t.Errorf("summed memory %+v", sum.mem)
	}
	if a.handler.counts[0] != 90 {
		t.Errorf("add changed its operand: %v", a.handler.counts)
	}
}
