package webhooks_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/webhooks"
)

func TestWebhookCRUDAndValidation(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env := newEnv(t, backend)
		_, tok := env.CreateUser("Wendy Hooks")
		_, other := env.CreateUser("Otto Other")
		_, admin := env.CreateUser("Ada Admin", onairtest.Role("admin"))

		// Create: 201, Location, the secret once.
		resp := env.Do("POST", "/v1/webhooks", tok, map[string]any{
			"url": "https://example.com/hooks", "events": []string{"show.live", "show.stopped", "show.live"}, "description": "my bot",
		}).Expect(t, 201)
		w := resp.JSON(t)["webhook"].(map[string]any)
		id := onairtest.ID(w)
		if sec, _ := w["secret"].(string); !strings.HasPrefix(sec, "whsec_") || len(sec) < 6+32 {
			t.Fatalf("secret %q", sec)
		}
		if got := fmt.Sprint(w["events"]); got != "[show.live show.stopped]" {
			t.Fatalf("events %s (duplicates are dropped)", got)
		}
		if w["active"] != true || w["scope"] != "own" || w["description"] != "my bot" {
			t.Fatalf("webhook %v", w)
		}
		if loc := resp.Header.Get("Location"); loc != fmt.Sprintf("%s/v1/webhooks/%d", env.URL, id) {
			t.Fatalf("Location %q", loc)
		}
		path := fmt.Sprintf("/v1/webhooks/%d", id)

		// Reads never show the secret.
		got := env.Do("GET", path, tok, nil).Expect(t, 200).JSON(t)["webhook"].(map[string]any)
		if _, ok := got["secret"]; ok {
			t.Fatal("GET shows the secret")
		}
		list := env.Do("GET", "/v1/webhooks", tok, nil).Expect(t, 200).JSON(t)
		if list["count"] != float64(1) || list["next_url"] != nil || list["prev_url"] != nil {
			t.Fatalf("list %v", list)
		}
		if _, ok := list["webhooks"].([]any)[0].(map[string]any)["secret"]; ok {
			t.Fatal("list shows the secret")
		}

		// Another user sees nothing and can touch nothing.
		if n := env.Do("GET", "/v1/webhooks", other, nil).Expect(t, 200).JSON(t)["count"]; n != float64(0) {
			t.Fatalf("other's count %v", n)
		}
		for _, r := range [][2]string{{"GET", path}, {"PUT", path}, {"DELETE", path}, {"POST", path + "/secret"},
			{"POST", path + "/ping"}, {"GET", path + "/deliveries"}, {"POST", path + "/deliveries/1/retry"}} {
			if code := env.Do(r[0], r[1], other, map[string]any{}).Expect(t, 404).ErrorCode(t); code != "not_found" {
				t.Fatalf("%s %s by another user: %s", r[0], r[1], code)
			}
		}
		env.Do("GET", "/v1/webhooks", "", nil).Expect(t, 401)

		// Update changes the fields sent.
		up := env.Do("PUT", path, tok, map[string]any{"events": "show.created, ping", "active": false}).Expect(t, 200).JSON(t)["webhook"].(map[string]any)
		if fmt.Sprint(up["events"]) != "[show.created ping]" || up["active"] != false || up["url"] != "https://example.com/hooks" {
			t.Fatalf("updated %v", up)
		}
		env.Do("POST", path+"/ping", tok, nil).Expect(t, 409) // disabled
		env.Do("PUT", path, tok, url.Values{"active": {"true"}}).Expect(t, 200)

		// Validation: one row per rule.
		for _, c := range []struct {
			name   string
			body   map[string]any
			status int
			field  string
		}{
			{"no url", map[string]any{"events": []string{"ping"}}, 422, "url"},
			{"ftp url", map[string]any{"url": "ftp://example.com/x", "events": []string{"ping"}}, 422, "url"},
			{"relative url", map[string]any{"url": "/hooks", "events": []string{"ping"}}, 422, "url"},
			{"credentials", map[string]any{"url": "https://bob:secret@example.com/x", "events": []string{"ping"}}, 422, "url"},
			{"user only", map[string]any{"url": "https://bob@example.com/x", "events": []string{"ping"}}, 422, "url"},
			{"bad port", map[string]any{"url": "https://example.com:99999/x", "events": []string{"ping"}}, 422, "url"},
			{"long url", map[string]any{"url": "https://example.com/" + strings.Repeat("a", 2000), "events": []string{"ping"}}, 422, "url"},
			{"no events", map[string]any{"url": "https://example.com/x"}, 422, "events"},
			{"empty events", map[string]any{"url": "https://example.com/x", "events": []string{}}, 422, "events"},
			{"unknown event", map[string]any{"url": "https://example.com/x", "events": []string{"show.live", "show.exploded"}}, 400, ""},
			{"events not strings", map[string]any{"url": "https://example.com/x", "events": []int{1}}, 400, ""},
			{"long description", map[string]any{"url": "https://example.com/x", "events": []string{"ping"}, "description": strings.Repeat("d", 501)}, 422, "description"},
			{"bad scope", map[string]any{"url": "https://example.com/x", "events": []string{"ping"}, "scope": "everything"}, 422, "scope"},
			{"scope all by a user", map[string]any{"url": "https://example.com/x", "events": []string{"ping"}, "scope": "all"}, 403, ""},
			{"active not boolean", map[string]any{"url": "https://example.com/x", "events": []string{"ping"}, "active": "maybe"}, 400, ""},
			{"NUL in url", map[string]any{"url": "https://example.com/\x00", "events": []string{"ping"}}, 422, "url"},
		} {
			t.Run(c.name, func(t *testing.T) {
				r := env.Do("POST", "/v1/webhooks", tok, c.body).Expect(t, c.status)
				body := r.JSON(t)["error"].(map[string]any)
				if c.field != "" {
					if _, ok := body["fields"].(map[string]any)[c.field]; !ok {
						t.Fatalf("fields %v, want %s", body["fields"], c.field)
					}
				}
				if c.name == "unknown event" {
					msg := body["message"].(string)
					for _, want := range []string{`"show.exploded"`, "show.created", "chat.message.created", "user.followed", "ping"} {
						if !strings.Contains(msg, want) {
							t.Fatalf("message %q lacks %s", msg, want)
						}
					}
				}
			})
		}
		env.Do("POST", "/v1/webhooks", tok, "{not json").Expect(t, 400)
		env.Do("GET", "/v1/webhooks/abc", tok, nil).Expect(t, 404)
		env.Do("GET", "/v1/webhooks?page=0", tok, nil).Expect(t, 400)
		env.Do("POST", path+"/deliveries/999/retry", tok, nil).Expect(t, 404)

		// An admin may subscribe to every show.
		all := env.Do("POST", "/v1/webhooks", admin, map[string]any{"url": "https://example.com/all", "events": []string{"show.live"}, "scope": "all"}).Expect(t, 201).JSON(t)
		if all["webhook"].(map[string]any)["scope"] != "all" {
			t.Fatalf("admin webhook %v", all)
		}

		// At most 20 a user: the 21st is refused, and a page holds 20.
		for i := 2; i <= 20; i++ {
			env.Do("POST", "/v1/webhooks", tok, map[string]any{"url": fmt.Sprintf("https://example.com/%d", i), "events": []string{"ping"}}).Expect(t, 201)
		}
		if code := env.Do("POST", "/v1/webhooks", tok, map[string]any{"url": "https://example.com/21", "events": []string{"ping"}}).Expect(t, 409).ErrorCode(t); code != "conflict" {
			t.Fatalf("21st: %s", code)
		}
		page := env.Do("GET", "/v1/webhooks", tok, nil).Expect(t, 200).JSON(t)
		if page["count"] != float64(20) || len(page["webhooks"].([]any)) != 20 || page["pages"] != float64(1) {
			t.Fatalf("page %v %v", page["count"], page["pages"])
		}

		// Delete answers the webhook as it was; then it is gone.
		env.Do("DELETE", path, tok, nil).Expect(t, 200)
		env.Do("GET", path, tok, nil).Expect(t, 404)
		env.Do("POST", "/v1/webhooks", tok, map[string]any{"url": "https://example.com/again", "events": []string{"ping"}}).Expect(t, 201)
	})
}

func TestLoopbackURLsRefusedWithoutTheSetting(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{})
	_, tok := env.CreateUser("Sam Safe")
	for _, u := range []string{"http://127.0.0.1:8080/x", "http://localhost/x", "http://[::1]/x", "http://10.0.0.1/x",
		"http://169.254.169.254/latest/meta-data", "http://192.168.1.1/x", "http://0.0.0.0/x", "http://[fd00::1]/x",
		// Loopback in every spelling a resolver or a browser reads as it.
		"http://0x7f000001/", "http://2130706433/", "http://127.1/", "http://0177.0.0.1/", "http://0x7f.0.0.1/",
		"http://017700000001/", "http://127.0.1/", "http://127.0.0.1./", "http://%31%32%37.0.0.1/", "http://LOCALHOST./x",
		"http://\uff11\uff12\uff17\uff0e\uff10\uff0e\uff10\uff0e\uff11/", "http://[::ffff:127.0.0.1]/", "http://[::ffff:7f00:1]/",
		"http://[2002:7f00:1::]/", "http://[64:ff9b::7f00:1]/", "http://[64:ff9b:1::7f00:1]/", "http://[::127.0.0.1]/",
		"http://[fe80::1%25eth0]/", "http://foo.localhost/",
		// Other special-purpose blocks, and IPv4 in an odd spelling.
		"http://100.64.0.1/", "http://198.18.0.1/", "http://192.0.2.1/", "http://[2001:db8::1]/", "http://[2001::1]/",
		"http://[2002:808:808::]/", "http://0x08080808/", "http://8.8.2056/", "http://1.2.3.256/", "http://1.2.3.4.5/"} {
		r := env.Do("POST", "/v1/webhooks", tok, map[string]any{"url": u, "events": []string{"ping"}}).Expect(t, 422)
		if _, ok := r.JSON(t)["error"].(map[string]any)["fields"].(map[string]any)["url"]; !ok {
			t.Fatalf("%s: no url field", u)
		}
	}
	env.Do("POST", "/v1/webhooks", tok, map[string]any{"url": "https://hooks.example.com/x", "events": []string{"ping"}}).Expect(t, 201)
}

// The address is checked again at delivery time: a webhook whose URL
// reaches loopback (here written straight into the database, as a name
// that resolves to 127.0.0.1 would) is never contacted without
// ONAIR_WEBHOOK_ALLOW_PRIVATE; the attempt records why.
func TestDeliveryRefusesPrivateAddresses(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{Configure: func(c *app.Config) { c.Set(webhooks.SettingPoll, 50*time.Millisecond) }})
	rcv := newReceiver(t)
	_, tok := env.CreateUser("Gus Guard")
	_, port, _ := strings.Cut(strings.TrimPrefix(rcv.URL, "http://"), ":")
	// As stored before the check at creation: the receiver's address, and
	// spellings of it that a resolver reads as 127.0.0.1.
	for _, u := range []string{rcv.URL, "http://0x7f000001:" + port, "http://127.1:" + port} {
		id, _ := createWebhook(t, env, tok, "https://hooks.example.com/x", "ping")
		if _, err := env.Core.DB.NewUpdate().Model((*webhooks.Webhook)(nil)).Set("url = ?", u).Where("id = ?", id).Exec(context.Background()); err != nil {
			t.Fatal(err)
		}
		env.Do("POST", fmt.Sprintf("/v1/webhooks/%d/ping", id), tok, nil).Expect(t, 202)
		var att map[string]any
		testload.Poll(t, "refused attempt", func() error {
			d := deliveries(t, env, tok, id)[0]
			if a := d["attempts"].([]any); len(a) > 0 {
				att = a[0].(map[string]any)
				return nil
			}
			return fmt.Errorf("no attempt")
		})
		// The owner learns that it was refused, not which address it was.
		if e, _ := att["error"].(string); e != "destination refused: private address" || att["status_code"] != nil {
			t.Fatalf("%s: attempt %v", u, att)
		}
	}
	if n := len(rcv.all()); n != 0 {
		t.Fatalf("the receiver on loopback got %d requests", n)
	}
}
