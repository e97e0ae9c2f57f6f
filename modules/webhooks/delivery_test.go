package webhooks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/shows"
)

func showsService(t *testing.T, env *onairtest.Env) *shows.Service {
	m, ok := onairtest.Module[*shows.Module](env)
	if !ok {
		t.Fatal("shows module missing")
	}
	return m.Service
}

// A real show's lifecycle reaches the owner's webhook in order, each
// request signed (checked with the Standard Webhooks library), with the
// v1 show object.
func TestShowLifecycleIsDeliveredSigned(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env := newEnv(t, backend)
		rcv := newReceiver(t)
		_, tok := env.CreateUser("Dee Jay")
		_, secret := createWebhook(t, env, tok, rcv.URL, "show.created", "show.updated", "show.live", "show.stopped", "show.archived", "show.deleted")
		svc := showsService(t, env)
		ctx := context.Background()

		id := onairtest.CreateShow(t, env, tok, nil).ID
		env.Do("PUT", fmt.Sprintf("/v1/shows/%d", id), tok, map[string]any{"name": "Night Set II"}).Expect(t, 200)
		video := "/media/shows/" + strconv.FormatInt(id, 10) + "/live.m3u8"
		wentLive := time.Now()
		onairtest.PublishShow(t, env, id, shows.Media{VideoURL: &video})
		got := rcv.waitFor(3)
		if got[2].Event.Type != "show.live" {
			t.Fatalf("third event %s", got[2].Event.Type)
		}
		if lag := got[2].At.Sub(wentLive); lag > 2*time.Second {
			t.Errorf("show.live arrived %s after going live, want within 2 s", lag)
		}
		env.Do("POST", fmt.Sprintf("/v1/shows/%d/stop", id), tok, nil).Expect(t, 200)
		vod := "/media/shows/" + strconv.FormatInt(id, 10) + "/vod.m3u8"
		d := 61 * time.Second
		if _, err := svc.Archive(ctx, id, shows.Media{VideoURL: &vod, Duration: &d}); err != nil {
			t.Fatal(err)
		}
		current := env.Do("GET", fmt.Sprintf("/v1/shows/%d", id), tok, nil).Expect(t, 200).JSON(t)["show"]
		env.Do("DELETE", fmt.Sprintf("/v1/shows/%d", id), tok, nil).Expect(t, 200)

		got = rcv.waitFor(6)
		want := []string{"show.created", "show.updated", "show.live", "show.stopped", "show.archived", "show.deleted"}
		if types := rcv.types(); !slices.Equal(types, want) {
			t.Fatalf("events %v, want %v", types, want)
		}
		ids := map[string]bool{}
		for _, g := range got {
			verify(t, secret, g)
			if ua := g.Header.Get("User-Agent"); !strings.HasPrefix(ua, "OnAir-Webhooks/") {
				t.Fatalf("User-Agent %q", ua)
			}
			if ct := g.Header.Get("Content-Type"); ct != "application/json" {
				t.Fatalf("Content-Type %q", ct)
			}
			if g.Header.Get("webhook-id") != g.Event.ID || !strings.HasPrefix(g.Event.ID, "evt_") || ids[g.Event.ID] {
				t.Fatalf("webhook-id %q, body id %q", g.Header.Get("webhook-id"), g.Event.ID)
			}
			ids[g.Event.ID] = true
			if _, err := time.Parse(time.RFC3339, g.Event.Timestamp); err != nil {
				t.Fatalf("timestamp %q: %v", g.Event.Timestamp, err)
			}
			var body struct {
				Data struct {
					Show map[string]any `json:"show"`
				} `json:"data"`
			}
			if err := json.Unmarshal(g.Body, &body); err != nil {
				t.Fatal(err)
			}
			sh := body.Data.Show
			if sh["id"] != float64(id) || sh["user"] == nil {
				t.Fatalf("%s: show %v", g.Event.Type, sh)
			}
			if _, ok := sh["stream_key"]; ok {
				t.Fatalf("%s carries the stream key", g.Event.Type)
			}
		}
		var live, archived map[string]any
		for _, g := range got {
			var b map[string]map[string]map[string]any
			_ = json.Unmarshal(g.Body, &b)
			switch g.Event.Type {
			case "show.live":
				live = b["data"]["show"]
			case "show.archived":
				archived = b["data"]["show"]
			}
		}
		if live["live"] != true || live["thumbnail_label"] != "Live" || live["video_url"] != env.URL+video {
			t.Fatalf("show.live object %v", live)
		}
		if archived["archive"] != true || archived["duration"] != float64(61) || archived["video_url"] != env.URL+vod {
			t.Fatalf("show.archived object %v", archived)
		}
		// The archived object is the API's object, field for field, but
		// for peak_viewers: the owner's read has it, a payload never.
		if _, ok := archived["peak_viewers"]; ok {
			t.Fatalf("show.archived object carries peak_viewers: %v", archived)
		}
		delete(current.(map[string]any), "peak_viewers")
		a, _ := json.Marshal(archived)
		c, _ := json.Marshal(current)
		if string(a) != string(c) {
			t.Fatalf("show.archived object\n%s\ndiffers from GET /v1/shows/:id\n%s", a, c)
		}
	})
}

// Private shows reach only their owner's webhooks; a staff webhook of
// scope "all" receives every other show's events.
func TestPrivateShowsOnlyReachTheirOwner(t *testing.T) {
	env := newEnv(t, "sqlite")
	owner, staff := newReceiver(t), newReceiver(t)
	_, tok := env.CreateUser("Olive Owner")
	_, admin := env.CreateUser("Ada Admin", onairtest.Role("admin"))
	createWebhook(t, env, tok, owner.URL, "show.created")
	env.Do("POST", "/v1/webhooks", admin, map[string]any{"url": staff.URL, "events": []string{"show.created"}, "scope": "all"}).Expect(t, 201)

	public := onairtest.CreateShow(t, env, tok, nil).ID
	private := onairtest.CreateShow(t, env, tok, map[string]any{"private": true, "name": "Secret Set"}).ID
	mine := onairtest.CreateShow(t, env, admin, map[string]any{"name": "Admin Set"}).ID
	owner.waitFor(2)
	staff.waitFor(2)
	// The last show created reached the staff webhook: the private one,
	// created before it, would have too.
	testload.Poll(t, "admin's own show", func() error {
		for _, g := range staff.all() {
			if showIDOf(t, g) == mine {
				return nil
			}
		}
		return fmt.Errorf("got %d", len(staff.all()))
	})
	for _, g := range staff.all() {
		if strings.Contains(string(g.Body), "Secret Set") {
			t.Fatal("the staff webhook received a private show")
		}
	}
	if n := len(staff.all()); n != 2 {
		t.Fatalf("staff webhook got %d events, want 2 (public %d and admin's %d)", n, public, mine)
	}
	if got := owner.all(); len(got) != 2 || showIDOf(t, got[1]) != private {
		t.Fatalf("owner got %d", len(got))
	}
}

// Chat messages on a user's show and new followers reach the user's
// webhook with the v1 chat and user objects.
func TestChatAndFollowEvents(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env := newEnv(t, backend)
		rcv := newReceiver(t)
		star, tok := env.CreateUser("Stella Star")
		fan, fanTok := env.CreateUser("Fred Fan")
		_, secret := createWebhook(t, env, tok, rcv.URL, "chat.message.created", "chat.message.deleted", "user.followed")
		id := onairtest.CreateShow(t, env, tok, nil).ID
		msg := env.Do("POST", fmt.Sprintf("/v1/shows/%d/chats", id), fanTok, map[string]any{"message": "hello there"}).Expect(t, 201).JSON(t)
		chatID := onairtest.ID(msg["chat"].(map[string]any))
		env.Do("DELETE", fmt.Sprintf("/v1/shows/%d/chats/%d", id, chatID), fanTok, nil).Expect(t, 200)
		env.Do("POST", fmt.Sprintf("/v1/users/%d/follow", star.ID), fanTok, nil).Expect(t, 200)
		env.Do("POST", fmt.Sprintf("/v1/users/%d/follow", star.ID), fanTok, nil).Expect(t, 200) // a repeat is no event
		got := rcv.waitFor(3)
		if types := rcv.types(); !slices.Equal(types, []string{"chat.message.created", "chat.message.deleted", "user.followed"}) {
			t.Fatalf("events %v", types)
		}
		for _, g := range got {
			verify(t, secret, g)
		}
		var created struct {
			Data struct {
				Show map[string]any `json:"show"`
				Chat map[string]any `json:"chat"`
			} `json:"data"`
		}
		_ = json.Unmarshal(got[0].Body, &created)
		if created.Data.Chat["message"] != "hello there" || created.Data.Chat["id"] != float64(chatID) ||
			created.Data.Chat["user"].(map[string]any)["id"] != float64(fan.ID) || created.Data.Show["id"] != float64(id) {
			t.Fatalf("chat.message.created data %s", got[0].Body)
		}
		// The show is as the message left it: counted, then uncounted
		// (the chat moves the count after its subscribers ran; the payload
		// is written once it moved).
		if created.Data.Show["comments_count"] != float64(1) {
			t.Errorf("chat.message.created: the show's comments_count is %v, want 1", created.Data.Show["comments_count"])
		}
		var deleted struct {
			Data struct{ Show map[string]any } `json:"data"`
		}
		_ = json.Unmarshal(got[1].Body, &deleted)
		if deleted.Data.Show["comments_count"] != float64(0) {
			t.Errorf("chat.message.deleted: the show's comments_count is %v, want 0", deleted.Data.Show["comments_count"])
		}
		var followed struct {
			Data struct{ User, Follower map[string]any } `json:"data"`
		}
		_ = json.Unmarshal(got[2].Body, &followed)
		if followed.Data.User["id"] != float64(star.ID) || followed.Data.Follower["id"] != float64(fan.ID) {
			t.Fatalf("user.followed data %s", got[2].Body)
		}
		// The metrics count what was sent.
		resp, err := http.Get(env.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		text, _ := io.ReadAll(resp.Body)
		if !strings.Contains(string(text), `onair_webhook_deliveries_total{result="success"}`) ||
			!strings.Contains(string(text), "onair_webhook_backlog") {
			t.Fatalf("metrics lack the webhook figures")
		}
	})
}

// A staff webhook of scope "all" receives the chat messages of every
// public show, not those of a private one; the chat asks first whether
// any webhook may want a message (mayWant) and must not miss these.
func TestChatReachesScopeAll(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env := newEnv(t, backend)
		staff := newReceiver(t)
		_, ownerTok := env.CreateUser("Cleo Chat")
		_, admin := env.CreateUser("Ava Admin", onairtest.Role("admin"))
		env.Do("POST", "/v1/webhooks", admin, map[string]any{"url": staff.URL, "events": []string{"chat.message.created"}, "scope": "all"}).Expect(t, 201)
		private := onairtest.CreateShow(t, env, ownerTok, map[string]any{"private": true, "name": "Hush"}).ID
		public := onairtest.CreateShow(t, env, ownerTok, nil).ID
		env.Do("POST", fmt.Sprintf("/v1/shows/%d/chats", private), ownerTok, map[string]any{"message": "secret words"}).Expect(t, 201)
		env.Do("POST", fmt.Sprintf("/v1/shows/%d/chats", public), admin, map[string]any{"message": "open words"}).Expect(t, 201)
		got := staff.waitFor(1)
		if showIDOf(t, got[0]) != public || !strings.Contains(string(got[0].Body), "open words") {
			t.Fatalf("the staff webhook got %s", got[0].Body)
		}
		// The private message was posted first and committed before the
		// public one: had it been sent, it would have come first.
		if n := len(staff.all()); n != 1 {
			t.Fatalf("the staff webhook got %d messages, want 1", n)
		}
	})
}
