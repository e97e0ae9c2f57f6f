package restream_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/restream"
	"github.com/onair/onair/modules/webhooks"
)

const ytKey = "abcd-efgh-ijkl-mnop-wxyz"

// TestDestinationsCRUD: create answers 201 with the key masked; list,
// get, update and delete are the owner's only; the stored row holds no
// key in clear.
func TestDestinationsCRUD(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env := onairtest.New(t, onairtest.Options{Backend: backend})
		_, tok := env.CreateUser("Dee Jay")
		_, other := env.CreateUser("Other Person")

		r := env.Do("POST", "/v1/destinations", tok, map[string]any{"name": "YouTube", "url": "rtmp://a.rtmp.youtube.com/live2/" + ytKey}).Expect(t, http.StatusCreated)
		if strings.Contains(string(r.Body), ytKey) || strings.Contains(string(r.Body), "mnop") {
			t.Fatalf("the key in clear in the answer: %s", r.Body)
		}
		d := r.JSON(t)["destination"].(map[string]any)
		if d["url"] != "rtmp://a.rtmp.youtube.com/live2/••••wxyz" || d["enabled"] != true || d["name"] != "YouTube" {
			t.Fatalf("destination %v", d)
		}
		if r.Header.Get("Location") != d["object_url"] {
			t.Errorf("Location %q, object_url %v", r.Header.Get("Location"), d["object_url"])
		}
		id := onairtest.ID(d)
		path := fmt.Sprintf("/v1/destinations/%d", id)

		list := env.Do("GET", "/v1/destinations", tok, nil).Expect(t, http.StatusOK)
		if strings.Contains(string(list.Body), ytKey) {
			t.Fatalf("key in the list: %s", list.Body)
		}
		if l := list.JSON(t); l["count"] != float64(1) || len(l["destinations"].([]any)) != 1 {
			t.Fatalf("list %v", l)
		}
		if l := env.Do("GET", "/v1/destinations", other, nil).Expect(t, http.StatusOK).JSON(t); l["count"] != float64(0) {
			t.Fatalf("another user's list %v", l)
		}
		env.Do("GET", path, other, nil).Expect(t, http.StatusNotFound)
		env.Do("PUT", path, other, map[string]any{"name": "Mine"}).Expect(t, http.StatusNotFound)
		env.Do("DELETE", path, other, nil).Expect(t, http.StatusNotFound)
		env.Do("GET", "/v1/destinations", "", nil).Expect(t, http.StatusUnauthorized)

		// The row: no key in clear, and it opens only with the install's secret.
		var row restream.Destination
		if err := env.Core.DB.NewSelect().Model(&row).Where("id = ?", id).Scan(t.Context()); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(row.Key+row.Prefix+row.Hint, ytKey) || strings.Contains(row.Key, "mnop") {
			t.Fatalf("the key is stored in clear: %+v", row)
		}

		// Update: the masked URL sent back keeps the key; a new key replaces it.
		g := env.Do("PUT", path, tok, map[string]any{"name": "YouTube backup", "url": "rtmp://b.rtmp.youtube.com/live2/••••wxyz", "enabled": false}).
			Expect(t, http.StatusOK).JSON(t)["destination"].(map[string]any)
		if g["url"] != "rtmp://b.rtmp.youtube.com/live2/••••wxyz" || g["enabled"] != false || g["name"] != "YouTube backup" {
			t.Fatalf("after update %v", g)
		}
		var after restream.Destination
		env.Core.DB.NewSelect().Model(&after).Where("id = ?", id).Scan(t.Context())
		if after.Key != row.Key {
			t.Errorf("the masked URL changed the stored key")
		}
		g = env.Do("PUT", path, tok, map[string]any{"url": "rtmps://live.twitch.tv:443/app/live_123"}).Expect(t, http.StatusOK).JSON(t)["destination"].(map[string]any)
		if g["url"] != "rtmps://live.twitch.tv:443/app/••••" {
			t.Fatalf("a short key is masked whole: %v", g["url"])
		}
		got := env.Do("GET", path, tok, nil).Expect(t, http.StatusOK).JSON(t)["destination"].(map[string]any)
		if got["url"] != g["url"] || got["name"] != "YouTube backup" {
			t.Fatalf("get %v", got)
		}
		env.Do("DELETE", path, tok, nil).Expect(t, http.StatusOK)
		env.Do("GET", path, tok, nil).Expect(t, http.StatusNotFound)
		env.Do("GET", "/v1/destinations/x", tok, nil).Expect(t, http.StatusNotFound)
	})
}

// TestDestinationsRefused: bad input is 422 in the error shape, naming the
// field.
func TestDestinationsRefused(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{})
	_, tok := env.CreateUser("Dee Jay")
	for _, tc := range []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"ftp URL", map[string]any{"name": "x", "url": "ftp://example.com/live/key"}, "url"},
		{"http URL", map[string]any{"name": "x", "url": "https://example.com/live/key"}, "url"},
		{"missing key", map[string]any{"name": "x", "url": "rtmp://a.rtmp.youtube.com/live2/"}, "url"},
		{"missing key and app", map[string]any{"name": "x", "url": "rtmp://a.rtmp.youtube.com/key"}, "url"},
		{"no host", map[string]any{"name": "x", "url": "rtmp:///live/key"}, "url"},
		{"loopback", map[string]any{"name": "x", "url": "rtmp://127.0.0.1/live/key"}, "url"},
		{"loopback spelled oddly", map[string]any{"name": "x", "url": "rtmp://0x7f000001/live/key"}, "url"},
		{"private", map[string]any{"name": "x", "url": "rtmp://10.1.2.3:1935/live/key"}, "url"},
		{"localhost", map[string]any{"name": "x", "url": "rtmp://localhost/live/key"}, "url"},
		{"metadata", map[string]any{"name": "x", "url": "rtmp://[fd00:ec2::254]/live/key"}, "url"},
		{"credentials", map[string]any{"name": "x", "url": "rtmp://u:p@example.com/live/key"}, "url"},
		{"masked key on create", map[string]any{"name": "x", "url": "rtmp://example.com/live/••••"}, "url"},
		{"no URL", map[string]any{"name": "x"}, "url"},
		{"no name", map[string]any{"url": "rtmp://example.com/live/key"}, "name"},
		{"blank name", map[string]any{"name": "  ", "url": "rtmp://example.com/live/key"}, "name"},
		{"long name", map[string]any{"name": strings.Repeat("n", restream.MaxName+1), "url": "rtmp://example.com/live/key"}, "name"},
		{"long URL", map[string]any{"name": "x", "url": "rtmp://example.com/live/" + strings.Repeat("k", 2000)}, "url"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := env.Do("POST", "/v1/destinations", tok, tc.body).Expect(t, http.StatusUnprocessableEntity)
			body := r.JSON(t)
			e, _ := body["error"].(map[string]any)
			fields, _ := e["fields"].(map[string]any)
			if e["code"] != "validation_failed" || fields[tc.field] == nil {
				t.Fatalf("answer %s", r.Body)
			}
		})
	}
	if l := env.Do("GET", "/v1/destinations", tok, nil).Expect(t, http.StatusOK).JSON(t); l["count"] != float64(0) {
		t.Fatalf("a refused destination was stored: %v", l)
	}

	// With the webhooks' override, a private address is allowed.
	dev := onairtest.New(t, onairtest.Options{Configure: func(c *app.Config) { c.Set(webhooks.SettingAllowPrivate, true) }})
	_, dtok := dev.CreateUser("Dev")
	dev.Do("POST", "/v1/destinations", dtok, map[string]any{"name": "local", "url": "rtmp://127.0.0.1:1935/live/key"}).Expect(t, http.StatusCreated)
}
