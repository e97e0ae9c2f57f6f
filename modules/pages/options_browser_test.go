package pages_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
)

// TestShowOptionsInBrowser, in real Chromium: the host in New York sees
// the planned end in their zone and saves the studio form untouched but
// for the chat box, which turns the chat off; a listener's open page swaps
// "Sign in to chat" for "the chat is off" without a reload, and back when
// the chat is turned on again through the API.
func TestShowOptionsInBrowser(t *testing.T) {
	t.Parallel()
	br := newBrowser(t)
	env := onairtest.New(t, onairtest.Options{})
	host := newPerson(t, env, "Switch Host")
	start := time.Now().UTC().Add(72 * time.Hour).Truncate(time.Minute)
	end := start.Add(150 * time.Minute)
	created := onairtest.CreateShow(t, env, host.token, map[string]any{"name": "Switch Show",
		"start": start.Format(app.TimeLayout), "ends_at": end.Format(app.TimeLayout)})
	id, showPath := created.ID, created.Path

	hostTab := br.tab()
	ctx, cancel := context.WithTimeout(hostTab, testload.Patience)
	if _, err := chromedp.Call(ctx, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "America/New_York"}); err != nil {
		t.Fatal(err)
	}
	cancel()
	do(t, hostTab,
		chromedp.Navigate(env.URL+path("/signin?next=/studio/shows/%d", id)),
		chromedp.SetValue(chromedp.ID("email"), host.user.Email),
		chromedp.SetValue(chromedp.ID("password"), host.password),
		chromedp.Click(chromedp.CSS(`form.stack button[type=submit]`)),
		chromedp.WaitVisible(chromedp.ID("show-end")),
	)
	ny, _ := time.LoadLocation("America/New_York")
	want := end.In(ny).Format("2006-01-02T15:04")
	waitFor(t, hostTab, "the end in New York time", `document.getElementById('show-end').value === '`+want+`'`)

	listener := br.tab()
	do(t, listener, chromedp.Navigate(env.URL+showPath), chromedp.WaitVisible(chromedp.ID("chat-signin")))
	waitFor(t, listener, "the listener's chat socket", `document.getElementById('chat').hasAttribute('data-connected')`)
	if eval[bool](t, listener, `!document.getElementById('chat-off').hidden`) {
		t.Fatal("the chat reads off while it is on")
	}

	do(t, hostTab,
		chromedp.Click(chromedp.ID("show-chat")),
		chromedp.Click(chromedp.CSS(`.studio-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.ID("saved")),
	)
	waitFor(t, listener, "the chat off without a reload",
		`getComputedStyle(document.getElementById('chat-off')).display !== 'none' && getComputedStyle(document.getElementById('chat-signin')).display === 'none'`)
	sh := onairtest.GetShow(t, env, host.token, id)
	if sh["chat_enabled"] != false || sh["ends_at"] != end.Format(app.TimeLayout) || sh["start"] != start.Format(app.TimeLayout) {
		t.Fatalf("after the studio form: chat_enabled %v ends_at %v start %v", sh["chat_enabled"], sh["ends_at"], sh["start"])
	}

	env.Do("PUT", path("/v1/shows/%d", id), host.token, map[string]any{"chat_enabled": true}).Expect(t, http.StatusOK)
	waitFor(t, listener, "the chat on again without a reload",
		`getComputedStyle(document.getElementById('chat-off')).display === 'none' && getComputedStyle(document.getElementById('chat-signin')).display !== 'none'`)
}
