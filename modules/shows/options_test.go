package shows_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/shows"
)

// TestShowOptions covers the extensions of docs/show-options.md (ends_at,
// audio_only, chat_enabled) through the API, on SQLite and MySQL: the
// defaults, the round trip in every encoding, every limit driven past its
// edge, and the rules once a show has gone live. Every response is checked
// against /v1/openapi.json by the test client.
func TestShowOptions(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		f := newFixture(t, backend)
		_, tok := f.user("Option Owner")
		stamp := func(t time.Time) string { return t.UTC().Format(app.TimeLayout) }
		start := app.Now().Add(48 * time.Hour)
		path := func(sh map[string]any) string { return fmt.Sprintf("/v1/shows/%d", id(sh)) }

		t.Run("defaults", func(t *testing.T) {
			sh := onairtest.CreateShow(t, f.env, tok, map[string]any{"name": "Plain", "description": "d"}).Object
			if sh["ends_at"] != nil || sh["audio_only"] != false || sh["chat_enabled"] != true {
				t.Fatalf("defaults: ends_at %v audio_only %v chat_enabled %v", sh["ends_at"], sh["audio_only"], sh["chat_enabled"])
			}
		})

		t.Run("round trip", func(t *testing.T) {
			end := start.Add(3 * time.Hour)
			sh := onairtest.CreateShow(t, f.env, tok, map[string]any{"name": "Options JSON", "description": "d", "start": stamp(start),
				"ends_at": stamp(end), "audio_only": true, "chat_enabled": false}).Object
			if sh["ends_at"] != stamp(end) || sh["audio_only"] != true || sh["chat_enabled"] != false {
				t.Fatalf("created: %v %v %v", sh["ends_at"], sh["audio_only"], sh["chat_enabled"])
			}
			got := showOf(t, f.do(t, "GET", path(sh), tok, nil).Expect(t, http.StatusOK))
			f.checkShow(t, got, false)
			if got["ends_at"] != stamp(end) || got["audio_only"] != true || got["chat_enabled"] != false {
				t.Fatalf("read back: %v %v %v", got["ends_at"], got["audio_only"], got["chat_enabled"])
			}
			// PUT changes only what is sent; null removes the end.
			put := showOf(t, f.do(t, "PUT", path(sh), tok, map[string]any{"ends_at": nil, "chat_enabled": true}).Expect(t, http.StatusOK))
			if put["ends_at"] != nil || put["chat_enabled"] != true || put["audio_only"] != true {
				t.Fatalf("after PUT: %v %v %v", put["ends_at"], put["chat_enabled"], put["audio_only"])
			}
			// Urlencoded: 1/0 booleans, an empty ends_at is "none".
			form := url.Values{"ends_at": {stamp(end.Add(time.Hour))}, "audio_only": {"0"}, "chat_enabled": {"0"}}
			put = showOf(t, f.do(t, "PUT", path(sh), tok, form).Expect(t, http.StatusOK))
			if put["ends_at"] != stamp(end.Add(time.Hour)) || put["audio_only"] != false || put["chat_enabled"] != false {
				t.Fatalf("after form PUT: %v %v %v", put["ends_at"], put["audio_only"], put["chat_enabled"])
			}
			put = showOf(t, f.do(t, "PUT", path(sh), tok, url.Values{"ends_at": {""}}).Expect(t, http.StatusOK))
			if put["ends_at"] != nil {
				t.Fatalf("empty ends_at kept %v", put["ends_at"])
			}
			// Multipart, as a browser's form with a file would send it.
			r := f.doMultipart(t, "POST", "/v1/shows", tok, "name", "Options multipart", "description", "d",
				"start", stamp(start), "ends_at", stamp(start.Add(90*time.Minute)), "audio_only", "true", "chat_enabled", "false")
			mp := showOf(t, r.Expect(t, http.StatusCreated))
			if mp["ends_at"] != stamp(start.Add(90*time.Minute)) || mp["audio_only"] != true || mp["chat_enabled"] != false {
				t.Fatalf("multipart: %v %v %v", mp["ends_at"], mp["audio_only"], mp["chat_enabled"])
			}
		})

		t.Run("validation", func(t *testing.T) {
			base := func(extra map[string]any) map[string]any {
				b := map[string]any{"name": "Limits", "description": "d", "start": stamp(start)}
				for k, v := range extra {
					b[k] = v
				}
				return b
			}
			for _, tt := range []struct {
				name   string
				body   map[string]any
				status int
				field  string
			}{
				{"end at the 24 hour limit", base(map[string]any{"ends_at": stamp(start.Add(shows.MaxScheduledRun))}), http.StatusCreated, ""},
				{"end a second past 24 hours", base(map[string]any{"ends_at": stamp(start.Add(shows.MaxScheduledRun + time.Second))}), http.StatusUnprocessableEntity, "ends_at"},
				{"end a second after start", base(map[string]any{"ends_at": stamp(start.Add(time.Second))}), http.StatusCreated, ""},
				{"end at the start", base(map[string]any{"ends_at": stamp(start)}), http.StatusUnprocessableEntity, "ends_at"},
				{"end before the start", base(map[string]any{"ends_at": stamp(start.Add(-time.Hour))}), http.StatusUnprocessableEntity, "ends_at"},
				{"end without start is from now", map[string]any{"name": "n", "description": "d", "ends_at": stamp(app.Now().Add(25 * time.Hour))}, http.StatusUnprocessableEntity, "ends_at"},
				{"end in the past without start", map[string]any{"name": "n", "description": "d", "ends_at": stamp(app.Now().Add(-time.Minute))}, http.StatusUnprocessableEntity, "ends_at"},
				{"end not a timestamp", base(map[string]any{"ends_at": "tomorrow evening"}), http.StatusUnprocessableEntity, "ends_at"},
				{"end in ISO form", base(map[string]any{"ends_at": start.Add(time.Hour).Format(time.RFC3339)}), http.StatusUnprocessableEntity, "ends_at"},
				{"end a number", base(map[string]any{"ends_at": 1700000000}), http.StatusBadRequest, ""},
				{"audio_only not a boolean", base(map[string]any{"audio_only": "maybe"}), http.StatusBadRequest, ""},
				{"chat_enabled not a boolean", base(map[string]any{"chat_enabled": "yes"}), http.StatusBadRequest, ""},
			} {
				t.Run(tt.name, func(t *testing.T) {
					r := f.do(t, "POST", "/v1/shows", tok, tt.body)
					switch {
					case tt.field != "":
						fieldError(t, r, tt.field)
					case tt.status == http.StatusCreated:
						f.checkShow(t, showOf(t, r.Expect(t, http.StatusCreated)), true)
					default:
						expectError(t, r, tt.status)
					}
				})
			}
			// Moving the start past a stored end is refused on ends_at;
			// moving both together is fine.
			sh := onairtest.CreateShow(t, f.env, tok, base(map[string]any{"ends_at": stamp(start.Add(2 * time.Hour))})).Object
			fieldError(t, f.do(t, "PUT", path(sh), tok, map[string]any{"start": stamp(start.Add(3 * time.Hour))}), "ends_at")
			fieldError(t, f.do(t, "PUT", path(sh), tok, map[string]any{"start": stamp(start.Add(-23 * time.Hour))}), "ends_at")
			moved := showOf(t, f.do(t, "PUT", path(sh), tok, map[string]any{"start": stamp(start.Add(3 * time.Hour)),
				"ends_at": stamp(start.Add(4 * time.Hour))}).Expect(t, http.StatusOK))
			if moved["start"] != stamp(start.Add(3*time.Hour)) || moved["ends_at"] != stamp(start.Add(4*time.Hour)) {
				t.Fatalf("moved: %v %v", moved["start"], moved["ends_at"])
			}
			// Every problem at once.
			e := expectError(t, f.do(t, "POST", "/v1/shows", tok, map[string]any{"description": "d", "start": "soon", "ends_at": "later"}), http.StatusUnprocessableEntity)
			if fields, _ := e["fields"].(map[string]any); len(fields) != 3 {
				t.Fatalf("want name, start and ends_at at once: %v", e)
			}
		})

		t.Run("once live", func(t *testing.T) {
			sh := onairtest.CreateShow(t, f.env, tok, map[string]any{"name": "Goes Live", "description": "d", "ends_at": stamp(app.Now().Add(time.Hour))}).Object
			video, audio := "/media/shows/x/master.m3u8", "/media/shows/x/master_audio.m3u8"
			if _, err := f.svc.GoLive(f.ctx, id(sh), shows.Media{VideoURL: &video, AudioURL: &audio}); err != nil {
				t.Fatal(err)
			}
			r := f.do(t, "PUT", path(sh), tok, map[string]any{"audio_only": true})
			if e := expectError(t, r, http.StatusConflict); e["code"] != "conflict" {
				t.Fatalf("audio_only change while live: %v", e)
			}
			// The same value is no change; chat and the end still move.
			later := app.Now().Add(5 * time.Hour)
			put := showOf(t, f.do(t, "PUT", path(sh), tok, map[string]any{"audio_only": false, "chat_enabled": false,
				"ends_at": stamp(later)}).Expect(t, http.StatusOK))
			if put["live"] != true || put["chat_enabled"] != false || put["ends_at"] != stamp(later) {
				t.Fatalf("while live: %v", put)
			}
			if _, err := f.svc.Stop(f.ctx, id(sh), nil); err != nil {
				t.Fatal(err)
			}
			expectError(t, f.do(t, "PUT", path(sh), tok, map[string]any{"audio_only": true}), http.StatusConflict)
		})

		t.Run("an audio-only show never gets a video_url", func(t *testing.T) {
			sh := onairtest.CreateShow(t, f.env, tok, map[string]any{"name": "Audio Show", "description": "d", "audio_only": true}).Object
			video, audio := "/media/shows/x/master.m3u8", "/media/shows/x/master_audio.m3u8"
			live, err := f.svc.GoLive(f.ctx, id(sh), shows.Media{VideoURL: &video, AudioURL: &audio})
			if err != nil {
				t.Fatal(err)
			}
			if v := f.svc.View(live, false); v.VideoURL != nil || v.AudioURL == nil {
				t.Fatalf("live audio-only show: video_url %v audio_url %v", v.VideoURL, v.AudioURL)
			}
			if _, err := f.svc.Stop(f.ctx, id(sh), nil); err != nil {
				t.Fatal(err)
			}
			archived, err := f.svc.Archive(f.ctx, id(sh), shows.Media{VideoURL: &video, AudioURL: &audio})
			if err != nil {
				t.Fatal(err)
			}
			if v := f.svc.View(archived, false); v.VideoURL != nil || v.AudioURL == nil {
				t.Fatalf("archived audio-only show: video_url %v audio_url %v", v.VideoURL, v.AudioURL)
			}
		})

		t.Run("health warns past the scheduled end", func(t *testing.T) {
			sh := onairtest.CreateShow(t, f.env, tok, map[string]any{"name": "Runs Over", "description": "d", "ends_at": stamp(app.Now().Add(time.Minute))}).Object
			if _, err := f.svc.GoLive(f.ctx, id(sh), shows.Media{}); err != nil {
				t.Fatal(err)
			}
			live, err := f.svc.Get(f.ctx, id(sh))
			if err != nil {
				t.Fatal(err)
			}
			if h := (shows.Health{}).WithSchedule(live, app.Now()); len(h.Warnings) != 0 {
				t.Fatalf("warned before the end: %v", h.Warnings)
			}
			h := (shows.Health{}).WithSchedule(live, live.EndsAt.Add(10*time.Minute))
			if len(h.Warnings) != 1 {
				t.Fatalf("warnings past the end: %v", h.Warnings)
			}
			// Informative only: the show is still live, and the API's
			// health carries the same warning once the end has passed.
			got := showOf(t, f.do(t, "GET", path(sh), tok, nil).Expect(t, http.StatusOK))
			if got["live"] != true {
				t.Fatalf("show past its end: %v", got)
			}
			body := f.do(t, "GET", path(sh)+"/health", tok, nil).Expect(t, http.StatusOK).JSON(t)
			if _, ok := body["health"].(map[string]any)["warnings"].([]any); !ok {
				t.Fatalf("health: %v", body)
			}
		})
	})
}

// TestShowOptionsMigration upgrades a database from before the options:
// migration shows:0026 adds the columns, and every show there was reads
// with no end, audio and video, and its chat on.
func TestShowOptionsMigration(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		env := onairtest.New(t, onairtest.Options{Backend: backend})
		_, tok := env.CreateUser("Old Shows")
		r := env.Do("POST", "/v1/shows", tok, map[string]any{"name": "Before the options", "description": "d"}).Expect(t, http.StatusCreated)
		showID := onairtest.ID(r.JSON(t)["show"].(map[string]any))
		for _, q := range []string{
			"ALTER TABLE shows DROP COLUMN ends_at",
			"ALTER TABLE shows DROP COLUMN audio_only",
			"ALTER TABLE shows DROP COLUMN chat_disabled",
			"DELETE FROM onair_migrations WHERE id = 'shows:0026_show_options'",
		} {
			if _, err := env.Core.DB.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		if err := env.Shutdown(); err != nil {
			t.Fatal(err)
		}
		env2 := onairtest.New(t, onairtest.Options{DatabaseURL: env.Core.Config.DatabaseURL})
		sh := env2.Do("GET", fmt.Sprintf("/v1/shows/%d", showID), tok, nil).Expect(t, http.StatusOK).JSON(t)["show"].(map[string]any)
		if sh["ends_at"] != nil || sh["audio_only"] != false || sh["chat_enabled"] != true {
			t.Fatalf("an older show after the migration: ends_at %v audio_only %v chat_enabled %v", sh["ends_at"], sh["audio_only"], sh["chat_enabled"])
		}
		env2.Do("PUT", fmt.Sprintf("/v1/shows/%d", showID), tok, map[string]any{"chat_enabled": false, "audio_only": true}).Expect(t, http.StatusOK)
	})
}
