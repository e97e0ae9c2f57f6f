package shows_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/shows"
)

// TestConformance is the shows part of the v1 contract, run on SQLite and
// (with ONAIR_TEST_MYSQL_DSN) on MySQL. Every response it receives is also
// checked against /v1/openapi.json.
func TestConformance(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		f := newFixture(t, backend)
		oa := newOpenAPIChecker(t, f)
		onairtest.Recorder = oa.record
		t.Cleanup(func() { onairtest.Recorder = nil })

		t.Run("create", func(t *testing.T) { testCreate(t, f) })
		t.Run("validation", func(t *testing.T) { testValidation(t, f) })
		t.Run("read", func(t *testing.T) { testRead(t, f) })
		t.Run("update", func(t *testing.T) { testUpdate(t, f) })
		t.Run("owner rules", func(t *testing.T) { testOwnerRules(t, f) })
		t.Run("lifecycle", func(t *testing.T) { testLifecycle(t, f) })
		t.Run("favorites and comments", func(t *testing.T) { testFavorites(t, f) })
		t.Run("filters", func(t *testing.T) { testFilters(t, f) })
		t.Run("pagination", func(t *testing.T) { testPagination(t, f) })
		oa.check(t)
	})
}

func testCreate(t *testing.T, f *fixture) {
	u, tok := f.user("Creator One")
	r := f.do(t, "POST", "/v1/shows", tok, map[string]any{"name": "My First Show", "description": "line one\nline two",
		"tags": []string{"Deep House", "deep house", "Techno"}})
	r.Expect(t, http.StatusCreated)
	sh := showOf(t, r)
	f.checkShow(t, sh, true)
	if loc := r.Header.Get("Location"); loc != sh["object_url"] {
		t.Fatalf("Location %q, want %v", loc, sh["object_url"])
	}
	// The state table of the spec for a new show.
	for k, want := range map[string]any{"live": false, "complete": false, "archive": false, "duration": nil,
		"video_url": nil, "audio_url": nil, "thumbnail_label": "Starting Soon", "slug": "my-first-show",
		"description": "line one\nline two", "private": false, "radio": false, "off": false, "featured": false,
		"upload": false, "comments_count": float64(0), "favorites_count": float64(0), "gif_url": nil} {
		if sh[k] != want {
			t.Errorf("%s = %#v, want %#v", k, sh[k], want)
		}
	}
	if sh["start"] != sh["created_at"] {
		t.Errorf("a show without start starts at created_at: %v vs %v", sh["start"], sh["created_at"])
	}
	if got := fmt.Sprint(sh["tags"]); got != "[map[name:Deep House slug:deep-house] map[name:Techno slug:techno]]" {
		t.Errorf("tags = %s", got)
	}
	user := sh["user"].(map[string]any)
	if user["email"] != u.Email || user["radio"] != false || id(user) != u.ID {
		t.Errorf("owner = %v", user)
	}
	if sh["image_url"] != fmt.Sprintf("%s/media/shows/%d/placeholder.svg", f.env.URL, id(sh)) {
		t.Errorf("image_url = %v", sh["image_url"])
	}
	img := f.do(t, "GET", sh["image_url"].(string), "", nil).Expect(t, http.StatusOK)
	if ct := img.Header.Get("Content-Type"); ct != "image/svg+xml" {
		t.Errorf("placeholder content type %q", ct)
	}

	// Slugs stay unique per user; another user may reuse one.
	second := onairtest.CreateShow(t, f.env, tok, map[string]any{"name": "My First Show", "description": "again"}).Object
	third := onairtest.CreateShow(t, f.env, tok, map[string]any{"name": "My first show!", "description": "again"}).Object
	if second["slug"] != "my-first-show-2" || third["slug"] != "my-first-show-3" {
		t.Errorf("slugs %v, %v", second["slug"], third["slug"])
	}
	_, tok2 := f.user("Creator Two")
	if other := onairtest.CreateShow(t, f.env, tok2, map[string]any{"name": "My First Show", "description": "x"}).Object; other["slug"] != "my-first-show" {
		t.Errorf("other user's slug %v", other["slug"])
	}
	if sym := onairtest.CreateShow(t, f.env, tok2, map[string]any{"name": "!!!", "description": "x"}).Object; sym["slug"] != "show" {
		t.Errorf("slug of a name without letters: %v", sym["slug"])
	}
	if second["stream_key"] == sh["stream_key"] {
		t.Error("two shows share a stream key")
	}

	// Scheduled start, private and headline; every encoding.
	start := time.Now().UTC().Add(48 * time.Hour).Truncate(time.Second).Format(app.TimeLayout)
	js := onairtest.CreateShow(t, f.env, tok, map[string]any{"name": "Scheduled", "description": "d", "start": start, "private": true, "headline": true}).Object
	if js["start"] != start || js["private"] != true {
		t.Errorf("json: start %v private %v", js["start"], js["private"])
	}
	fr := f.do(t, "POST", "/v1/shows", tok, form("name", "Form Show", "description", "d", "tags[]", "a", "tags[]", "b", "private", "1", "start", start))
	fs := showOf(t, fr.Expect(t, http.StatusCreated))
	if fs["private"] != true || fs["start"] != start || len(fs["tags"].([]any)) != 2 {
		t.Errorf("form: %v", fs)
	}
	cs := showOf(t, f.do(t, "POST", "/v1/shows", tok, form("name", "Comma", "description", "d", "tags", "x, y ,z")).Expect(t, http.StatusCreated))
	if len(cs["tags"].([]any)) != 3 {
		t.Errorf("comma tags: %v", cs["tags"])
	}
	mp := showOf(t, f.doMultipart(t, "POST", "/v1/shows", tok, "name", "Multipart", "description", "d", "tags", "m1", "tags", "m2", "radio", "false").Expect(t, http.StatusCreated))
	if mp["name"] != "Multipart" || len(mp["tags"].([]any)) != 2 {
		t.Errorf("multipart: %v", mp)
	}
	// An empty start is no start.
	es := onairtest.CreateShow(t, f.env, tok, map[string]any{"name": "Empty start", "description": "d", "start": ""}).Object
	if es["start"] != es["created_at"] {
		t.Errorf("empty start: %v", es["start"])
	}

	// Radio needs approval.
	expectError(t, f.do(t, "POST", "/v1/shows", tok, map[string]any{"name": "R", "description": "d", "radio": true}), http.StatusForbidden)
	_, radioTok := f.user("Radio Host", onairtest.Radio)
	rs := onairtest.CreateShow(t, f.env, radioTok, map[string]any{"name": "R", "description": "d", "radio": true}).Object
	if rs["radio"] != true || rs["user"].(map[string]any)["radio"] != true {
		t.Errorf("radio show: %v", rs)
	}
}

func testValidation(t *testing.T, f *fixture) {
	_, tok := f.user("Validator")
	past := time.Now().UTC().Add(-time.Hour).Format(app.TimeLayout)
	for _, tc := range []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"missing name", map[string]any{"description": "d"}, "name"},
		{"blank name", map[string]any{"name": "   ", "description": "d"}, "name"},
		{"name too long", map[string]any{"name": strings.Repeat("n", 101), "description": "d"}, "name"},
		{"name with a newline", map[string]any{"name": "a\nb", "description": "d"}, "name"},
		{"missing description", map[string]any{"name": "n"}, "description"},
		{"description too long", map[string]any{"name": "n", "description": strings.Repeat("d", 5001)}, "description"},
		{"start in the past", map[string]any{"name": "n", "description": "d", "start": past}, "start"},
		{"start now-ish", map[string]any{"name": "n", "description": "d", "start": time.Now().UTC().Format(app.TimeLayout)}, "start"},
		{"start unparseable", map[string]any{"name": "n", "description": "d", "start": "tomorrow"}, "start"},
		{"start ISO", map[string]any{"name": "n", "description": "d", "start": "2099-01-01T10:00:00Z"}, "start"},
		{"start impossible date", map[string]any{"name": "n", "description": "d", "start": "2099-02-30 10:00:00"}, "start"},
		{"too many tags", map[string]any{"name": "n", "description": "d", "tags": strings.Split("a,b,c,d,e,f,g,h,i,j,k", ",")}, "tags"},
		{"tag too long", map[string]any{"name": "n", "description": "d", "tags": []string{strings.Repeat("t", 31)}}, "tags"},
		{"tag without a letter or digit", map[string]any{"name": "n", "description": "d", "tags": []string{"#"}}, "tags"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fieldError(t, f.do(t, "POST", "/v1/shows", tok, tc.body), tc.field)
		})
	}
	// Every problem is reported at once.
	e := expectError(t, f.do(t, "POST", "/v1/shows", tok, map[string]any{"start": past}), http.StatusUnprocessableEntity)
	if fields := e["fields"].(map[string]any); len(fields) != 3 {
		t.Errorf("fields %v, want name, description and start", fields)
	}
	// The limits themselves are fine; multi-byte characters count as one.
	onairtest.CreateShow(t, f.env, tok, map[string]any{"name": strings.Repeat("é", 100), "description": strings.Repeat("ü", 5000),
		"tags": []string{strings.Repeat("t", 30), "2", "3", "4", "5", "6", "7", "8", "9", "10"}})
}

func testRead(t *testing.T, f *fixture) {
	_, tok := f.user("Reader Owner")
	_, other := f.user("Reader Other")
	sh := onairtest.CreateShow(t, f.env, tok, map[string]any{"name": "Readable", "description": "d", "tags": []string{"x"}}).Object
	path := fmt.Sprintf("/v1/shows/%d", id(sh))
	for _, who := range []string{tok, other} {
		got := showOf(t, f.do(t, "GET", path, who, nil).Expect(t, http.StatusOK))
		f.checkShow(t, got, false)
		if got["name"] != "Readable" || got["slug"] != sh["slug"] {
			t.Errorf("read %v", got)
		}
	}
	for _, bad := range []string{"/v1/shows/999999", "/v1/shows/abc", "/v1/shows/0", "/v1/shows/-3", "/v1/shows/99999999999999999999999"} {
		expectError(t, f.do(t, "GET", bad, tok, nil), http.StatusNotFound)
	}
	expectError(t, f.do(t, "GET", path, "", nil), http.StatusUnauthorized)
	expectError(t, f.do(t, "GET", "/v1/users/999999/shows", tok, nil), http.StatusNotFound)
	// An unknown user is a 404 whatever the query (the list is empty, or
	// the query is refused); a known one with no shows an empty list.
	expectError(t, f.do(t, "GET", "/v1/users/999999/shows?live=maybe", tok, nil), http.StatusNotFound)
	expectError(t, f.do(t, "GET", "/v1/users/999999/shows?page=9", tok, nil), http.StatusNotFound)
	empty, emptyTok := f.user("No Shows")
	expectError(t, f.do(t, "GET", fmt.Sprintf("/v1/users/%d/shows?live=maybe", empty.ID), emptyTok, nil), http.StatusBadRequest)
	if m := f.do(t, "GET", fmt.Sprintf("/v1/users/%d/shows", empty.ID), tok, nil).Expect(t, http.StatusOK).JSON(t); m["count"] != float64(0) {
		t.Fatalf("a user without shows: %v", m)
	}
}

func testUpdate(t *testing.T, f *fixture) {
	u, tok := f.user("Updater")
	sh := onairtest.CreateShow(t, f.env, tok, map[string]any{"name": "Before", "description": "old", "tags": []string{"one"}, "headline": true}).Object
	path := fmt.Sprintf("/v1/shows/%d", id(sh))

	// Only the fields sent change.
	got := showOf(t, f.do(t, "PUT", path, tok, map[string]any{"description": "new"}).Expect(t, http.StatusOK))
	f.checkShow(t, got, true)
	if got["name"] != "Before" || got["description"] != "new" || fmt.Sprint(got["tags"]) != fmt.Sprint(sh["tags"]) || got["start"] != sh["start"] {
		t.Errorf("PUT description changed more: %v", got)
	}
	if got["stream_key"] != sh["stream_key"] {
		t.Error("PUT changed the stream key")
	}
	start := time.Now().UTC().Add(72 * time.Hour).Truncate(time.Second).Format(app.TimeLayout)
	got = showOf(t, f.do(t, "PUT", path, tok, form("name", "After", "start", start, "tags", "two,three", "private", "true")).Expect(t, http.StatusOK))
	if got["name"] != "After" || got["start"] != start || got["private"] != true || len(got["tags"].([]any)) != 2 {
		t.Errorf("PUT form: %v", got)
	}
	if got["slug"] != "before" {
		t.Errorf("the slug follows the name: %v (it must stay stable)", got["slug"])
	}
	got = showOf(t, f.do(t, "PUT", path, tok, map[string]any{"tags": []string{}}).Expect(t, http.StatusOK))
	if len(got["tags"].([]any)) != 0 {
		t.Errorf("tags not cleared: %v", got["tags"])
	}
	// An empty body changes nothing.
	showOf(t, f.do(t, "PUT", path, tok, nil).Expect(t, http.StatusOK))

	fieldError(t, f.do(t, "PUT", path, tok, map[string]any{"start": "2001-01-01 00:00:00"}), "start")
	fieldError(t, f.do(t, "PUT", path, tok, map[string]any{"name": ""}), "name")
	fieldError(t, f.do(t, "PUT", path, tok, map[string]any{"name": strings.Repeat("x", 101)}), "name")
	expectError(t, f.do(t, "PUT", path, tok, map[string]any{"radio": true}), http.StatusForbidden)
	expectError(t, f.do(t, "PUT", "/v1/shows/999999", tok, map[string]any{"name": "x"}), http.StatusNotFound)

	// headline=true makes this the user's only headline show.
	other := onairtest.CreateShow(t, f.env, tok, map[string]any{"name": "Other", "description": "d", "headline": true}).Object
	headlines := func() []int64 {
		var ids []int64
		if err := f.svc.DB().NewSelect().Model((*shows.Show)(nil)).Column("id").Where("user_id = ?", u.ID).Where("headline = ?", true).Scan(f.ctx, &ids); err != nil {
			t.Fatal(err)
		}
		return ids
	}
	if h := headlines(); len(h) != 1 || h[0] != id(other) {
		t.Errorf("headline shows %v, want [%d]", h, id(other))
	}
	f.do(t, "PUT", path, tok, map[string]any{"headline": true}).Expect(t, http.StatusOK)
	if h := headlines(); len(h) != 1 || h[0] != id(sh) {
		t.Errorf("headline shows %v, want [%d]", h, id(sh))
	}

	// start and radio cannot change once the show has gone live.
	if _, err := f.svc.GoLive(f.ctx, id(sh), shows.Media{}); err != nil {
		t.Fatal(err)
	}
	expectError(t, f.do(t, "PUT", path, tok, map[string]any{"start": start}), http.StatusConflict)
	f.do(t, "PUT", path, tok, map[string]any{"name": "Renamed while live"}).Expect(t, http.StatusOK)
}

func testOwnerRules(t *testing.T, f *fixture) {
	owner, tok := f.user("Owner Person")
	_, other := f.user("Other Person")
	_, mod := f.user("Moderator Person", onairtest.Role(app.RoleModerator))
	_, admin := f.user("Admin Person", onairtest.Role(app.RoleAdmin))

	pub := onairtest.CreateShow(t, f.env, tok, map[string]any{"name": "Public one", "description": "d"}).Object
	pubPath := fmt.Sprintf("/v1/shows/%d", id(pub))
	expectError(t, f.do(t, "PUT", pubPath, other, map[string]any{"name": "hijack"}), http.StatusForbidden)
	expectError(t, f.do(t, "POST", pubPath+"/stop", other, nil), http.StatusForbidden)
	expectError(t, f.do(t, "DELETE", pubPath, other, nil), http.StatusForbidden)
	// Staff may stop and delete but not edit (PUT is the owner's alone).
	expectError(t, f.do(t, "PUT", pubPath, mod, map[string]any{"name": "staff edit"}), http.StatusForbidden)
	expectError(t, f.do(t, "POST", pubPath+"/stop", mod, nil), http.StatusConflict) // allowed, but not live

	priv := onairtest.CreateShow(t, f.env, tok, map[string]any{"name": "Secret one", "description": "d", "private": true, "tags": []string{"secret-tag"}}).Object
	privPath := fmt.Sprintf("/v1/shows/%d", id(priv))
	for _, req := range []struct{ method, path string }{
		{"GET", privPath}, {"PUT", privPath}, {"POST", privPath + "/stop"}, {"DELETE", privPath},
		{"POST", privPath + "/favorite"}, {"DELETE", privPath + "/favorite"},
	} {
		expectError(t, f.do(t, req.method, req.path, other, map[string]any{"name": "x"}), http.StatusNotFound)
	}
	userShows := fmt.Sprintf("/v1/users/%d/shows", owner.ID)
	inList := func(path, token string, want int64) bool {
		ids, _ := f.listIDs(t, path, token)
		return slices.Contains(ids, want)
	}
	// Give the private show a run so it is not left out as pending.
	if _, err := f.svc.GoLive(f.ctx, id(priv), shows.Media{}); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/v1/shows", "/v1/shows?tag=secret-tag", "/v1/shows?live=true", userShows, userShows + "?live=true"} {
		if inList(path, other, id(priv)) {
			t.Errorf("%s shows another user's private show", path)
		}
		if !inList(path, tok, id(priv)) {
			t.Errorf("%s hides the owner's own private show", path)
		}
		if inList(path, mod, id(priv)) {
			t.Errorf("%s shows another user's private show to staff (lists never do)", path)
		}
	}
	if !inList("/v1/users/me/shows", tok, id(priv)) {
		t.Error("/users/me/shows hides the owner's private show")
	}
	// Staff read it by id, stop and delete it.
	showOf(t, f.do(t, "GET", privPath, mod, nil).Expect(t, http.StatusOK))
	stopped := showOf(t, f.do(t, "POST", privPath+"/stop", admin, nil).Expect(t, http.StatusOK))
	f.checkShow(t, stopped, true)
	if stopped["complete"] != true {
		t.Errorf("staff stop: %v", stopped)
	}
	showOf(t, f.do(t, "DELETE", privPath, mod, nil).Expect(t, http.StatusOK))
	expectError(t, f.do(t, "GET", privPath, tok, nil), http.StatusNotFound)

	// Off shows: hidden from other users like private ones.
	off := onairtest.CreateShow(t, f.env, tok, map[string]any{"name": "Taken off", "description": "d"}).Object
	if _, err := f.svc.SetOff(f.ctx, id(off), true, nil); err != nil {
		t.Fatal(err)
	}
	offPath := fmt.Sprintf("/v1/shows/%d", id(off))
	expectError(t, f.do(t, "GET", offPath, other, nil), http.StatusNotFound)
	if got := showOf(t, f.do(t, "GET", offPath, tok, nil).Expect(t, http.StatusOK)); got["off"] != true {
		t.Errorf("owner sees off=%v", got["off"])
	}
	if inList("/v1/shows", other, id(off)) {
		t.Error("an off show is listed for another user")
	}
	// Casbin refuses staff actions to a plain user.
	byUser := &app.Principal{UserID: owner.ID, Roles: []string{app.RoleUser}}
	if _, err := f.svc.SetFeatured(f.ctx, id(pub), true, byUser); !isStatus(err, http.StatusForbidden) {
		t.Errorf("a user features a show: %v", err)
	}
	if _, err := f.svc.SetOff(f.ctx, id(pub), true, byUser); !isStatus(err, http.StatusForbidden) {
		t.Errorf("a user takes a show off: %v", err)
	}
	byMod := &app.Principal{UserID: 1, Roles: []string{app.RoleUser, app.RoleModerator}}
	if sh, err := f.svc.SetFeatured(f.ctx, id(pub), true, byMod); err != nil || !sh.Featured {
		t.Errorf("moderator features: %v", err)
	}
	// The owner deletes their own show.
	del := showOf(t, f.do(t, "DELETE", pubPath, tok, nil).Expect(t, http.StatusOK))
	f.checkShow(t, del, false)
	expectError(t, f.do(t, "GET", pubPath, tok, nil), http.StatusNotFound)
	expectError(t, f.do(t, "DELETE", pubPath, tok, nil), http.StatusNotFound)
}

func isStatus(err error, status int) bool {
	var e *app.Error
	return errors.As(err, &e) && e.Status == status
}

func testLifecycle(t *testing.T, f *fixture) {
	_, tok := f.user("Broadcaster")
	var events []string
	f.svc.Subscribe(func(_ context.Context, ev shows.Event) {
		events = append(events, fmt.Sprintf("%s:%d", ev.Type, ev.Show.ID))
	})
	future := time.Now().UTC().Add(24 * time.Hour).Truncate(time.Second).Format(app.TimeLayout)
	sh := onairtest.CreateShow(t, f.env, tok, map[string]any{"name": "Lifecycle", "description": "d", "start": future, "tags": []string{"life"}}).Object
	n, key := id(sh), sh["stream_key"].(string)
	path := fmt.Sprintf("/v1/shows/%d", n)

	// Not live yet: stop is a conflict.
	expectError(t, f.do(t, "POST", path+"/stop", tok, nil), http.StatusConflict)

	// The key: right one accepted, anything else refused.
	if got, err := f.svc.Keys.Authorize(f.ctx, key); err != nil || got.ID != n {
		t.Fatalf("authorize: %v", err)
	}
	changed := key[:len(key)-1] + "0" // the last character changed, so never to what it was
	if strings.HasSuffix(key, "0") {
		changed = key[:len(key)-1] + "1"
	}
	for _, bad := range []string{"", "nope", key + "x", changed, strings.Replace(key, fmt.Sprint(n), fmt.Sprint(n+1000), 1), "sk_" + fmt.Sprint(n) + "_"} {
		if _, err := f.svc.Keys.Authorize(f.ctx, bad); !errors.Is(err, shows.ErrRefused) {
			t.Errorf("key %q: %v, want ErrRefused", bad, err)
		}
	}

	// Go live: start becomes the actual start, media absolute, "Live".
	video, audio := "/media/shows/live/video.m3u8", "https://cdn.example.com/audio.m3u8"
	before := time.Now().UTC().Add(-time.Second)
	live, err := f.svc.GoLive(f.ctx, n, shows.Media{VideoURL: &video, AudioURL: &audio})
	if err != nil {
		t.Fatal(err)
	}
	if !live.Live || live.Start.Before(before.Truncate(time.Second)) || live.ThumbnailLabel != "Live" {
		t.Fatalf("after go-live: %+v", live)
	}
	got := showOf(t, f.do(t, "GET", path, tok, nil).Expect(t, http.StatusOK))
	if got["live"] != true || got["video_url"] != f.env.URL+video || got["audio_url"] != audio || got["thumbnail_label"] != "Live" || got["duration"] != nil {
		t.Errorf("live show: %v", got)
	}
	if ids, _ := f.listIDs(t, "/v1/shows?live=true&tag=life", tok); !slices.Equal(ids, []int64{n}) {
		t.Errorf("live list %v", ids)
	}

	// The publisher drops and comes back inside the window: start kept.
	if err := f.svc.PublisherLeft(f.ctx, n); err != nil {
		t.Fatal(err)
	}
	if s, _ := f.svc.Get(f.ctx, n); !s.Live || s.DisconnectedAt == nil {
		t.Fatalf("after drop: live=%v disconnected=%v", s.Live, s.DisconnectedAt)
	}
	// Make the run 1 h 2 min 5 s long, ending when the publisher dropped.
	wentLive := live.Start.Add(-3725 * time.Second)
	dropped := live.Start
	if _, err := f.svc.DB().NewUpdate().Model((*shows.Show)(nil)).Set("went_live_at = ?", wentLive).Set("start = ?", wentLive).Set("disconnected_at = ?", dropped).Where("id = ?", n).Exec(f.ctx); err != nil {
		t.Fatal(err)
	}
	resumed, err := f.svc.GoLive(f.ctx, n, shows.Media{})
	if err != nil {
		t.Fatal(err)
	}
	if !resumed.Start.Equal(wentLive) || resumed.DisconnectedAt != nil || *resumed.VideoURL != video {
		t.Errorf("resume: start %v (want %v), disconnected %v", resumed.Start, wentLive, resumed.DisconnectedAt)
	}
	if err := f.svc.PublisherLeft(f.ctx, n); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.DB().NewUpdate().Model((*shows.Show)(nil)).Set("disconnected_at = ?", dropped).Where("id = ?", n).Exec(f.ctx); err != nil {
		t.Fatal(err)
	}

	// Stop by the owner: complete, duration, "Finished", write form.
	r := f.do(t, "POST", path+"/stop", tok, nil).Expect(t, http.StatusOK)
	stopped := showOf(t, r)
	f.checkShow(t, stopped, true)
	if stopped["live"] != false || stopped["complete"] != true || stopped["duration"] != float64(3725) || stopped["thumbnail_label"] != "Finished" {
		t.Errorf("stopped: %v", stopped)
	}
	expectError(t, f.do(t, "POST", path+"/stop", tok, nil), http.StatusConflict)
	if _, err := f.svc.Keys.Authorize(f.ctx, key); !errors.Is(err, shows.ErrRefused) {
		t.Errorf("key of a complete show: %v", err)
	}
	if _, err := f.svc.GoLive(f.ctx, n, shows.Media{}); !errors.Is(err, shows.ErrRefused) {
		t.Errorf("go-live of a complete show: %v", err)
	}

	// Archive: VOD URLs and the duration as the label.
	vod := "/media/shows/vod/index.m3u8"
	if _, err := f.svc.Archive(f.ctx, n, shows.Media{VideoURL: &vod}); err != nil {
		t.Fatal(err)
	}
	got = showOf(t, f.do(t, "GET", path, tok, nil).Expect(t, http.StatusOK))
	if got["archive"] != true || got["thumbnail_label"] != "01:02:05" || got["video_url"] != f.env.URL+vod || got["audio_url"] != nil {
		t.Errorf("archived: %v", got)
	}
	if want := []string{"created", "live", "resumed", "stopped", "archived"}; !sameEvents(events, n, want) {
		t.Errorf("events %v, want %v for %d", events, want, n)
	}

	// Archive refuses shows not finished and radio shows.
	fresh := onairtest.CreateShow(t, f.env, tok, map[string]any{"name": "Not finished", "description": "d"}).Object
	if _, err := f.svc.Archive(f.ctx, id(fresh), shows.Media{}); !errors.Is(err, shows.ErrNotComplete) {
		t.Errorf("archive of a new show: %v", err)
	}
	_, radioTok := f.user("Radio Broadcaster", onairtest.Radio)
	radio := onairtest.CreateShow(t, f.env, radioTok, map[string]any{"name": "Radio", "description": "d", "radio": true}).Object
	rid := id(radio)
	if _, err := f.svc.GoLive(f.ctx, rid, shows.Media{}); err != nil {
		t.Fatal(err)
	}
	f.svc.PublisherLeft(f.ctx, rid)

	// The janitor: a dropped show completes after the window, radio stays
	// open until its 24 hours are up.
	dropper := onairtest.CreateShow(t, f.env, tok, map[string]any{"name": "Dropper", "description": "d"}).Object
	did := id(dropper)
	f.svc.GoLive(f.ctx, did, shows.Media{})
	f.svc.PublisherLeft(f.ctx, did)
	now := app.Now()
	if n, err := f.svc.Sweep(f.ctx, now); err != nil || n != 0 {
		t.Errorf("sweep inside the window stopped %d: %v", n, err)
	}
	window := app.Get[time.Duration](f.env.Core.Config, shows.SettingReconnectWindow)
	if n, err := f.svc.Sweep(f.ctx, now.Add(window+time.Second)); err != nil || n != 1 {
		t.Errorf("sweep after the window stopped %d, want 1: %v", n, err)
	}
	if s, _ := f.svc.Get(f.ctx, did); !s.Complete || s.Duration == nil {
		t.Errorf("dropped show after the window: %+v", s)
	}
	if s, _ := f.svc.Get(f.ctx, rid); !s.Live {
		t.Error("a radio show closed on a publisher drop")
	}
	if n, err := f.svc.Sweep(f.ctx, now.Add(shows.RadioMaxRun+time.Second)); err != nil || n != 1 {
		t.Errorf("sweep after 24 h stopped %d, want the radio show: %v", n, err)
	}
	if _, err := f.svc.Archive(f.ctx, rid, shows.Media{}); !errors.Is(err, shows.ErrRadioArchive) {
		t.Errorf("archive of a radio show: %v", err)
	}

	// Off stops a live show and refuses its key; restoring shows it again.
	offShow := onairtest.CreateShow(t, f.env, tok, map[string]any{"name": "Going off", "description": "d"}).Object
	oid := id(offShow)
	f.svc.GoLive(f.ctx, oid, shows.Media{})
	events = nil
	o, err := f.svc.SetOff(f.ctx, oid, true, nil)
	if err != nil || o.Live || !o.Complete || !o.Off {
		t.Fatalf("off: %+v %v", o, err)
	}
	if !sameEvents(events, oid, []string{"stopped", "off"}) {
		t.Errorf("off events %v", events)
	}
	if _, err := f.svc.Keys.Authorize(f.ctx, offShow["stream_key"].(string)); !errors.Is(err, shows.ErrRefused) {
		t.Errorf("key of an off show: %v", err)
	}
	if o, err := f.svc.SetOff(f.ctx, oid, false, nil); err != nil || o.Off {
		t.Errorf("restore: %v", err)
	}

	// Delete of a live show stops it and answers it as it was; its key is
	// refused afterwards.
	del := onairtest.CreateShow(t, f.env, tok, map[string]any{"name": "Deleted live", "description": "d", "tags": []string{"gone"}}).Object
	xid := id(del)
	f.svc.GoLive(f.ctx, xid, shows.Media{})
	events = nil
	gone := showOf(t, f.do(t, "DELETE", fmt.Sprintf("/v1/shows/%d", xid), tok, nil).Expect(t, http.StatusOK))
	f.checkShow(t, gone, false)
	if gone["live"] != false || gone["complete"] != true || gone["duration"] == nil || gone["thumbnail_label"] != "Finished" || len(gone["tags"].([]any)) != 1 {
		t.Errorf("deleted live show: %v", gone)
	}
	if !sameEvents(events, xid, []string{"stopped", "deleted"}) {
		t.Errorf("delete events %v", events)
	}
	if _, err := f.svc.Keys.Authorize(f.ctx, del["stream_key"].(string)); !errors.Is(err, shows.ErrRefused) {
		t.Errorf("key of a deleted show: %v", err)
	}
	if _, err := f.svc.Stop(f.ctx, xid, nil); !errors.Is(err, shows.ErrNotFound) {
		t.Errorf("stop of a deleted show: %v", err)
	}
}

func sameEvents(events []string, id int64, want []string) bool {
	var got []string
	for _, e := range events {
		if typ, ok := strings.CutSuffix(e, fmt.Sprintf(":%d", id)); ok {
			got = append(got, typ)
		}
	}
	return slices.Equal(got, want)
}

func testFavorites(t *testing.T, f *fixture) {
	_, tok := f.user("Fan Owner")
	_, fan := f.user("Fan")
	sh := onairtest.CreateShow(t, f.env, tok, map[string]any{"name": "Liked", "description": "d"}).Object
	path := fmt.Sprintf("/v1/shows/%d/favorite", id(sh))
	count := func(r *onairtest.Response) any { return showOf(t, r.Expect(t, http.StatusOK))["favorites_count"] }
	for i, step := range []struct {
		method, token string
		want          float64
	}{{"POST", fan, 1}, {"POST", fan, 1}, {"POST", tok, 2}, {"DELETE", fan, 1}, {"DELETE", fan, 1}, {"DELETE", tok, 0}} {
		if got := count(f.do(t, step.method, path, step.token, nil)); got != step.want {
			t.Errorf("step %d: favorites_count %v, want %v", i, got, step.want)
		}
	}
	expectError(t, f.do(t, "POST", "/v1/shows/999999/favorite", fan, nil), http.StatusNotFound)
	// comments_count follows chat through AddComments.
	if err := f.svc.AddComments(f.ctx, nil, id(sh), 3); err != nil {
		t.Fatal(err)
	}
	if err := f.svc.AddComments(f.ctx, f.svc.DB(), id(sh), -5); err != nil {
		t.Fatal(err)
	}
	f.svc.AddComments(f.ctx, nil, id(sh), 2)
	got := showOf(t, f.do(t, "GET", fmt.Sprintf("/v1/shows/%d", id(sh)), fan, nil).Expect(t, http.StatusOK))
	if got["comments_count"] != float64(2) {
		t.Errorf("comments_count %v, want 2 (never below zero)", got["comments_count"])
	}
	if err := f.svc.AddComments(f.ctx, nil, 999999, 1); !errors.Is(err, shows.ErrNotFound) {
		t.Errorf("comments of a missing show: %v", err)
	}
}

// testFilters seeds a known set of shows and checks each filter, alone and
// combined, against an oracle written in Go.
func testFilters(t *testing.T, f *fixture) {
	a, tokA := f.user("Filter Alice")
	b, tokB := f.user("Filter Bob")
	now := time.Now().UTC().Truncate(time.Second)
	day := 24 * time.Hour
	tag := func(s ...string) []string { return s }
	// Tags unique to this subtest keep other subtests' shows out.
	specs := []seedSpec{
		{owner: a.ID, name: "Morning Jazz", start: now.Add(-30 * day), complete: true, archive: true, tags: tag("fjazz")},
		{owner: a.ID, name: "Evening JAZZ 100%", start: now.Add(-20 * day), complete: true, tags: tag("fjazz", "fsoul")},
		{owner: a.ID, name: "Live Now", start: now.Add(-time.Hour), live: true, featured: true, tags: tag("fjazz")},
		{owner: a.ID, name: "Tomorrow Show", start: now.Add(day), tags: tag("fjazz")},
		{owner: a.ID, name: "Pending_Show", start: now.Add(-2 * day), tags: tag("fjazz")},
		{owner: a.ID, name: "Radio Stream", start: now.Add(-10 * day), complete: true, radio: true, featured: true, tags: tag("fsoul")},
		{owner: a.ID, name: "Alice Secret", start: now.Add(-5 * day), complete: true, private: true, tags: tag("fjazz")},
		{owner: b.ID, name: "Bob Jazz Hour", start: now.Add(-3 * day), complete: true, archive: true, featured: true, tags: tag("fjazz")},
		{owner: b.ID, name: "Bob Secret Jazz", start: now.Add(-4 * day), complete: true, private: true, tags: tag("fjazz")},
		{owner: b.ID, name: "Bob Off Jazz", start: now.Add(-6 * day), complete: true, off: true, tags: tag("fjazz")},
		{owner: b.ID, name: "Bob Later", start: now.Add(3 * day), tags: tag("fsoul")},
		{owner: b.ID, name: "Same Start A", start: now.Add(-7 * day), complete: true, tags: tag("fjazz")},
		{owner: b.ID, name: "Same Start B", start: now.Add(-7 * day), complete: true, tags: tag("fjazz")},
	}
	ids := f.seed(t, specs)
	type show struct {
		seedSpec
		id int64
	}
	all := make([]show, len(specs))
	for i := range specs {
		all[i] = show{specs[i], ids[i]}
	}
	hasTag := func(s show, tg string) bool { return slices.Contains(s.tags, tg) }
	scheduled := func(s show) bool { return !s.live && !s.complete && s.start.After(now) }
	pending := func(s show) bool { return !s.live && !s.complete && !s.start.After(now) }
	// expect lists the oracle's answer for viewer, newest start first.
	expect := func(viewer int64, keep func(show) bool) []int64 {
		var out []show
		for _, s := range all {
			if (s.private || s.off) && s.owner != viewer {
				continue
			}
			if keep(s) {
				out = append(out, s)
			}
		}
		slices.SortFunc(out, func(x, y show) int {
			if c := y.start.Compare(x.start); c != 0 {
				return c
			}
			return int(y.id - x.id)
		})
		res := []int64{}
		for _, s := range out {
			res = append(res, s.id)
		}
		return res
	}
	ts := func(t time.Time) string { return url.QueryEscape(t.Format("2006-01-02 15:04")) }
	anyTag := func(s show) bool { return hasTag(s, "fjazz") || hasTag(s, "fsoul") }
	cases := []struct {
		name  string
		query string // on /v1/shows, always with a tag or an owner
		keep  func(show) bool
	}{
		{"tag", "tag=fjazz", func(s show) bool { return hasTag(s, "fjazz") }},
		{"tag by name", "tag=FSOUL", func(s show) bool { return hasTag(s, "fsoul") }},
		{"unknown tag", "tag=nope-nope", func(show) bool { return false }},
		{"filter case-insensitive", "tag=fjazz&filter=jAzZ", func(s show) bool { return hasTag(s, "fjazz") && strings.Contains(strings.ToLower(s.name), "jazz") }},
		{"filter percent is literal", "tag=fjazz&filter=" + url.QueryEscape("100%"), func(s show) bool { return hasTag(s, "fjazz") && strings.Contains(s.name, "100%") }},
		{"filter underscore is literal", "tag=fjazz&filter=" + url.QueryEscape("g_S"), func(s show) bool { return hasTag(s, "fjazz") && strings.Contains(strings.ToLower(s.name), "g_s") }},
		{"slug", "slug=" + "%s", nil}, // filled below
		{"live true", "tag=fjazz&live=true", func(s show) bool { return hasTag(s, "fjazz") && s.live }},
		{"live false", "tag=fjazz&live=false", func(s show) bool { return hasTag(s, "fjazz") && !s.live }},
		{"scheduled true", "tag=fjazz&scheduled=true", func(s show) bool { return hasTag(s, "fjazz") && scheduled(s) }},
		{"scheduled false", "tag=fsoul&scheduled=false", func(s show) bool { return hasTag(s, "fsoul") && s.complete }},
		{"archive true", "tag=fjazz&archive=true", func(s show) bool { return hasTag(s, "fjazz") && s.archive }},
		{"archive false", "tag=fjazz&archive=0", func(s show) bool { return hasTag(s, "fjazz") && !s.archive }},
		{"featured true", "tag=fjazz&featured=true", func(s show) bool { return hasTag(s, "fjazz") && s.featured }},
		{"featured false", "tag=fsoul&featured=false", func(s show) bool { return hasTag(s, "fsoul") && !s.featured }},
		{"radio true", "tag=fsoul&radio=true", func(s show) bool { return hasTag(s, "fsoul") && s.radio }},
		{"radio false", "tag=fsoul&radio=false", func(s show) bool { return hasTag(s, "fsoul") && !s.radio }},
		{"from date", "tag=fjazz&from=" + now.Add(-10*day).Format("2006-01-02"), func(s show) bool {
			return hasTag(s, "fjazz") && !s.start.Before(now.Add(-10*day).Truncate(day))
		}},
		{"from days ago", "tag=fjazz&from=8", func(s show) bool { return hasTag(s, "fjazz") && !s.start.Before(now.Add(-8*day)) }},
		{"to date and time", "tag=fjazz&to=" + ts(now.Add(-4*day)), func(s show) bool {
			return hasTag(s, "fjazz") && s.start.Before(now.Add(-4*day).Truncate(time.Minute))
		}},
		{"from and to", "tag=fjazz&from=" + ts(now.Add(-21*day)) + "&to=" + ts(now.Add(-3*day)), func(s show) bool {
			return hasTag(s, "fjazz") && !s.start.Before(now.Add(-21*day).Truncate(time.Minute)) && s.start.Before(now.Add(-3*day).Truncate(time.Minute))
		}},
		{"combined: featured live", "tag=fjazz&featured=true&live=true", func(s show) bool { return hasTag(s, "fjazz") && s.featured && s.live }},
		{"combined: complete archived filter", "tag=fjazz&scheduled=false&archive=true&filter=jazz", func(s show) bool {
			return hasTag(s, "fjazz") && s.complete && s.archive && strings.Contains(strings.ToLower(s.name), "jazz")
		}},
		{"combined: featured not radio from", "tag=fsoul&featured=true&radio=false&from=30", func(s show) bool {
			return hasTag(s, "fsoul") && s.featured && !s.radio && !s.start.Before(now.Add(-30*day))
		}},
		{"combined: everything", "tag=fjazz&filter=bob&scheduled=false&live=false&archive=true&featured=true&radio=false&from=5&to=" + ts(now), func(s show) bool {
			return hasTag(s, "fjazz") && strings.Contains(strings.ToLower(s.name), "bob") && s.complete && !s.live && s.archive && s.featured && !s.radio && !s.start.Before(now.Add(-5*day)) && s.start.Before(now.Truncate(time.Minute))
		}},
	}
	// slug: exact, on GET /v1/shows only.
	var slug string
	if err := f.svc.DB().NewSelect().Model((*shows.Show)(nil)).Column("slug").Where("id = ?", ids[1]).Scan(f.ctx, &slug); err != nil {
		t.Fatal(err)
	}
	cases[6].query = "slug=" + slug
	cases[6].keep = func(s show) bool { return s.id == ids[1] }
	for _, viewer := range []struct {
		name  string
		id    int64
		token string
	}{{"alice", a.ID, tokA}, {"bob", b.ID, tokB}} {
		for _, tc := range cases {
			t.Run(viewer.name+"/"+tc.name, func(t *testing.T) {
				got, env := f.listIDs(t, "/v1/shows?"+tc.query, viewer.token)
				want := expect(viewer.id, tc.keep)
				if !slices.Equal(got, want) {
					t.Errorf("GET /v1/shows?%s\n got %v\nwant %v", tc.query, got, want)
				}
				if env["count"] != float64(len(want)) {
					t.Errorf("count %v, want %d", env["count"], len(want))
				}
			})
		}
	}
	// GET /users/:id/shows: scheduled and pending left out by default.
	ran := func(s show) bool { return s.live || s.complete }
	for _, tc := range []struct {
		name, query string
		owner       int64
		viewer      string
		viewerID    int64
		keep        func(show) bool
	}{
		{"default", "", a.ID, tokB, b.ID, ran},
		{"default, owner sees private", "", a.ID, tokA, a.ID, ran},
		{"me", "", 0, tokB, b.ID, ran},
		{"scheduled true", "scheduled=true", a.ID, tokA, a.ID, scheduled},
		{"scheduled false", "scheduled=false", b.ID, tokA, a.ID, func(s show) bool { return s.complete }},
		{"live", "live=true", a.ID, tokB, b.ID, func(s show) bool { return s.live }},
		{"live false", "live=false", a.ID, tokB, b.ID, func(s show) bool { return ran(s) && !s.live }},
		{"archive", "archive=true", b.ID, tokA, a.ID, func(s show) bool { return ran(s) && s.archive }},
		{"featured", "featured=true", a.ID, tokB, b.ID, func(s show) bool { return ran(s) && s.featured }},
		{"radio", "radio=true", a.ID, tokB, b.ID, func(s show) bool { return ran(s) && s.radio }},
		{"tag", "tag=fsoul", a.ID, tokB, b.ID, func(s show) bool { return ran(s) && hasTag(s, "fsoul") }},
		{"filter", "filter=JAZZ", b.ID, tokB, b.ID, func(s show) bool { return ran(s) && strings.Contains(strings.ToLower(s.name), "jazz") }},
		{"slug, from and to are ignored", "slug=nothing&from=1&to=2000-01-01", a.ID, tokB, b.ID, ran},
		{"combined", "scheduled=false&featured=true&radio=false", b.ID, tokA, a.ID, func(s show) bool { return s.complete && s.featured && !s.radio }},
	} {
		t.Run("user shows/"+tc.name, func(t *testing.T) {
			owner, path := tc.owner, ""
			if owner == 0 {
				owner, path = tc.viewerID, "/v1/users/me/shows"
			} else {
				path = fmt.Sprintf("/v1/users/%d/shows", owner)
			}
			if tc.query != "" {
				path += "?" + tc.query
			}
			got, _ := f.listIDs(t, path, tc.viewer)
			want := expect(tc.viewerID, func(s show) bool { return s.owner == owner && anyTag(s) && tc.keep(s) })
			if !slices.Equal(got, want) {
				t.Errorf("GET %s\n got %v\nwant %v", path, got, want)
			}
		})
	}
	_ = pending
	// Malformed filters are 400 (more in TestMalformed).
	for _, q := range []string{"live=maybe", "page=0", "scheduled=yes", "from=someday", "to=2024-13-45"} {
		expectError(t, f.do(t, "GET", "/v1/shows?"+q, tokA, nil), http.StatusBadRequest)
		if !strings.HasPrefix(q, "from") && !strings.HasPrefix(q, "to") {
			expectError(t, f.do(t, "GET", "/v1/users/me/shows?"+q, tokA, nil), http.StatusBadRequest)
		}
	}
}

func testPagination(t *testing.T, f *fixture) {
	u, tok := f.user("Prolific Host")
	now := time.Now().UTC().Truncate(time.Second)
	specs := make([]seedSpec, 120)
	for i := range specs {
		specs[i] = seedSpec{owner: u.ID, start: now.Add(-time.Duration(i) * time.Minute), complete: true, archive: i%2 == 0, tags: []string{"paging"}}
	}
	ids := f.seed(t, specs) // newest first already
	for _, base := range []string{"/v1/shows?tag=paging&scheduled=false", fmt.Sprintf("/v1/users/%d/shows?tag=paging", u.ID)} {
		t.Run(base, func(t *testing.T) {
			var seen []int64
			next := f.env.URL + base
			for page := 1; page <= 3; page++ {
				got, env := f.listIDs(t, next, tok)
				seen = append(seen, got...)
				wantLen := map[int]int{1: 50, 2: 50, 3: 20}[page]
				if len(got) != wantLen || env["page"] != float64(page) || env["pages"] != float64(3) || env["count"] != float64(120) {
					t.Fatalf("page %d: %d items, envelope %v", page, len(got), env)
				}
				if page == 1 && env["prev_url"] != nil {
					t.Errorf("page 1 prev_url %v", env["prev_url"])
				}
				if page > 1 {
					prev, _ := env["prev_url"].(string)
					checkPageURL(t, f, prev, base, page-1)
				}
				if page == 3 {
					if env["next_url"] != nil {
						t.Errorf("last page next_url %v", env["next_url"])
					}
					break
				}
				next, _ = env["next_url"].(string)
				checkPageURL(t, f, next, base, page+1)
			}
			if !slices.Equal(seen, ids) {
				t.Errorf("pages do not walk the shows newest first:\n got %v\nwant %v", seen, ids)
			}
			// A page past the end is an empty 200.
			got, env := f.listIDs(t, base+"&page=4", tok)
			if len(got) != 0 || env["next_url"] != nil || env["count"] != float64(120) {
				t.Errorf("page 4: %v", env)
			}
			// Filters keep working across pages.
			got, env = f.listIDs(t, base+"&archive=true&page=2", tok)
			if len(got) != 10 || env["count"] != float64(60) || env["pages"] != float64(2) || env["next_url"] != nil {
				t.Errorf("archive page 2: %d items, %v", len(got), env)
			}
		})
	}
}

// checkPageURL asserts an absolute page URL that keeps the request's filters.
func checkPageURL(t *testing.T, f *fixture, got, base string, page int) {
	t.Helper()
	u, err := url.Parse(got)
	if err != nil || !strings.HasPrefix(got, f.env.URL+"/v1/") {
		t.Fatalf("page URL %q is not absolute", got)
	}
	want, _ := url.Parse(f.env.URL + base)
	q := u.Query()
	if q.Get("page") != fmt.Sprint(page) {
		t.Errorf("page URL %q: page %q, want %d", got, q.Get("page"), page)
	}
	q.Del("page")
	if q.Encode() != want.Query().Encode() || u.Path != want.Path {
		t.Errorf("page URL %q lost the filters of %q", got, base)
	}
}
