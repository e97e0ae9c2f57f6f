package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/google/uuid"

	"github.com/onair/onair/bench/internal/benchkit"
)

// encodeInput makes the publishers' input: 20 s of a 360p25 test pattern
// and a tone, H.264 at ~500 kb/s with a keyframe every 2 s, AAC 64 kb/s,
// in FLV. The publishers loop it.
func encodeInput(ctx context.Context, dir string) (string, error) {
	out := filepath.Join(dir, "input.flv")
	cmd := exec.CommandContext(ctx, "ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-y",
		"-f", "lavfi", "-i", "testsrc2=size=640x360:rate=25",
		"-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
		"-t", "20",
		"-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p",
		"-b:v", "500k", "-maxrate", "500k", "-bufsize", "1000k",
		"-g", "50", "-keyint_min", "50", "-sc_threshold", "0",
		"-c:a", "aac", "-b:a", "64k", "-ac", "2",
		"-f", "flv", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("encode the input: %w\n%s", err, b)
	}
	return out, nil
}

// load is the traffic of a soak run and its counters.
type load struct {
	c          Config
	srv        *benchkit.Server
	djToken    string
	chatTokens []string
	shows      []benchkit.Show
	input      string
	receiver   *receiver

	segments, parts, playlists, hlsErrors, sessions atomic.Int64
	chatPosted, chatFailed, chatDelivered, wsDials  atomic.Int64
	wsFailed, wsDropped                             atomic.Int64
	updates, updateFailed                           atomic.Int64
	restarts                                        atomic.Int64
}

func (l *load) counters() Counters {
	return Counters{
		Segments: l.segments.Load(), Parts: l.parts.Load(), Playlists: l.playlists.Load(),
		HLSErrors: l.hlsErrors.Load(), Sessions: l.sessions.Load(),
		ChatPosted: l.chatPosted.Load(), ChatFailed: l.chatFailed.Load(),
		ChatDelivered: l.chatDelivered.Load(), WSDials: l.wsDials.Load(),
		WSFailed: l.wsFailed.Load(), WSDropped: l.wsDropped.Load(),
		Updates: l.updates.Load(), UpdateFailed: l.updateFailed.Load(),
		Webhooks: l.receiver.count(), PublisherRestarts: l.restarts.Load(),
	}
}

// problems lists what shows the load itself did not run: a soak that
// served nothing proves nothing. f is the whole run's counters, warm the
// warm-up's: the failures are checked after the warm-up, as the figures
// are (the crowd arriving on a busy machine may hold a request for
// seconds; the failures of the warm-up are in the report).
func (l *load) problems(f, warm Counters) []string {
	var out []string
	if f.Segments == 0 && l.c.HLSViewers > 0 {
		out = append(out, "no HLS segment was fetched")
	}
	if f.Parts == 0 && l.c.HLSViewers >= 5 {
		out = append(out, "no LL-HLS part was fetched")
	}
	errs := f.HLSErrors - warm.HLSErrors
	if fetched := f.Segments + f.Parts + f.Playlists - warm.Segments - warm.Parts - warm.Playlists; errs*100 > fetched {
		out = append(out, fmt.Sprintf("%d HLS requests of %d after the warm-up failed (over 1%%)", errs, fetched+errs))
	}
	if f.ChatPosted == 0 || (f.ChatDelivered == 0 && l.c.ChatViewers > 0) {
		out = append(out, "no chat message was posted and delivered")
	}
	if failed, posted := f.ChatFailed-warm.ChatFailed, f.ChatPosted-warm.ChatPosted; failed*100 > posted {
		out = append(out, fmt.Sprintf("%d chat POSTs of %d after the warm-up failed (over 1%%)", failed, posted+failed))
	}
	if f.Updates == 0 || f.Webhooks < f.Updates {
		out = append(out, fmt.Sprintf("the receiver got %d webhook deliveries for %d show updates", f.Webhooks, f.Updates))
	}
	return out
}

// startPublishers starts one looping ffmpeg publisher per show, restarted
// if it ends before the run does, and waits until every show's live
// playlist lists a segment.
func (l *load) startPublishers(ctx context.Context, wg *sync.WaitGroup) error {
	for _, sh := range l.shows {
		url := "rtmp://" + l.srv.RTMPAddr + "/live/" + sh.StreamKey
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				cmd := exec.CommandContext(ctx, "ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin",
					"-re", "-stream_loop", "-1", "-i", l.input, "-c", "copy", "-f", "flv", url)
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				err := cmd.Run()
				if ctx.Err() != nil {
					return
				}
				l.restarts.Add(1)
				l.c.Log("publisher of show %d ended (%v): %s; restarting", sh.ID, err, strings.TrimSpace(stderr.String()))
				select {
				case <-ctx.Done():
					return
				case <-time.After(2 * time.Second):
				}
			}
		}()
	}
	deadline := time.Now().Add(2 * time.Minute)
	for _, sh := range l.shows {
		for {
			body, err := get(ctx, http.DefaultClient, fmt.Sprintf("%s/media/shows/%d/index.m3u8", l.srv.URL, sh.ID))
			if err == nil && bytes.Contains(body, []byte("#EXTINF")) {
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				return fmt.Errorf("show %d has no live segment after 2 minutes (last: %v)", sh.ID, err)
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	return nil
}

// startViewers starts the HLS viewers, the chat sockets, the chat posting
// and the show updates.
func (l *load) startViewers(ctx context.Context, wg *sync.WaitGroup) {
	for i := range l.c.HLSViewers {
		wg.Add(1)
		go func() { defer wg.Done(); l.hlsViewer(ctx, i) }()
	}
	for i := range l.c.ChatViewers {
		wg.Add(1)
		go func() { defer wg.Done(); l.chatViewer(ctx, i) }()
	}
	wg.Add(2)
	go func() { defer wg.Done(); l.postChat(ctx) }()
	go func() { defer wg.Done(); l.updateShows(ctx) }()
}

// hlsViewer plays show i mod shows like a player: it polls the live media
// playlist and fetches each segment (or, one viewer in five on every show,
// each LL-HLS part) it has not fetched yet near the live edge: of the
// newest two segments or six parts (2 s). A player that fell behind (a
// poll late on a loaded machine) jumps to the edge as a player does, and
// does not ask for parts the server has already dropped. Each session
// lasts 1–5 minutes on connections of its own; then the viewer leaves and
// a new one comes.
func (l *load) hlsViewer(ctx context.Context, i int) {
	sh := l.shows[i%len(l.shows)]
	base := fmt.Sprintf("%s/media/shows/%d/", l.srv.URL, sh.ID)
	parts := (i/len(l.shows))%5 == 4
	pause := time.Second
	if parts {
		pause = 400 * time.Millisecond
	}
	// Viewers arrive over the first seconds, not in one burst.
	if !sleep(ctx, rand.N(5*time.Second)) {
		return
	}
	for ctx.Err() == nil {
		l.sessions.Add(1)
		tr := &http.Transport{MaxIdleConnsPerHost: 2, IdleConnTimeout: time.Minute}
		client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
		end := time.Now().Add(time.Minute + rand.N(4*time.Minute))
		var seen map[string]bool
		for time.Now().Before(end) {
			body, err := get(ctx, client, base+"index.m3u8")
			if ctx.Err() != nil {
				break
			}
			if err != nil {
				l.hlsErrors.Add(1)
				l.c.Log("HLS viewer %d: %v", i, err)
			} else {
				l.playlists.Add(1)
				segs, prts := parsePlaylist(body)
				list, edge, keep := segs, 2, 1
				if parts {
					list, edge, keep = prts, 6, 3
				}
				now := make(map[string]bool, len(list))
				for j, uri := range list {
					now[uri] = true
					// A player joining starts at the live edge, one
					// playing stays near it.
					if seen[uri] || j < len(list)-edge || (seen == nil && j < len(list)-keep) {
						continue
					}
					if _, err := get(ctx, client, base+uri); err != nil {
						if ctx.Err() != nil {
							break
						}
						l.hlsErrors.Add(1)
						l.c.Log("HLS viewer %d: %v", i, err)
					} else if parts {
						l.parts.Add(1)
					} else {
						l.segments.Add(1)
					}
				}
				seen = now
			}
			if !sleep(ctx, pause*4/5+rand.N(pause*2/5)) {
				break
			}
		}
		tr.CloseIdleConnections()
	}
}

// parsePlaylist returns the segment and part URIs of a media playlist.
func parsePlaylist(body []byte) (segments, parts []string) {
	for _, line := range strings.Split(string(body), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "":
		case strings.HasPrefix(line, "#EXT-X-PART:"):
			if _, rest, ok := strings.Cut(line, `URI="`); ok {
				if uri, _, ok := strings.Cut(rest, `"`); ok {
					parts = append(parts, uri)
				}
			}
		case !strings.HasPrefix(line, "#"):
			segments = append(segments, line)
		}
	}
	return segments, parts
}

// get fetches url and reads its body; a status other than 200 is an error.
func get(ctx context.Context, client *http.Client, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %d", url, resp.StatusCode)
	}
	return body, nil
}

var chatCreated = []byte(`{"type":"chat.created"`)

// chatViewer keeps a WebSocket on show i mod shows' room, counting the chat
// messages it receives; it leaves after 30–120 s and comes back as a new
// viewer.
func (l *load) chatViewer(ctx context.Context, i int) {
	sh := l.shows[i%len(l.shows)]
	url := fmt.Sprintf("ws://%s/ws/shows/%d", l.srv.HTTPAddr, sh.ID)
	if !sleep(ctx, rand.N(5*time.Second)) {
		return
	}
	d := websocket.Dialer{
		NetDialContext:   (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		HandshakeTimeout: 20 * time.Second,
	}
	for ctx.Err() == nil {
		h := http.Header{}
		h.Set("Cookie", "onair_viewer="+uuid.NewString())
		conn, _, err := d.DialContext(ctx, url, h)
		if err != nil {
			if ctx.Err() == nil {
				l.wsFailed.Add(1)
				l.c.Log("chat viewer %d: %v", i, err)
				sleep(ctx, time.Second)
			}
			continue
		}
		l.wsDials.Add(1)
		var leaving atomic.Bool
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				_, data, err := conn.ReadMessage()
				if err != nil {
					if !leaving.Load() {
						l.wsDropped.Add(1)
						l.c.Log("chat viewer %d: the server closed the socket: %v", i, err)
					}
					return
				}
				if bytes.HasPrefix(data, chatCreated) {
					l.chatDelivered.Add(1)
				}
			}
		}()
		select {
		case <-ctx.Done():
		case <-done:
		case <-time.After(30*time.Second + rand.N(90*time.Second)):
		}
		leaving.Store(true)
		conn.Close()
		<-done
	}
}

// postChat posts ChatRate messages a second through the REST API, the
// users and shows in turn.
func (l *load) postChat(ctx context.Context) {
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	tick := time.NewTicker(time.Second / time.Duration(l.c.ChatRate))
	defer tick.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	sem := make(chan struct{}, 32)
	begun := time.Now()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		tok := l.chatTokens[n%len(l.chatTokens)]
		sh := l.shows[n%len(l.shows)]
		select {
		case sem <- struct{}{}:
		default:
			l.chatFailed.Add(1) // 32 POSTs outstanding: the server is not keeping up
			l.c.Log("chat POST at %s not sent: 32 outstanding", time.Since(begun).Round(time.Millisecond))
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			sent := time.Now()
			status, err := send(ctx, client, "POST", fmt.Sprintf("%s/v1/shows/%d/chats", l.srv.URL, sh.ID), tok,
				map[string]string{"message": fmt.Sprintf("soak message %d", n)})
			if ctx.Err() != nil {
				return
			}
			took := time.Since(sent)
			if err != nil || status != http.StatusCreated {
				l.chatFailed.Add(1)
				l.c.Log("chat POST at %s: status %d after %s, %v", sent.Sub(begun).Round(time.Millisecond), status, took.Round(time.Millisecond), err)
				return
			}
			if took > time.Second {
				l.c.Log("chat POST at %s took %s", sent.Sub(begun).Round(time.Millisecond), took.Round(time.Millisecond))
			}
			l.chatPosted.Add(1)
		}()
	}
}

// updateShows changes a show's description every UpdateEvery, the shows
// in turn; each change is a show.updated delivery to the receiver.
func (l *load) updateShows(ctx context.Context) {
	client := &http.Client{Timeout: 30 * time.Second}
	tick := time.NewTicker(l.c.UpdateEvery)
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		sh := l.shows[n%len(l.shows)]
		status, err := send(ctx, client, "PUT", fmt.Sprintf("%s/v1/shows/%d", l.srv.URL, sh.ID), l.djToken,
			map[string]string{"description": fmt.Sprintf("soak update %d", n)})
		if ctx.Err() != nil {
			return
		}
		if err != nil || status != http.StatusOK {
			l.updateFailed.Add(1)
			l.c.Log("show update: status %d, %v", status, err)
			continue
		}
		l.updates.Add(1)
	}
}

// send makes a JSON request with a Bearer token and returns the status.
func send(ctx context.Context, client *http.Client, method, url, token string, body any) (int, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(b))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// receiver is the loopback endpoint of the webhook: it counts the
// deliveries and answers 204.
type receiver struct {
	url string
	n   atomic.Int64
	srv *http.Server
}

func startReceiver() (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &receiver{url: "http://" + ln.Addr().String() + "/hook"}
	r.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		io.Copy(io.Discard, req.Body)
		if req.Method == http.MethodPost {
			r.n.Add(1)
		}
		w.WriteHeader(http.StatusNoContent)
	})}
	go func() {
		if err := r.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			panic(err)
		}
	}()
	return r, nil
}

func (r *receiver) count() int64 { return r.n.Load() }
func (r *receiver) close()       { r.srv.Close() }

// sleep waits for d or the end of ctx; it reports whether ctx is still on.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
