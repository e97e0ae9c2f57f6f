// Package browsertest starts the headless Chromium of the browser suites
// (the console's and the public pages') and says where their screenshots
// go. Chromium is Debian's, installed by .ci/run; a suite is skipped only
// when no Chromium is on the PATH, and fails instead under CI
// (testload.Skip).
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/onair/onair/internal/testload"
)

// Start waits for the machine's turn of the heavy tests (a browser
// rendering and playing video must not share the CPU with another media or
// browser suite; see testload.Heavy), then launches a headless Chromium
// with a fresh profile, ready to drive, and stops it when the test ends.
// The flags are those this machine's closed network needs (no background
// connections, no updates, no sync).
func Start(t testing.TB, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	path := Path(t)
	testload.Heavy(t)
	opts := append([]chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.WindowSize(1280, 800),
	}, extra...)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// The first run starts the browser and must have no time limit: the
	// end of its context would stop the browser.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// Path finds Chromium or skips the test (fails it under CI).
func Path(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	testload.Skip(t, "chromium is not on PATH")
	return ""
}

// ArtifactDir is where a suite's screenshots go:
// $ONAIR_TEST_ARTIFACTS/<suite>, or test-artifacts/<suite> at the
// repository root (ignored by git).
func ArtifactDir(t testing.TB, suite string) string {
	t.Helper()
	root := os.Getenv("ONAIR_TEST_ARTIFACTS")
	if root == "" {
		wd, _ := os.Getwd()
		root = filepath.Join(wd, "test-artifacts")
		for d := wd; filepath.Dir(d) != d; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
				root = filepath.Join(d, "test-artifacts")
				break
			}
		}
	}
	dir := filepath.Join(root, suite)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
