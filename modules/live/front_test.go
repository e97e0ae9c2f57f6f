package live_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/live"
)

// rawGet sends one request on its own connection and returns the raw
// answer, status line, headers in their order and case, and body, with
// the Date header's value blanked.
func rawGet(t *testing.T, addr, method, target string, header ...string) string {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := method + " " + target + " HTTP/1.1\r\nHost: onair.test\r\n"
	for _, h := range header {
		req += h + "\r\n"
	}
	if _, err := io.WriteString(conn, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
	var raw bytes.Buffer
	resp, err := http.ReadResponse(bufio.NewReader(io.TeeReader(conn, &raw)), &http.Request{Method: method})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatal(err)
	}
	return dateLine.ReplaceAllString(raw.String(), "Date: -\r\n")
}

var dateLine = regexp.MustCompile(`Date: [^\r]*\r\n`)

// frontShow makes a public show whose live files are in memory: a live
// playlist, a master playlist and a segment, as a packager puts them.
func frontShow(t *testing.T, env *onairtest.Env, m *live.Module, token, name string) (id int64, seg []byte) {
	t.Helper()
	r := env.Do("POST", "/v1/shows", token, map[string]any{"name": name, "description": "front"}).Expect(t, http.StatusCreated)
	id = onairtest.ID(r.JSON(t)["show"].(map[string]any))
	put := m.HoldLive(id)
	mod := time.Unix(1700000000, 0)
	seg = bytes.Repeat([]byte("\x47front-segment"), 4000)
	put("seg-000000.ts", seg, mod)
	put("index.m3u8", []byte("#EXTM3U\n#EXT-X-VERSION:9\n#EXT-X-TARGETDURATION:2\n#EXTINF:2.000,\nseg-000000.ts\n"), mod)
	put("master.m3u8", []byte("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1000000\nindex.m3u8\n"), mod)
	return id, seg
}

// TestFrontAnswersAsFiber: the server's front answers a public show's live
// files in memory with exactly the bytes Fiber's route answers them with
// (status, headers in order, body; GET and HEAD), counts them in the
// route's metrics and the access log, counts the viewers as the route
// does (up to the per-address cap), and declines, leaving no trace, every
// request it does not answer: those (ranges, validators, queries, other
// paths, a show not cached yet, unknown files) get Fiber's answers.
func TestFrontAnswersAsFiber(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{})
	m, _ := onairtest.Module[*live.Module](env)
	_, token := env.CreateUser("Front Door")
	id, seg := frontShow(t, env, m, token, "Front")
	addr := strings.TrimPrefix(env.URL, "http://")
	base := fmt.Sprintf("/media/shows/%d/", id)

	type req struct {
		method, target string
		header         []string
	}
	answered := []req{}
	for _, f := range []string{"index.m3u8", "master.m3u8", "seg-000000.ts"} {
		for _, method := range []string{"GET", "HEAD"} {
			answered = append(answered, req{method, base + f, []string{"X-Request-Id: front-1", "User-Agent: front-test"}})
		}
	}
	declined := []req{
		{"GET", base + "seg-000000.ts", []string{"X-Request-Id: front-2", "Range: bytes=10-19"}},
		{"GET", base + "seg-000000.ts", []string{"X-Request-Id: front-2", fmt.Sprintf("Range: bytes=%d-", len(seg))}},
		{"GET", base + "index.m3u8", []string{"X-Request-Id: front-2", `If-None-Match: "x"`}},
		{"GET", base + "index.m3u8?_HLS_skip=YES", []string{"X-Request-Id: front-2"}},
		{"GET", base + "index.m3u8?_HLS_msn=bad", []string{"X-Request-Id: front-2"}},
		{"GET", base + "seg-000009.ts", []string{"X-Request-Id: front-2"}},
		{"GET", base + "INDEX.m3u8", []string{"X-Request-Id: front-2"}},
		{"GET", base + "index.txt", []string{"X-Request-Id: front-2"}},
		{"GET", "/media/shows/x/index.m3u8", []string{"X-Request-Id: front-2"}},
		{"GET", "/media/shows/99999/index.m3u8", []string{"X-Request-Id: front-2"}},
		{"GET", "/media/shows/" + strings.Repeat("1", 20) + "/index.m3u8", []string{"X-Request-Id: front-2"}},
		{"GET", base + "t/1.abc/index.m3u8", []string{"X-Request-Id: front-2"}},
		{"GET", "/media/shows/", []string{"X-Request-Id: front-2"}},
		{"GET", "/healthz", []string{"X-Request-Id: front-2"}},
		{"POST", base + "index.m3u8", []string{"X-Request-Id: front-2", "Content-Length: 0"}},
	}
	// The show's visibility is read once, by Fiber's route: the front
	// answers only from the cache.
	rawGet(t, addr, "GET", base+"index.m3u8")

	answer := func(on bool) []string {
		m.SetFront(on)
		var out []string
		for _, r := range append(answered, declined...) {
			out = append(out, rawGet(t, addr, r.method, r.target, r.header...))
		}
		return out
	}
	front, fiber := answer(true), answer(false)
	m.SetFront(true)
	all := append(answered, declined...)
	for i := range all {
		if front[i] != fiber[i] {
			t.Errorf("%s %s %v: the front answered\n%s\nFiber answered\n%s", all[i].method, all[i].target, all[i].header, front[i], fiber[i])
		}
	}
	if !strings.Contains(front[0], "X-Request-Id: front-1\r\n") || !strings.HasPrefix(front[0], "HTTP/1.1 200 OK\r\n") {
		t.Fatalf("GET index.m3u8:\n%s", front[0])
	}
	if !strings.HasSuffix(front[4], string(seg)) {
		t.Error("GET of the segment: not its bytes")
	}

	// Answered by the front: an X-Request-Id made when none came, the
	// route's metrics, the access log line.
	var served atomic.Int32
	m.SetFrontHook(func() { served.Add(1) })
	got := rawGet(t, addr, "GET", base+"index.m3u8", "User-Agent: front-test")
	m.SetFrontHook(nil)
	if n := served.Load(); n != 1 {
		t.Fatalf("the front answered %d requests, not 1", n)
	}
	rid := regexp.MustCompile(`X-Request-Id: ([^\r]+)\r\n`).FindStringSubmatch(got)
	if rid == nil {
		t.Fatalf("no X-Request-Id:\n%s", got)
	}
	if logs := env.Logs(); !strings.Contains(logs, "request_id="+rid[1]) ||
		!regexp.MustCompile(`msg=request method=GET path=`+regexp.QuoteMeta(base)+`index.m3u8 status=200 took=\S+ ip=127.0.0.1 request_id=`+rid[1]).MatchString(logs) {
		t.Errorf("no access log line for request %s:\n%s", rid[1], logs)
	}
	metrics := rawGet(t, addr, "GET", "/metrics")
	if !strings.Contains(metrics, `onair_http_requests_total{method="GET",route="/media/shows/:id/:file",status="200"}`) ||
		!strings.Contains(metrics, `onair_http_requests_total{method="HEAD",route="/media/shows/:id/:file",status="200"}`) {
		t.Error("the front's requests are not in the route's metrics")
	}

	// Viewers: the same count, the per-address cap included, through the
	// front and through Fiber.
	other, _ := frontShow(t, env, m, token, "Fiber")
	for _, show := range []int64{id, other} {
		target := fmt.Sprintf("/media/shows/%d/index.m3u8", show)
		rawGet(t, addr, "GET", target)
		m.SetFront(show == id)
		for i := range 40 {
			rawGet(t, addr, "GET", target, fmt.Sprintf("User-Agent: player-%d", i))
		}
		m.SetFront(true)
	}
	if a, b := m.Viewers(id), m.Viewers(other); a != b || a < 2 || a > 40 {
		t.Errorf("viewers through the front %d, through Fiber %d", a, b)
	}
}

// TestFrontPanic: a panic where the front answers is the recover
// middleware's: logged, 500 in the API's error shape with X-Request-Id,
// and the server goes on serving.
func TestFrontPanic(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{})
	m, _ := onairtest.Module[*live.Module](env)
	_, token := env.CreateUser("Front Panic")
	id, _ := frontShow(t, env, m, token, "Panic")
	addr := strings.TrimPrefix(env.URL, "http://")
	target := fmt.Sprintf("/media/shows/%d/index.m3u8", id)
	rawGet(t, addr, "GET", target)

	m.SetFrontHook(func() { panic("front test panic") })
	got := rawGet(t, addr, "GET", target, "X-Request-Id: front-panic")
	m.SetFrontHook(nil)
	head, body, _ := strings.Cut(got, "\r\n\r\n")
	var shape struct {
		Error struct{ Code, Message string }
	}
	if !strings.HasPrefix(head, "HTTP/1.1 500 ") || !strings.Contains(head+"\r\n", "X-Request-Id: front-panic\r\n") ||
		!strings.Contains(head, "Content-Type: application/json") || strings.Contains(head, "Cache-Control") ||
		json.Unmarshal([]byte(body), &shape) != nil || shape.Error.Code != "internal_error" {
		t.Fatalf("a panic answered (%v):\n%s", json.Unmarshal([]byte(body), &shape), got)
	}
	if logs := env.Logs(); !strings.Contains(logs, `msg=panic path=`+target+` request_id=front-panic panic="front test panic"`) ||
		!strings.Contains(logs, "status=500") {
		t.Errorf("the panic is not logged:\n%s", logs)
	}
	if got := rawGet(t, addr, "GET", target); !strings.HasPrefix(got, "HTTP/1.1 200 OK\r\n") {
		t.Errorf("after the panic:\n%s", got)
	}
}

// TestFrontBehindProxy: behind a trusted proxy the front's client is the
// one X-Forwarded-For names, as for Fiber's routes: in the access log and
// in the viewer count.
func TestFrontBehindProxy(t *testing.T) {
	_, loopback, _ := net.ParseCIDR("127.0.0.0/8")
	env := onairtest.New(t, onairtest.Options{Configure: func(c *app.Config) { c.TrustedProxies = []*net.IPNet{loopback} }})
	m, _ := onairtest.Module[*live.Module](env)
	_, token := env.CreateUser("Front Proxy")
	id, _ := frontShow(t, env, m, token, "Proxied")
	addr := strings.TrimPrefix(env.URL, "http://")
	target := fmt.Sprintf("/media/shows/%d/index.m3u8", id)
	var served atomic.Int32
	m.SetFrontHook(func() { served.Add(1) })
	for _, client := range []string{"203.0.113.7", "198.51.100.9", "203.0.113.7"} {
		rawGet(t, addr, "GET", target, "X-Forwarded-For: "+client, "X-Request-Id: proxied-"+client)
	}
	m.SetFrontHook(nil)
	if n := served.Load(); n != 3 {
		t.Fatalf("the front answered %d of 3", n)
	}
	logs := env.Logs()
	for _, client := range []string{"203.0.113.7", "198.51.100.9"} {
		if !strings.Contains(logs, "ip="+client+" request_id=proxied-"+client) {
			t.Errorf("no access log line of %s:\n%s", client, logs)
		}
	}
	if n := m.Viewers(id); n != 2 {
		t.Errorf("%d viewers, not 2", n)
	}
}
