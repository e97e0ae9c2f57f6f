package live

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// A segment evicted while a request sends it stays readable until that
// request is done; the memory file has the bytes and validators of the
// file it was made from.
func TestMediaCacheSegmentOutlivesEviction(t *testing.T) {
	mod := time.Unix(1700000000, 5)
	data := bytes.Repeat([]byte("0123456789"), 1000)
	mc := newMediaCache(1<<20, 1<<20)
	f := mc.start(7)
	f.Put("seg-000000.ts", data, mod)
	m := mc.get(7, "seg-000000.ts")
	if m == nil || m.size != int64(len(data)) || m.etag != fileETag(mod, int64(len(data))) {
		t.Fatalf("got %+v", m)
	}
	mc.drop(7) // evicted while "sending"
	if m.shm == nil {
		t.Fatal("a segment is not in a memory file")
	}
	body := m.shm.body(nil, 10, int64(len(data))-20)
	got, err := io.ReadAll(body)
	if err != nil || !bytes.Equal(got, data[10:len(data)-10]) {
		t.Fatalf("read %d bytes, %v", len(got), err)
	}
	body.Close()
	body.Close() // once only
	if n := m.shm.refs.Load(); n != 0 {
		t.Fatalf("%d references left", n)
	}
}

// Through a real socket, a memory file's bytes are answered as fasthttp
// sends any body: headers then body, on a kept-alive connection, to
// pipelined requests, for a byte range, a HEAD and an empty body, and a
// body larger than the socket takes at once.
func TestShmBodyOverSocket(t *testing.T) {
	data := make([]byte, 3<<20+17)
	for i := range data {
		data[i] = byte(i * 7)
	}
	f, err := newShm("test", data)
	if err != nil {
		t.Fatal(err)
	}
	defer f.release()
	srv := &fasthttp.Server{Handler: func(fc *fasthttp.RequestCtx) {
		off, _ := strconv.ParseInt(string(fc.QueryArgs().Peek("off")), 10, 64)
		n, _ := strconv.ParseInt(string(fc.QueryArgs().Peek("n")), 10, 64)
		fc.Response.Header.Set("X-Part", "yes")
		f.acquire()
		fc.Response.SetBodyStream(f.body(fc.Conn(), off, n), int(n))
	}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)     //nolint:errcheck // ends with Shutdown
	defer srv.Shutdown() //nolint:errcheck
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second)) //nolint:errcheck // a hang fails the reads
	br := bufio.NewReader(conn)
	type want struct {
		method string
		off, n int64
	}
	cases := [][]want{
		{{"GET", 0, int64(len(data))}},
		{{"GET", 1000, 64 << 10}},
		{{"GET", 5, 0}},
		{{"HEAD", 0, int64(len(data))}},
		// pipelined: written at once, answered in order
		{{"GET", 0, 100}, {"GET", 100, 2 << 20}, {"HEAD", 7, 9}, {"GET", 3 << 20, 17}},
	}
	for _, batch := range cases {
		var reqs bytes.Buffer
		for _, w := range batch {
			fmt.Fprintf(&reqs, "%s /?off=%d&n=%d HTTP/1.1\r\nHost: x\r\n\r\n", w.method, w.off, w.n)
		}
		if _, err := conn.Write(reqs.Bytes()); err != nil {
			t.Fatal(err)
		}
		for _, w := range batch {
			resp, err := http.ReadResponse(br, &http.Request{Method: w.method})
			if err != nil {
				t.Fatalf("%+v: %v", w, err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatalf("%+v: %v", w, err)
			}
			if resp.StatusCode != 200 || resp.Header.Get("X-Part") != "yes" || resp.ContentLength != w.n || resp.Close {
				t.Fatalf("%+v: status %d, headers %v, length %d", w, resp.StatusCode, resp.Header, resp.ContentLength)
			}
			wantBody := data[w.off : w.off+w.n]
			if w.method == "HEAD" {
				wantBody = nil
			}
			if !bytes.Equal(body, wantBody) {
				t.Fatalf("%+v: got %d bytes, not the file's", w, len(body))
			}
		}
	}
}
