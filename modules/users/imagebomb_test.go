package users_test

import (
	"bytes"
	"image"
	"image/png"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
)

// bombPNG is a PNG of w×h pixels that compresses to almost nothing:
// 16 bits a channel (NRGBA64) or 8 (NRGBA).
func bombPNG(t *testing.T, w, h int, wide bool) []byte {
	t.Helper()
	var img image.Image = image.NewNRGBA(image.Rect(0, 0, w, h))
	if wide {
		img = image.NewNRGBA64(image.Rect(0, 0, w, h))
	}
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// profileForm is a multipart PUT /v1/users/me with data as avatar and
// cover.
func profileForm(data []byte) (string, []byte) {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for _, field := range []string{"avatar", "cover"} {
		fw, _ := mw.CreateFormFile(field, field+".png")
		fw.Write(data)
	}
	mw.Close()
	return mw.FormDataContentType(), body.Bytes()
}

// TestImageBombsMemory: six profile updates at once on a real server
// process, each sending as avatar and cover a ~310 KB PNG that decodes to
// 320 MB (6320×6320, 16 bits a channel): every answer is 200, a 4xx or a
// 503 (never a 500), the server's peak resident memory stays under
// 800 MB (it reached 4.5 GB when each decoded at once), and it answers
// afterwards. With the default budget (256 MB) such an image is refused
// from its header; with an 8-bit image of the same size (160 MB), which
// fits the budget once but not twice, the decodes take turns and those
// that wait too long get 503 with Retry-After.
func TestImageBombsMemory(t *testing.T) {
	t.Parallel()
	testload.Heavy(t) // a few hundred MB and both cores for a while
	for _, tc := range []struct {
		name string
		wide bool
		want map[int]bool
	}{
		{"16-bit, past the budget", true, map[int]bool{http.StatusUnprocessableEntity: true}},
		{"8-bit, one decode at a time", false, map[int]bool{http.StatusOK: true, http.StatusServiceUnavailable: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := bombPNG(t, 6320, 6320, tc.wide)
			t.Logf("the PNG: %d KB", len(img)>>10)
			p := onairtest.NewProcess(t)
			p.Start()
			p.Run("users", "create", "--name", "Image Bomber", "--email", "bomber@example.com")
			token := strings.TrimSpace(p.Run("tokens", "create", "--user", "bomber@example.com"))
			client := &http.Client{Timeout: testload.Patience}
			put := func(contentType string, body []byte) (int, http.Header, string) {
				req, _ := http.NewRequest("PUT", p.URL+"/v1/users/me", bytes.NewReader(body))
				req.Header.Set("Content-Type", contentType)
				req.Header.Set("Authorization", "Bearer "+token)
				resp, err := client.Do(req)
				if err != nil {
					return 0, nil, err.Error()
				}
				defer resp.Body.Close()
				data, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, resp.Header, string(data)
			}
			contentType, body := profileForm(img)

			start := time.Now()
			var wg sync.WaitGroup
			var mu sync.Mutex
			statuses := map[int]int{}
			for i := 0; i < 6; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					status, h, text := put(contentType, body)
					mu.Lock()
					defer mu.Unlock()
					statuses[status]++
					if !tc.want[status] {
						t.Errorf("answer %d: %s", status, text)
					}
					if status == http.StatusServiceUnavailable && h.Get("Retry-After") == "" {
						t.Errorf("503 without Retry-After: %s", text)
					}
				}()
			}
			wg.Wait()
			rss, peak := p.Memory()
			t.Logf("answers %v in %s; RSS %d MB now, peak %d MB", statuses, time.Since(start).Round(time.Millisecond), rss>>20, peak>>20)
			if peak > 800<<20 {
				t.Errorf("peak RSS %d MB, want under 800 MB", peak>>20)
			}
			small, smallBody := profileForm(bombPNG(t, 64, 64, false))
			if status, _, text := put(small, smallBody); status != http.StatusOK {
				t.Fatalf("a small avatar and cover afterwards: %d %s", status, text)
			}
			if !tc.wide && statuses[http.StatusOK] == 0 {
				t.Errorf("no upload of an image within the budget succeeded: %v", statuses)
			}
		})
	}
}
