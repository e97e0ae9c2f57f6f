package app_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/onair/onair/internal/onairtest"
)

// TestGzipBombMemory: on a real server process, a 200 MB gzip bomb of
// JSON (about 200 KB on the wire) posted to /v1/shows is refused with 413
// and the server's peak resident memory grows by under 150 MB (it grew
// 1.2 GB when Fiber inflated the whole body).
func TestGzipBombMemory(t *testing.T) {
	t.Parallel()
	p := onairtest.NewProcess(t)
	p.Start()
	p.Run("users", "create", "--name", "Bomb Sender", "--email", "bomb@example.com")
	token := strings.TrimSpace(p.Run("tokens", "create", "--user", "bomb@example.com"))
	bomb := gzipBomb(t, 200<<20)
	t.Logf("the bomb: %d bytes, inflating to 200 MB", len(bomb))
	client := p.Client().Client

	_, before := p.Memory()
	for i := 0; i < 3; i++ {
		status, _, body := post(t, client, "POST", p.URL+"/v1/shows", "application/json", "gzip", bomb, token)
		if status != http.StatusRequestEntityTooLarge || !strings.Contains(body, "body_too_large") {
			t.Fatalf("gzip bomb %d: %d %s, want 413 body_too_large", i, status, body)
		}
	}
	_, after := p.Memory()
	t.Logf("peak RSS %d MB before, %d MB after", before>>20, after>>20)
	if after-before > 150<<20 {
		t.Errorf("the peak RSS grew %d MB, want under 150 MB", (after-before)>>20)
	}
	status, _, body := post(t, client, "POST", p.URL+"/v1/shows", "application/json", "gzip",
		gzipped(t, []byte(`{"name":"After The Bomb","description":"still here"}`)), token)
	if status != http.StatusCreated {
		t.Fatalf("a small gzip body afterwards: %d %s", status, body)
	}
}
