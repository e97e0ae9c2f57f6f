package live_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/live"
	"github.com/onair/onair/modules/live/flv"
	"github.com/onair/onair/modules/live/hls"
	"github.com/onair/onair/modules/live/streamcore"
)

// rungAVC is a Baseline 3.1 decoder configuration (SPS and PPS) of the
// synthetic pictures the rung tests package.
var rungAVC = []byte{
	0x01, 0x42, 0xC0, 0x0D, 0xFF, 0xE1, 0x00, 0x09,
	0x67, 0x42, 0xC0, 0x0D, 0xD9, 0x41, 0x41, 0xFA, 0x10,
	0x01, 0x00, 0x04, 0x68, 0xCB, 0x83, 0xCB,
}

var (
	rungSegURI  = regexp.MustCompile(`(?m)^v240-\d+\.ts$`)
	rungPartURI = regexp.MustCompile(`(?m)^#EXT-X-PART:DURATION=[0-9.]+,URI="(v240-\d+-p\d+\.ts)"`)
)

// notFound reads an answer that must be the media routes' 404: the JSON
// error body every other missing file gets.
func notFound(resp *http.Response) error {
	defer resp.Body.Close()
	var body struct {
		Error struct {
			Status int    `json:"status"`
			Code   string `json:"code"`
		} `json:"error"`
	}
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &body); err != nil || resp.StatusCode != http.StatusNotFound ||
		body.Error.Status != http.StatusNotFound || body.Error.Code != "not_found" {
		return fmt.Errorf("%d %s, want 404 not_found", resp.StatusCode, raw)
	}
	return nil
}

// TestDroppedRungAnswers404: a rung the ladder gives up (an overloaded
// transcoder, hls.Rung.Close(true)) leaves the master playlist, and its
// media playlist answers 404 at once, as a rendition that disappears
// does elsewhere (hls.js then switches level instead of reloading a
// frozen playlist until its blocking reloads time out): a plain GET
// (through the front and through Fiber), a blocking reload asked after,
// one already held when the rung went (released at once, not after its
// three target durations), and a request for the first part of the next
// segment (held too, as a part a playlist may hint). The
// segments and parts it published stay servable, and the source goes on.
func TestDroppedRungAnswers404(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{})
	m, _ := onairtest.Module[*live.Module](env)
	_, token := env.CreateUser("Ladder Shedder")
	r := env.Do("POST", "/v1/shows", token, map[string]any{"name": "Shed a Rung", "description": "ladder"}).Expect(t, http.StatusCreated)
	id := onairtest.ID(r.JSON(t)["show"].(map[string]any))
	p, err := m.PackageLive(id)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	avc, err := flv.ParseAVCConfig(rungAVC)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Tracks(streamcore.Tracks{Video: &avc}); err != nil {
		t.Fatal(err)
	}
	// 6 s of 25 fps video with a keyframe every 2 s from the source, and
	// the same pictures from the rung: two segments and the third in
	// progress on each.
	rung := p.Rung(240, nil)
	start := time.Now()
	for ms := int64(0); ms < 6000; ms += 40 {
		key := ms%2000 == 0
		nalus := [][]byte{{0x41, 0x9A, 1, 2, 3}}
		if key {
			nalus = [][]byte{{0x65, 0x88, 1, 2, 3, 4}}
		}
		if err := p.Unit(&streamcore.Unit{Video: true, DTS: ms, Key: key, NALUs: nalus, At: start.Add(time.Duration(ms) * time.Millisecond)}); err != nil {
			t.Fatal(err)
		}
	}
	for ms := int64(0); ms < 6000; ms += 40 {
		nalus := [][]byte{{0x41, 0x9A, 1, 2, 3}}
		if ms%2000 == 0 {
			nalus = [][]byte{avc.SPS[0], avc.PPS[0], {0x65, 0x88, 1, 2, 3, 4}}
		}
		if err := rung.Video(ms*90, ms*90, nalus); err != nil {
			t.Fatal(err)
		}
	}

	base := fmt.Sprintf("%s/media/shows/%d/", env.URL, id)
	status, _, master := getText(t, base+hls.MasterAV)
	if status != http.StatusOK || !strings.Contains(master, "v240.m3u8") {
		t.Fatalf("master before the drop %d:\n%s", status, master)
	}
	status, _, list := getText(t, base+"v240.m3u8")
	segs, parts := rungSegURI.FindAllString(list, -1), rungPartURI.FindAllStringSubmatch(list, -1)
	if status != http.StatusOK || len(segs) != 2 || len(parts) == 0 || !strings.HasPrefix(parts[len(parts)-1][1], "v240-000002-") {
		t.Fatalf("the rung's playlist %d, want two segments and parts of the third:\n%s", status, list)
	}
	segment, published := segs[1], parts[len(parts)-1][1]

	// A player on the rung holds a blocking reload for the segment after
	// the one in progress, and one for its first part (the part a
	// playlist hints at a segment's end).
	type answer struct {
		file string
		resp *http.Response
		err  error
		at   time.Time
	}
	waiting := []string{"v240.m3u8?_HLS_msn=3", "v240-000003-p0.ts"}
	held := make(chan answer, len(waiting))
	for _, file := range waiting {
		go func() {
			resp, err := http.Get(base + file)
			held <- answer{file, resp, err, time.Now()}
		}()
	}
	testload.Poll(t, "the rung's requests held", func() error {
		if n := m.Blocking(); n != int64(len(waiting)) {
			return fmt.Errorf("%d held", n)
		}
		return nil
	})

	dropped := time.Now()
	if err := rung.Close(true); err != nil {
		t.Fatal(err)
	}
	for range waiting {
		a := <-held
		if a.err != nil {
			t.Fatal(a.err)
		}
		// Three target durations (6 s) is when it would have timed out.
		if err := notFound(a.resp); err != nil || a.at.Sub(dropped) > 3*time.Second {
			t.Errorf("the held %s: %v, %s after the drop", a.file, err, a.at.Sub(dropped).Round(time.Millisecond))
		}
	}
	if n := m.Blocking(); n != 0 {
		t.Errorf("%d requests still held", n)
	}

	for _, front := range []bool{true, false} {
		m.SetFront(front)
		for _, file := range []string{"v240.m3u8", "v240.m3u8?_HLS_msn=3", "v240.m3u8?_HLS_msn=2&_HLS_part=1",
			"v240.m3u8?_HLS_skip=YES", "v240-000003-p0.ts"} {
			began := time.Now()
			resp, err := http.Get(base + file)
			if err != nil {
				t.Fatal(err)
			}
			if err := notFound(resp); err != nil || time.Since(began) > 3*time.Second {
				t.Errorf("front %v, %s after the drop: %v in %s", front, file, err, time.Since(began).Round(time.Millisecond))
			}
		}
		for _, file := range []string{segment, published, "index.m3u8"} {
			if status, _, body := getText(t, base+file); status != http.StatusOK {
				t.Errorf("front %v, %s after the drop: %d %.200s", front, file, status, body)
			}
		}
	}
	if status, _, master := getText(t, base+hls.MasterAV); status != http.StatusOK || strings.Contains(master, "v240") {
		t.Errorf("master after the drop %d:\n%s", status, master)
	}
	// The source's next part no longer reports the rung.
	for ms := int64(6000); ms < 6400; ms += 40 {
		if err := p.Unit(&streamcore.Unit{Video: true, DTS: ms, NALUs: [][]byte{{0x41, 0x9A, 1, 2, 3}}, At: start.Add(time.Duration(ms) * time.Millisecond)}); err != nil {
			t.Fatal(err)
		}
	}
	if status, _, list := getText(t, base+"index.m3u8"); status != http.StatusOK || strings.Contains(list, "v240") {
		t.Errorf("the source's playlist still reports the rung (%d):\n%s", status, list)
	}
}
