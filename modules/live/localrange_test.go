package live_test

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/onair/onair/internal/onairtest"
)

// TestLocalMediaRanges: with the default store the working files are
// served as before, now with byte ranges (players seek in archives),
// HEAD and validators.
func TestLocalMediaRanges(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{})
	_, token := env.CreateUser("Range Rover")
	r := env.Do("POST", "/v1/shows", token, map[string]any{"name": "Ranges", "description": "seek"})
	id := onairtest.ID(r.Expect(t, http.StatusCreated).JSON(t)["show"].(map[string]any))
	dir := filepath.Join(env.Core.Config.DataDir, "media", "shows", strconv.FormatInt(id, 10))
	whole := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB: past fasthttp's small-file size
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "seg-000003.ts"), whole, 0o644); err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("%s/media/shows/%d/seg-000003.ts", env.URL, id)
	resp, body := get(t, url, nil, "GET")
	etag := resp.Header.Get("ETag")
	if resp.StatusCode != 200 || !bytes.Equal(body, whole) || etag == "" || resp.Header.Get("Accept-Ranges") != "bytes" ||
		resp.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" {
		t.Fatalf("whole segment: %d, %d bytes, %v", resp.StatusCode, len(body), resp.Header)
	}
	for h, want := range map[string][2]int{
		"bytes=100-299":   {100, 300},
		"bytes=500000-":   {500000, len(whole)},
		"bytes=-70000":    {len(whole) - 70000, len(whole)},
		"bytes=0-5000000": {0, len(whole)},
	} {
		resp, body := get(t, url, http.Header{"Range": {h}}, "GET")
		cr := fmt.Sprintf("bytes %d-%d/%d", want[0], want[1]-1, len(whole))
		if resp.StatusCode != 206 || !bytes.Equal(body, whole[want[0]:want[1]]) || resp.Header.Get("Content-Range") != cr {
			t.Errorf("%s: %d %q, %d bytes", h, resp.StatusCode, resp.Header.Get("Content-Range"), len(body))
		}
	}
	if resp, _ := get(t, url, http.Header{"Range": {"bytes=2000000-"}}, "GET"); resp.StatusCode != 416 {
		t.Errorf("range past the end: %d", resp.StatusCode)
	}
	if resp, body := get(t, url, http.Header{"Range": {"bytes=0-1,4-5"}}, "GET"); resp.StatusCode != 200 || len(body) != len(whole) {
		t.Errorf("several ranges: %d, %d bytes (want the whole body)", resp.StatusCode, len(body))
	}
	if resp, _ := get(t, url, http.Header{"If-None-Match": {etag}}, "GET"); resp.StatusCode != 304 {
		t.Errorf("If-None-Match: %d", resp.StatusCode)
	}
	if resp, body := get(t, url, http.Header{"Range": {"bytes=0-9"}, "If-Range": {`"stale"`}}, "GET"); resp.StatusCode != 200 || len(body) != len(whole) {
		t.Errorf("stale If-Range: %d, %d bytes", resp.StatusCode, len(body))
	}
	if resp, body := get(t, url, nil, "HEAD"); resp.StatusCode != 200 || len(body) != 0 || resp.ContentLength != int64(len(whole)) {
		t.Errorf("HEAD: %d, length %d", resp.StatusCode, resp.ContentLength)
	}
	if resp, _ := get(t, fmt.Sprintf("%s/media/shows/%d/seg-000004.ts", env.URL, id), nil, "GET"); resp.StatusCode != 404 {
		t.Errorf("missing segment: %d", resp.StatusCode)
	}
}
