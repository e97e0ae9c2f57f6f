package notify_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/broadcasttest"
	"github.com/onair/onair/internal/mailtest"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/notify"
	"github.com/onair/onair/modules/shows"
	"github.com/onair/onair/modules/users"
)

// withSMTP boots OnAir mailing through a test SMTP server.
func withSMTP(t *testing.T, backend string, configure func(c *app.Config)) (*onairtest.Env, *mailtest.Server) {
	smtp := mailtest.Start(t, mailtest.Options{})
	env := onairtest.New(t, onairtest.Options{Backend: backend, Configure: func(c *app.Config) {
		c.Set(users.SettingSMTPURL, smtp.URL)
		if configure != nil {
			configure(c)
		}
	}})
	return env, smtp
}

// settled waits until every go-live job is expanded and no mail is
// pending, and returns the mails' states.
func settled(t *testing.T, env *onairtest.Env, showID int64) map[string]int {
	t.Helper()
	states := map[string]int{}
	testload.Poll(t, "go-live mails settled", func() error {
		ctx := context.Background()
		var jobs []notify.Job
		if err := env.Core.DB.NewSelect().Model(&jobs).Where("show_id = ?", showID).Scan(ctx); err != nil {
			return err
		}
		if len(jobs) != 1 || jobs[0].ExpandedAt == nil {
			return fmt.Errorf("jobs %v", jobs)
		}
		var mails []notify.Mail
		if err := env.Core.DB.NewSelect().Model(&mails).Where("show_id = ?", showID).Scan(ctx); err != nil {
			return err
		}
		clear(states)
		for _, m := range mails {
			states[m.Status]++
		}
		if states[notify.StatusPending] > 0 {
			return fmt.Errorf("mails %v", states)
		}
		return nil
	})
	return states
}

// TestGoLiveMail: a DJ goes live over RTMP; the one follower who wants it
// gets one mail naming the show and the DJ with the RFC 8058 headers (not
// the follower who turned this follow off, nor the one who turned the
// account off, nor the suspended one); a reconnect inside the window
// sends no second mail; the one-click link turns the follow's mails off,
// and a new follow turns them on again.
func TestGoLiveMail(t *testing.T) {
	broadcasttest.Require(t)
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env, smtp := withSMTP(t, backend, nil)
		dj, djToken := env.CreateUser("Dee Jay")
		fan, fanToken := env.CreateUser("Fan One")
		_, mutedToken := env.CreateUser("Fan Muted")
		_, quietToken := env.CreateUser("Fan Quiet")
		gone, goneToken := env.CreateUser("Fan Gone")
		follow := fmt.Sprintf("/v1/users/%d/follow", dj.ID)
		for _, tok := range []string{fanToken, mutedToken, quietToken, goneToken} {
			env.Do("POST", follow, tok, nil).Expect(t, http.StatusOK)
		}
		if got := env.Do("GET", follow, fanToken, nil).Expect(t, http.StatusOK).JSON(t)["follow"]; got.(map[string]any)["notify"] != true {
			t.Fatalf("a new follow: %v", got)
		}
		env.Do("PUT", follow, mutedToken, map[string]any{"notify": false}).Expect(t, http.StatusOK)
		if got := env.Do("PUT", "/v1/notifications", quietToken, map[string]any{"go_live_mail": false}).Expect(t, http.StatusOK).JSON(t); got["notifications"].(map[string]any)["go_live_mail"] != false {
			t.Fatalf("account switch: %v", got)
		}
		um, _ := onairtest.Module[*users.Module](env)
		if _, err := um.Service.SetSuspended(context.Background(), gone.ID, true); err != nil {
			t.Fatal(err)
		}

		var resumed atomic.Bool
		shows.From(env.Core).Subscribe(func(_ context.Context, ev shows.Event) {
			if ev.Type == shows.EventResumed {
				resumed.Store(true)
			}
		})
		b := onairtest.CreateShow(t, env, djToken, map[string]any{"name": "Friday Night Set"})
		done := broadcasttest.Publish(t, b, 3, true)
		live := b.Await(t, "live", func(s map[string]any) bool { return s["live"] == true })

		msg := smtp.Next()
		if len(msg.To) != 1 || msg.To[0] != fan.Email {
			t.Fatalf("mail to %v, want only %s", msg.To, fan.Email)
		}
		subject := msg.Mail.Header.Get("Subject")
		if !strings.Contains(subject, "Friday Night Set") || !strings.Contains(subject, "Dee Jay") {
			t.Errorf("subject %q does not name the show and the DJ", subject)
		}
		if !strings.Contains(msg.Body, live["url"].(string)) {
			t.Errorf("body does not link %s:\n%s", live["url"], msg.Body)
		}
		if got := msg.Mail.Header.Get("List-Unsubscribe-Post"); got != "List-Unsubscribe=One-Click" {
			t.Errorf("List-Unsubscribe-Post %q", got)
		}
		unsub := strings.Trim(msg.Mail.Header.Get("List-Unsubscribe"), "<>")
		if !strings.HasPrefix(unsub, env.URL+"/unsubscribe/") {
			t.Fatalf("List-Unsubscribe %q", msg.Mail.Header.Get("List-Unsubscribe"))
		}

		// The publisher drops and comes back inside the reconnect window.
		broadcasttest.Wait(t, done)
		broadcasttest.Wait(t, broadcasttest.Publish(t, b, 2, true))
		testload.Poll(t, "the show resumed", func() error {
			if !resumed.Load() {
				return fmt.Errorf("no resumed event")
			}
			return nil
		})
		states := settled(t, env, b.ID)
		if states[notify.StatusSent] != 1 || states[notify.StatusSkipped] != 3 || len(states) != 2 {
			t.Errorf("mails of the show: %v, want 1 sent and 3 skipped", states)
		}
		if more := smtp.Waiting(); len(more) != 0 {
			t.Errorf("%d more mails, the first to %v", len(more), more[0].To)
		}

		// A GET of the link (a mail scanner) changes nothing; the
		// one-click POST turns this follow's mails off.
		resp, err := http.Get(unsub)
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), `method="post"`) {
			t.Fatalf("unsubscribe page: %d\n%s", resp.StatusCode, page)
		}
		if got := env.Do("GET", follow, fanToken, nil).JSON(t)["follow"].(map[string]any)["notify"]; got != true {
			t.Fatalf("a GET of the link turned the mails off")
		}
		resp, err = http.Post(unsub, "application/x-www-form-urlencoded", strings.NewReader("List-Unsubscribe=One-Click"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("one-click POST: %d", resp.StatusCode)
		}
		if got := env.Do("GET", follow, fanToken, nil).JSON(t)["follow"].(map[string]any)["notify"]; got != false {
			t.Errorf("after the one-click unsubscribe notify is %v", got)
		}
		if resp, _ := http.Post(unsub+"0", "application/x-www-form-urlencoded", nil); resp.StatusCode != http.StatusNotFound {
			t.Errorf("a forged link: %d", resp.StatusCode)
		}
		// Unfollow and follow again: a new follow mails again.
		env.Do("DELETE", follow, fanToken, nil).Expect(t, http.StatusOK)
		env.Do("POST", follow, fanToken, nil).Expect(t, http.StatusOK)
		if got := env.Do("GET", follow, fanToken, nil).JSON(t)["follow"].(map[string]any)["notify"]; got != true {
			t.Errorf("a new follow after an unsubscribe: notify %v", got)
		}
	})
}

// goLive puts a show live through the lifecycle (what the live module
// does when a publisher connects), without media.
func goLive(t *testing.T, env *onairtest.Env, token, name string) int64 {
	t.Helper()
	id := onairtest.CreateShow(t, env, token, map[string]any{"name": name, "description": "d"}).ID
	u := "/media/shows/x/master.m3u8"
	onairtest.PublishShow(t, env, id, shows.Media{AudioURL: &u})
	return id
}

// TestMailRate: ONAIR_NOTIFY_MAIL_RATE paces the mails: at 120 a minute,
// three mails take at least a second.
func TestMailRate(t *testing.T) {
	env, smtp := withSMTP(t, "", func(c *app.Config) { c.Set(notify.SettingMailRate, 120) })
	dj, djToken := env.CreateUser("Rate DJ")
	for i := range 3 {
		_, tok := env.CreateUser(fmt.Sprintf("Listener %d", i))
		env.Do("POST", fmt.Sprintf("/v1/users/%d/follow", dj.ID), tok, nil).Expect(t, http.StatusOK)
	}
	goLive(t, env, djToken, "Paced")
	var at []time.Time
	for range 3 {
		smtp.Next()
		at = append(at, time.Now())
	}
	if span := at[2].Sub(at[0]); span < 900*time.Millisecond {
		t.Errorf("three mails within %s at 120 a minute", span)
	}
}

// TestNoSMTPNoMail: without ONAIR_SMTP_URL a go-live queues nothing.
func TestNoSMTPNoMail(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{})
	dj, djToken := env.CreateUser("Silent DJ")
	_, tok := env.CreateUser("Listener")
	env.Do("POST", fmt.Sprintf("/v1/users/%d/follow", dj.ID), tok, nil).Expect(t, http.StatusOK)
	goLive(t, env, djToken, "Unheard")
	n, err := env.Core.DB.NewSelect().Model((*notify.Job)(nil)).Count(context.Background())
	if err != nil || n != 0 {
		t.Errorf("%d jobs queued without SMTP (%v)", n, err)
	}
}

// TestFollowSwitchErrors: the follow switch answers bad input in the
// error shape.
func TestFollowSwitchErrors(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{})
	dj, _ := env.CreateUser("Some DJ")
	_, tok := env.CreateUser("Listener")
	follow := fmt.Sprintf("/v1/users/%d/follow", dj.ID)
	for _, tc := range []struct {
		name, path string
		body       any
		status     int
	}{
		{"not following", follow, map[string]any{"notify": false}, http.StatusNotFound},
		{"no such user", "/v1/users/999999/follow", map[string]any{"notify": false}, http.StatusNotFound},
		{"not a user id", "/v1/users/abc/follow", map[string]any{"notify": false}, http.StatusNotFound},
	} {
		if r := env.Do("PUT", tc.path, tok, tc.body); r.Status != tc.status {
			t.Errorf("%s: %d %s", tc.name, r.Status, r.Body)
		}
	}
	env.Do("POST", follow, tok, nil).Expect(t, http.StatusOK)
	for _, tc := range []struct {
		name   string
		body   any
		status int
	}{
		{"notify missing", map[string]any{}, http.StatusUnprocessableEntity},
		{"notify not a boolean", map[string]any{"notify": "maybe"}, http.StatusBadRequest},
		{"notify true", map[string]any{"notify": true}, http.StatusOK},
	} {
		if r := env.Do("PUT", follow, tok, tc.body); r.Status != tc.status {
			t.Errorf("%s: %d %s", tc.name, r.Status, r.Body)
		}
	}
	if r := env.Do("PUT", "/v1/notifications", tok, map[string]any{"go_live_mail": 3}); r.Status != http.StatusBadRequest {
		t.Errorf("go_live_mail 3: %d %s", r.Status, r.Body)
	}
	if resp, err := http.Post(env.URL+"/unsubscribe/1-2-nothex", "text/plain", nil); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("a malformed unsubscribe link: %v %v", resp, err)
	}
}
