package pages_test

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/onair/onair/internal/browsertest"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
)

// TestDocsBrowser opens the API reference in Chromium: Redoc, served from
// the binary, renders /v1/openapi.json (an operation's title and its path
// appear), and the page asks nothing of any host but OnAir's own, not even
// a font: every request the tab made, scripts, styles, fonts, the document
// and Redoc's telemetry had it been on, is recorded and checked.
func TestDocsBrowser(t *testing.T) {
	t.Parallel()
	env := onairtest.New(t, onairtest.Options{})
	br := newBrowser(t)
	tab := br.tab()
	self, err := url.Parse(env.URL)
	if err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var requests, elsewhere, violations, console []string
	chromedp.Listen(tab, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			requests = append(requests, ev.Request.URL)
			u, err := url.Parse(ev.Request.URL)
			if err != nil || (u.Scheme != "data" && u.Scheme != "blob" && u.Host != self.Host) {
				elsewhere = append(elsewhere, ev.Request.URL)
			}
		case *cdplog.EventEntryAdded:
			if strings.Contains(ev.Entry.Text, "Content Security Policy") {
				violations = append(violations, ev.Entry.Text)
			}
		case *cdpruntime.EventExceptionThrown:
			console = append(console, "exception: "+ev.ExceptionDetails.Text+" "+func() string {
				if ev.ExceptionDetails.Exception != nil {
					return ev.ExceptionDetails.Exception.Description
				}
				return ""
			}())
		case *cdpruntime.EventConsoleAPICalled:
			for _, a := range ev.Args {
				console = append(console, string(ev.Type)+": "+string(a.Value)+a.Description)
				if s := string(a.Value); strings.Contains(s, "Content Security Policy") {
					violations = append(violations, s)
				}
			}
		}
	})

	do(t, tab, chromedp.Navigate(env.URL+"/"))
	if href := eval[string](t, tab, `(document.querySelector('footer a[href="/docs"]') || {}).textContent || ''`); href != "API reference" {
		t.Errorf("the footer links the reference as %q", href)
	}
	do(t, tab, chromedp.Navigate(env.URL+"/docs"))
	// The menu lists the document's tags; the shows tag opens on its
	// operations, POST /v1/shows's summary among them.
	waitFor(t, tab, "Redoc to render the menu", `!!document.querySelector('#api-reference a[href="#/shows"]')`)
	do(t, tab, chromedp.Click(chromedp.CSS(`#api-reference a[href="#/shows"]`)))
	waitFor(t, tab, "Redoc to render the shows operations", `document.getElementById('api-reference').innerText.includes('Create a show owned by the caller')`)
	if title := eval[string](t, tab, `document.title`); !strings.Contains(title, "API reference") {
		t.Errorf("the reference's title is %q", title)
	}
	shotDocs(t, tab, env.URL+"/docs")
	mu.Lock()
	defer mu.Unlock()
	if len(elsewhere) > 0 {
		t.Errorf("the reference made requests to other hosts: %q", elsewhere)
	}
	if len(violations) > 0 {
		t.Errorf("Content-Security-Policy violations: %q", violations)
	}
	sawSpec := false
	for _, r := range requests {
		sawSpec = sawSpec || strings.HasSuffix(r, "/v1/openapi.json")
	}
	if !sawSpec {
		t.Errorf("the reference never fetched /v1/openapi.json; requests: %q", requests)
	}
	t.Logf("the reference made %d requests, all to %s", len(requests), self.Host)
}

// shotDocs keeps a screenshot of the reference, at a desktop width.
func shotDocs(t *testing.T, tab context.Context, url string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, testload.Patience)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot %s: %v", url, err)
	}
	if err := os.WriteFile(filepath.Join(browsertest.ArtifactDir(t, "pages"), "docs-desktop.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDocsPage checks /docs without a browser: its policy allows no script
// from elsewhere and no inline script, and the page names the document.
func TestDocsPage(t *testing.T) {
	t.Parallel()
	env := onairtest.New(t, onairtest.Options{})
	r := env.Do("GET", "/docs", "", nil).Expect(t, http.StatusOK)
	csp := r.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "script-src 'self';") || strings.Contains(csp, "unsafe-eval") || strings.Contains(csp, "http") {
		t.Errorf("/docs Content-Security-Policy: %q", csp)
	}
	body := string(r.Body)
	if strings.Contains(body, "<script>") || strings.Contains(body, "<script type=\"module\">") {
		t.Error("/docs has an inline script")
	}
	for _, want := range []string{`href="/v1/openapi.json"`, `/static/redoc.standalone.js?v=`, `type="module"`} {
		if !strings.Contains(body, want) {
			t.Errorf("/docs lacks %s", want)
		}
	}
	license := env.Do("GET", "/static/redoc.LICENSE", "", nil).Expect(t, http.StatusOK)
	if !strings.Contains(string(license.Body), "MIT") {
		t.Error("Redoc's licence is not served beside it")
	}
}
