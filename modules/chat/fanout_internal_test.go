package chat

import (
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkFanOut delivers one chat event (about 400 bytes of JSON) to a
// room of real loopback TCP sockets whose peers read and discard; an op
// is one event reaching every socket (the benchmark waits until the peers
// have read every byte, so deliveries/s is what a core delivers, batching
// included). allocs/delivery is the heap allocations of the
// hub and the sockets' writers per event per socket.
func BenchmarkFanOut(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("sockets=%d", n), func(b *testing.B) { benchmarkFanOut(b, n) })
	}
}

func benchmarkFanOut(b *testing.B, sockets int) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	h := NewLocalHub(slog.New(slog.DiscardHandler))
	const showID = 1
	r := &room{clients: map[*client]struct{}{}, viewers: map[string]int{}}
	h.rooms[showID] = r
	var (
		read  atomic.Int64
		peers sync.WaitGroup
	)
	for i := range sockets {
		peer, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		server, err := ln.Accept()
		if err != nil {
			b.Fatal(err)
		}
		c := newClient(Viewer{AnonID: fmt.Sprint(i)}, nil, server, time.Minute)
		r.clients[c] = struct{}{}
		peers.Add(1)
		go func() {
			defer peers.Done()
			buf := make([]byte, 32<<10)
			for {
				n, err := peer.Read(buf)
				read.Add(int64(n))
				if err != nil {
					return
				}
			}
		}()
		defer peer.Close()
		defer c.drop(nil)
	}
	payload := []byte(`{"type":"chat.created","show_id":1,"chat":{"id":123456,"object_url":"https://onair.example/v1/shows/1/chats/123456","message":"a message of ordinary length, as a viewer types it in the chat of a show","position":"00:12:34.56","created_at":"2026-11-23T12:34:56Z","user":{"id":42,"name":"Sam Listener","object_url":"https://onair.example/v1/users/42","avatar_url":null}}}`)
	frame := int64(len(textFrame(payload)))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		h.deliver(showID, payload)
	}
	want := int64(b.N) * int64(sockets) * frame
	for deadline := time.Now().Add(time.Minute); read.Load() < want; time.Sleep(time.Millisecond) {
		for c := range r.clients {
			c.mu.Lock()
			ending := c.ending
			c.mu.Unlock()
			if ending {
				b.Fatal("a socket was dropped as too slow")
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("the peers read %d of %d bytes", read.Load(), want)
		}
	}
	b.StopTimer()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(b.N)/float64(sockets), "allocs/delivery")
	b.ReportMetric(float64(b.N)*float64(sockets)/b.Elapsed().Seconds(), "deliveries/s")
}
