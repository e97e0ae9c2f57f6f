package live_test

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/live/amf0"
	"github.com/onair/onair/modules/live/flv"
	"github.com/onair/onair/modules/live/rtmp"
)

// rtmpPublisher is an encoder written for the tests: it speaks RTMP with
// the rtmp package's chunk layer and sends exactly the tags a test wants,
// in the order and at the times it wants (which no real encoder can be
// made to do on demand).
type rtmpPublisher struct {
	t  *testing.T
	nc net.Conn
	cw *rtmp.ChunkWriter
	bw *bufio.Writer
	// statuses receives the onStatus objects the server sends after the
	// publish was accepted; it is closed when the connection ends.
	statuses chan map[string]any
}

// dialPublisher connects to base (rtmp://host:port/app) and publishes key,
// returning the publisher and the server's answer to publish.
func dialPublisher(t *testing.T, base, key string) (*rtmpPublisher, map[string]any) {
	t.Helper()
	p, answer, err := connectPublisher(t, base, key)
	if err != nil {
		t.Fatal(err)
	}
	return p, answer
}

// connectPublisher is dialPublisher for goroutines other than the test's:
// it reports failures instead of ending the test. The connection is
// closed when the test ends.
func connectPublisher(t *testing.T, base, key string) (*rtmpPublisher, map[string]any, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, nil, err
	}
	nc, err := net.DialTimeout("tcp", u.Host, 10*time.Second)
	if err != nil {
		return nil, nil, err
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	br, bw := bufio.NewReader(nc), bufio.NewWriter(nc)
	// The simple handshake: C0+C1, read S0+S1+S2, echo S1 as C2.
	c0c1 := make([]byte, 1537)
	c0c1[0] = 3
	rand.Read(c0c1[9:])
	s := make([]byte, 3073)
	if _, err := nc.Write(c0c1); err != nil {
		return nil, nil, err
	}
	if _, err := io.ReadFull(br, s); err != nil {
		return nil, nil, fmt.Errorf("handshake: %w", err)
	}
	if _, err := nc.Write(s[1:1537]); err != nil {
		return nil, nil, err
	}
	p := &rtmpPublisher{t: t, nc: nc, cw: rtmp.NewChunkWriter(bw), bw: bw, statuses: make(chan map[string]any, 8)}
	if err := p.send(rtmp.SetChunkSizeMessage(4096)); err != nil {
		return nil, nil, err
	}
	p.cw.SetChunkSize(4096)
	cr := rtmp.NewChunkReader(br, rtmp.Limits{})
	expect := func(name string) (map[string]any, error) {
		for {
			m, err := cr.ReadMessage()
			if err != nil {
				return nil, fmt.Errorf("waiting for %s: %w", name, err)
			}
			if m.Type != rtmp.TypeCommandAMF0 {
				continue
			}
			vals, _ := amf0.DecodeAll(m.Payload)
			if len(vals) > 0 && vals[0] == name {
				obj, _ := vals[len(vals)-1].(map[string]any)
				return obj, nil
			}
		}
	}
	app := strings.Trim(u.Path, "/")
	steps := []struct {
		streamID uint32
		name     string
		args     []any
		answer   string
	}{
		{0, "connect", []any{map[string]any{"app": app, "tcUrl": base, "type": "nonprivate"}}, "_result"},
		{0, "createStream", []any{nil}, "_result"},
		{1, "publish", []any{nil, key, "live"}, "onStatus"},
	}
	var answer map[string]any
	for i, st := range steps {
		if err := p.command(st.streamID, st.name, float64(i+1), st.args...); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", st.name, err)
		}
		if answer, err = expect(st.answer); err != nil {
			return nil, nil, err
		}
	}
	nc.SetDeadline(time.Time{})
	go func() {
		defer close(p.statuses)
		for {
			m, err := cr.ReadMessage()
			if err != nil {
				return
			}
			if m.Type != rtmp.TypeCommandAMF0 {
				continue
			}
			if vals, _ := amf0.DecodeAll(m.Payload); len(vals) >= 4 && vals[0] == "onStatus" {
				obj, _ := vals[3].(map[string]any)
				p.statuses <- obj
			}
		}
	}()
	return p, answer, nil
}

func (p *rtmpPublisher) send(m *rtmp.Message) error {
	p.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if err := p.cw.WriteMessage(m); err != nil {
		return err
	}
	return p.cw.Flush()
}

// command sends an AMF0 command.
func (p *rtmpPublisher) command(streamID uint32, name string, txn float64, args ...any) error {
	b, err := amf0.Encode(nil, append([]any{name, txn}, args...)...)
	if err != nil {
		return err
	}
	return p.send(&rtmp.Message{ChunkStreamID: 3, Type: rtmp.TypeCommandAMF0, StreamID: streamID, Payload: b})
}

// metadata sends @setDataFrame onMetaData, as encoders do.
func (p *rtmpPublisher) metadata(meta amf0.ECMAArray) error {
	b, err := amf0.Encode(nil, "@setDataFrame", "onMetaData", meta)
	if err != nil {
		return err
	}
	return p.send(&rtmp.Message{ChunkStreamID: 4, Type: rtmp.TypeDataAMF0, StreamID: 1, Payload: b})
}

// tag sends an FLV tag as an RTMP audio or video message.
func (p *rtmpPublisher) tag(t flv.Tag) error {
	csid := uint32(4)
	if t.Type == flv.TagVideo {
		csid = 6
	}
	return p.send(&rtmp.Message{ChunkStreamID: csid, Type: t.Type, StreamID: 1, Timestamp: t.Timestamp, Payload: t.Data})
}

// refusal waits for an onStatus error after publishing started.
func (p *rtmpPublisher) refusal(within time.Duration) map[string]any {
	p.t.Helper()
	timeout := time.After(within)
	for {
		select {
		case st, ok := <-p.statuses:
			if !ok {
				p.t.Fatal("connection closed without an onStatus error")
			}
			if st["level"] == "error" {
				return st
			}
		case <-timeout:
			p.t.Fatalf("no onStatus error within %s", within)
		}
	}
}

// flvTags is a recorded stream: H.264 (or nothing) and AAC from ffmpeg.
type flvTags struct {
	audio, video []flv.Tag // in order; each starts with its sequence header
}

// recordFLV encodes seconds of test pattern and tone into FLV with ffmpeg
// (keyframes every 2 s) and reads its tags.
func recordFLV(t *testing.T, seconds int, videoCodec ...string) flvTags {
	t.Helper()
	path := filepath.Join(t.TempDir(), "rec.flv")
	args := []string{"-hide_banner", "-loglevel", "error",
		"-f", "lavfi", "-i", fmt.Sprintf("testsrc=size=320x240:rate=25:duration=%d", seconds),
		"-f", "lavfi", "-i", fmt.Sprintf("sine=frequency=440:sample_rate=44100:duration=%d", seconds)}
	if len(videoCodec) == 0 {
		videoCodec = []string{"-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-pix_fmt", "yuv420p", "-g", "50"}
	}
	args = append(append(args, videoCodec...), "-c:a", "aac", "-b:a", "96k", "-f", "flv", path)
	if out, err := exec.Command("ffmpeg", args...).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v\n%s", err, out)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := flv.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var rec flvTags
	for {
		tag, err := r.ReadTag()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch tag.Type {
		case flv.TagAudio:
			rec.audio = append(rec.audio, tag)
		case flv.TagVideo:
			rec.video = append(rec.video, tag)
		}
	}
	if len(rec.audio) < 2 || len(rec.video) < 2 {
		t.Fatalf("recording has %d audio and %d video tags", len(rec.audio), len(rec.video))
	}
	return rec
}

// lateVideo returns the recording's tags with the video starting at the
// first keyframe at or after from ms: its sequence header is sent just
// before it, with its timestamp, as an encoder whose video comes late.
func (rec flvTags) lateVideo(from uint32) []flv.Tag {
	header := rec.video[0]
	var video []flv.Tag
	for _, v := range rec.video[1:] {
		if len(video) == 0 && (v.Timestamp < from || v.Data[0]>>4 != flv.FrameKey) {
			continue
		}
		if len(video) == 0 {
			header.Timestamp = v.Timestamp
			video = append(video, header)
		}
		video = append(video, v)
	}
	return mergeTags(rec.audio, video)
}

// mergeTags interleaves two tag lists by timestamp.
func mergeTags(a, b []flv.Tag) []flv.Tag {
	out := make([]flv.Tag, 0, len(a)+len(b))
	for len(a) > 0 || len(b) > 0 {
		if len(b) == 0 || len(a) > 0 && a[0].Timestamp <= b[0].Timestamp {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return out
}

// play sends tags paced on their timestamps, as a live encoder does, and
// stops at the first error (the server refused or cut off the stream).
func (p *rtmpPublisher) play(tags []flv.Tag) error {
	start := time.Now()
	for _, t := range tags {
		if wait := time.Until(start.Add(time.Duration(t.Timestamp) * time.Millisecond)); wait > 0 {
			time.Sleep(wait)
		}
		if err := p.tag(t); err != nil {
			return err
		}
	}
	return nil
}

var segmentURI = regexp.MustCompile(`(?m)^[^#\s].*\.ts$`)

// lastSegment is the URL of the last segment of a live playlist.
func lastSegment(t *testing.T, playlistURL string) string {
	t.Helper()
	status, _, text := fetch(t, playlistURL)
	uris := segmentURI.FindAllString(text, -1)
	if status != 200 || len(uris) == 0 {
		t.Fatalf("playlist %s: %d\n%s", playlistURL, status, text)
	}
	return playlistURL[:strings.LastIndex(playlistURL, "/")+1] + uris[len(uris)-1]
}

// metric reads one sample of /metrics ("name" or `name{label="v"}`).
func metric(t *testing.T, env *onairtest.Env, sample string) float64 {
	t.Helper()
	r := env.Do("GET", "/metrics", "", nil)
	for _, line := range strings.Split(string(r.Body), "\n") {
		if v, ok := strings.CutPrefix(line, sample+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	t.Fatalf("/metrics has no %s", sample)
	return 0
}
