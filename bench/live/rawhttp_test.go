package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// rawConn reads answers as net/http's client would: the body kept or
// drained, X-Onair-Published, the status, one connection for all.
func TestRawConn(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/held.m3u8":
			if r.URL.Query().Get("_HLS_msn") != "7" || r.UserAgent() != "Go-http-client/1.1" {
				http.Error(w, "bad request "+r.URL.RawQuery, http.StatusBadRequest)
				return
			}
			w.Header().Set("X-Onair-Published", "1764355200123456")
			w.Write([]byte("#EXTM3U\n"))
		case "/part.ts":
			w.Header().Set("Content-Length", strconv.Itoa(200<<10)) // as fasthttp sends a body
			w.Write([]byte(strings.Repeat("x", 200<<10)))
		default:
			http.NotFound(w, r)
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	k := &rawConn{addr: host, host: host, timeout: 5 * time.Second}
	for range 3 {
		body, published, arrived, read, err := k.get("/held.m3u8?_HLS_msn=7&_HLS_part=1", true)
		if err != nil || string(body) != "#EXTM3U\n" {
			t.Fatalf("held: %q, %v", body, err)
		}
		if published.UnixMicro() != 1764355200123456 || arrived.IsZero() || read.Before(arrived) {
			t.Errorf("held: published %v, arrived %v, read %v", published, arrived, read)
		}
		body, published, _, _, err = k.get("/part.ts", false)
		if err != nil || body != nil || !published.IsZero() {
			t.Fatalf("part: %d bytes, published %v, %v", len(body), published, err)
		}
	}
	if _, _, _, _, err := k.get("/missing.ts", false); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("missing: %v, want HTTP 404", err)
	}
	if _, _, _, _, err := k.get("/part.ts", false); err != nil {
		t.Errorf("after a 404: %v", err)
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2 (one until the 404, one after)", n)
	}
}
