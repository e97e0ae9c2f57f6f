package shows_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/shows"
	"github.com/onair/onair/modules/users"
)

// fixture is one running OnAir with the shows service at hand.
type fixture struct {
	t   *testing.T
	env *onairtest.Env
	svc *shows.Service
	ctx context.Context
}

func newFixture(t *testing.T, backend string) *fixture {
	t.Helper()
	return fixtureOn(t, onairtest.New(t, onairtest.Options{Backend: backend}))
}

// fixtureOn is the fixture of a booted env: each show onairtest.CreateShow
// makes there has its write form checked field by field (checkShow).
func fixtureOn(t *testing.T, env *onairtest.Env) *fixture {
	f := &fixture{t: t, env: env, svc: shows.From(env.Core), ctx: context.Background()}
	env.CheckShow = func(t testing.TB, sh onairtest.Object) { t.Helper(); f.checkShow(t, sh, true) }
	return f
}

// user makes a user with a token.
func (f *fixture) user(name string, opts ...onairtest.UserOption) (*users.User, string) {
	f.t.Helper()
	return f.env.CreateUser(name, opts...)
}

func (f *fixture) do(t *testing.T, method, path, token string, body any) *onairtest.Response {
	t.Helper()
	return f.env.Do(method, path, token, body)
}

func showOf(t *testing.T, r *onairtest.Response) map[string]any {
	t.Helper()
	m := r.JSON(t)
	sh, ok := m["show"].(map[string]any)
	if !ok || len(m) != 1 {
		t.Fatalf("want {\"show\": {...}}, got %s", r.Body)
	}
	return sh
}

func id(sh map[string]any) int64 { return onairtest.ID(sh) }

// expectError checks the status and the one error shape.
func expectError(t *testing.T, r *onairtest.Response, status int) map[string]any {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Body)
	}
	return errorBody(t, r)
}

func errorBody(t *testing.T, r *onairtest.Response) map[string]any {
	t.Helper()
	m := r.JSON(t)
	e, ok := m["error"].(map[string]any)
	if !ok || len(m) != 1 {
		t.Fatalf("not an error body: %s", r.Body)
	}
	if int(e["status"].(float64)) != r.Status {
		t.Fatalf("error.status %v but HTTP %d", e["status"], r.Status)
	}
	for _, k := range []string{"code", "message"} {
		if s, _ := e[k].(string); s == "" {
			t.Fatalf("error.%s missing: %s", k, r.Body)
		}
	}
	return e
}

func fieldError(t *testing.T, r *onairtest.Response, field string) {
	t.Helper()
	e := expectError(t, r, http.StatusUnprocessableEntity)
	fields, _ := e["fields"].(map[string]any)
	if _, ok := fields[field]; !ok {
		t.Fatalf("want a problem on field %q: %s", field, r.Body)
	}
}

var (
	timestampRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$`)
	streamKeyRE = regexp.MustCompile(`^sk_\d+_[0-9A-Za-z]{22}$`)
)

var showKeys = []string{"id", "url", "object_url", "slug", "name", "description", "start", "created_at", "duration",
	"live", "complete", "archive", "featured", "upload", "private", "radio", "off", "ends_at", "audio_only", "chat_enabled",
	"downloadable", "downloads", "comments_count", "favorites_count", "thumbnail_label", "video_url", "audio_url", "image_url", "gif_url", "embed_code", "tags", "user"}

var userKeys = []string{"id", "url", "object_url", "slug", "name", "location", "description", "created_at", "dj",
	"producer", "featured", "image_url", "cover_url"}

// checkShow asserts every field's presence and type: write is the form of
// POST, PUT and stop responses.
func (f *fixture) checkShow(t testing.TB, sh map[string]any, write bool) {
	t.Helper()
	base := f.env.URL
	want := append([]string(nil), showKeys...)
	wantUser := append([]string(nil), userKeys...)
	if write {
		want = append(want, "stream_url", "stream_key", "ingest")
		wantUser = append(wantUser, "email", "radio")
	}
	// peak_viewers is an extension for the owner and staff (the reader is
	// not known here; TestPeakViewers in modules/live checks who gets it).
	if p, ok := sh["peak_viewers"]; ok {
		if n, isNum := p.(float64); !isNum || n < 0 {
			t.Errorf("peak_viewers = %v", p)
		}
		want = append(want, "peak_viewers")
	} else if write {
		t.Errorf("a write response (the owner's) lacks peak_viewers")
	}
	sameKeys(t, "show", sh, want)
	user, ok := sh["user"].(map[string]any)
	if !ok {
		t.Fatalf("user is not an object: %v", sh["user"])
	}
	sameKeys(t, "show.user", user, wantUser)
	n := id(sh)
	isType := func(k, typ string, v any) {
		t.Helper()
		ok := false
		switch typ {
		case "string":
			_, ok = v.(string)
		case "bool":
			_, ok = v.(bool)
		case "int":
			x, isNum := v.(float64)
			ok = isNum && x == float64(int64(x))
		case "url":
			s, isStr := v.(string)
			ok = isStr && strings.HasPrefix(s, base+"/")
		case "timestamp":
			s, isStr := v.(string)
			ok = isStr && timestampRE.MatchString(s)
		}
		if !ok {
			t.Fatalf("%s = %#v, want %s", k, v, typ)
		}
	}
	for k, typ := range map[string]string{"id": "int", "url": "url", "object_url": "url", "slug": "string", "name": "string",
		"description": "string", "start": "timestamp", "created_at": "timestamp", "live": "bool", "complete": "bool",
		"archive": "bool", "featured": "bool", "upload": "bool", "private": "bool", "radio": "bool", "off": "bool",
		"audio_only": "bool", "chat_enabled": "bool", "downloadable": "bool", "comments_count": "int", "favorites_count": "int", "thumbnail_label": "string", "image_url": "url", "embed_code": "string"} {
		isType(k, typ, sh[k])
	}
	if sh["duration"] != nil {
		isType("duration", "int", sh["duration"])
	}
	if sh["ends_at"] != nil {
		isType("ends_at", "timestamp", sh["ends_at"])
	}
	// downloads (extension, modules/downloads): null, or the files of an
	// archived show: audio for a show with audio, video for one with
	// video.
	if d := sh["downloads"]; d != nil {
		files, ok := d.(map[string]any)
		if !ok || sh["archive"] != true || len(files) == 0 {
			t.Fatalf("downloads = %#v on a show with archive %v", d, sh["archive"])
		}
		for file, media := range map[string]string{"audio": "audio_url", "video": "video_url"} {
			if (files[file] != nil) != (sh[media] != nil) {
				t.Fatalf("downloads.%s = %v on a show with %s %v", file, files[file], media, sh[media])
			}
			if files[file] != nil {
				isType("downloads."+file, "url", files[file])
			}
		}
	}
	for _, k := range []string{"video_url", "audio_url", "gif_url"} {
		if s, ok := sh[k].(string); sh[k] != nil && (!ok || !(strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://"))) {
			t.Fatalf("%s = %#v, want null or an absolute URL", k, sh[k])
		}
	}
	if got := sh["object_url"]; got != fmt.Sprintf("%s/v1/shows/%d", base, n) {
		t.Fatalf("object_url = %v", got)
	}
	if got := sh["url"]; got != base+"/"+user["slug"].(string)+"/"+sh["slug"].(string) {
		t.Fatalf("url = %v", got)
	}
	if got, want := sh["embed_code"].(string), fmt.Sprintf(`<iframe src="%s/embed/%d"`, base, n); !strings.HasPrefix(got, want) || !strings.HasSuffix(got, "</iframe>") {
		t.Fatalf("embed_code = %q", got)
	}
	tags, ok := sh["tags"].([]any)
	if !ok {
		t.Fatalf("tags = %#v, want an array", sh["tags"])
	}
	for _, tag := range tags {
		tm, _ := tag.(map[string]any)
		sameKeys(t, "tag", tm, []string{"name", "slug"})
	}
	for k, typ := range map[string]string{"id": "int", "url": "url", "object_url": "url", "slug": "string", "name": "string",
		"created_at": "timestamp", "dj": "bool", "producer": "bool", "featured": "bool", "image_url": "url", "cover_url": "url"} {
		isType("user."+k, typ, user[k])
	}
	if write {
		if sh["stream_url"] != app.Get[string](f.env.Core.Config, shows.SettingRTMPURL) {
			t.Fatalf("stream_url = %v, want %s", sh["stream_url"], app.Get[string](f.env.Core.Config, shows.SettingRTMPURL))
		}
		if k, _ := sh["stream_key"].(string); !streamKeyRE.MatchString(k) || !strings.HasPrefix(k, fmt.Sprintf("sk_%d_", n)) {
			t.Fatalf("stream_key = %v", sh["stream_key"])
		}
		// The extension lists the RTMP address (the only listener the
		// tests run by default: RTMPS and SRT are off).
		if in, _ := sh["ingest"].(map[string]any); in == nil || in["rtmp"] != sh["stream_url"] {
			t.Fatalf("ingest = %v", sh["ingest"])
		}
		isType("user.email", "string", user["email"])
		isType("user.radio", "bool", user["radio"])
	}
}

func sameKeys(t testing.TB, what string, m map[string]any, want []string) {
	t.Helper()
	got := make([]string, 0, len(m))
	for k := range m {
		got = append(got, k)
	}
	sort.Strings(got)
	w := append([]string(nil), want...)
	sort.Strings(w)
	if strings.Join(got, ",") != strings.Join(w, ",") {
		t.Fatalf("%s keys:\n got %v\nwant %v", what, got, w)
	}
}

// listIDs fetches a list and returns the ids of its page (envelope checked).
func (f *fixture) listIDs(t *testing.T, path, token string) ([]int64, map[string]any) {
	t.Helper()
	r := f.do(t, "GET", path, token, nil).Expect(t, http.StatusOK)
	m := r.JSON(t)
	sameKeys(t, "list", m, []string{"page", "next_url", "prev_url", "pages", "count", "shows"})
	list, ok := m["shows"].([]any)
	if !ok {
		t.Fatalf("shows is not an array: %s", r.Body)
	}
	ids := make([]int64, 0, len(list))
	for _, s := range list {
		sh := s.(map[string]any)
		f.checkShow(t, sh, false)
		ids = append(ids, id(sh))
	}
	return ids, m
}

// seedSpec describes one show inserted directly through Bun.
type seedSpec struct {
	owner                                                  int64
	name                                                   string
	start                                                  time.Time
	live, complete, archive, featured, private, radio, off bool
	tags                                                   []string
}

// seed inserts shows in one multi-row INSERT (plus their tags) and returns
// their ids in the order given. The HTTP path is tested elsewhere; many
// rows through it would only make the MySQL run slow.
func (f *fixture) seed(t *testing.T, specs []seedSpec) []int64 {
	t.Helper()
	db := f.svc.DB()
	now := app.Now()
	rows := make([]shows.Show, len(specs))
	prefix := fmt.Sprintf("seed-%d", seedCounter.next())
	for i, s := range specs {
		label := shows.LabelStartingSoon
		var dur *int
		if s.live {
			label = shows.LabelLive
		}
		if s.complete {
			d := 3600
			dur, label = &d, shows.LabelFinished
		}
		name := s.name
		if name == "" {
			name = fmt.Sprintf("Seeded %d", i)
		}
		rows[i] = shows.Show{UserID: s.owner, Slug: fmt.Sprintf("%s-%d", prefix, i), Name: name, Description: "seeded",
			Start: s.start.UTC().Truncate(time.Second), CreatedAt: now, UpdatedAt: now, Duration: dur,
			Live: s.live, Complete: s.complete, Archive: s.archive, Featured: s.featured, Private: s.private,
			Radio: s.radio, Off: s.off, ThumbnailLabel: label, StreamKey: "sk_0_seeded"}
	}
	// Name the columns: on SQLite, Bun otherwise picks them from the first
	// row and drops the defaulted ones that row leaves at zero, for all rows.
	cols := []string{"user_id", "slug", "name", "description", "start", "created_at", "updated_at", "duration",
		"live", "complete", "archive", "featured", "private", "radio", "off", "thumbnail_label", "stream_key"}
	if _, err := db.NewInsert().Model(&rows).Column(cols...).Exec(f.ctx); err != nil {
		t.Fatalf("seed: %v", err)
	}
	// MySQL reports only the first id of a multi-row insert: read them back.
	var got []shows.Show
	if err := db.NewSelect().Model(&got).Column("id", "slug").Where("slug LIKE ?", prefix+"-%").Scan(f.ctx); err != nil {
		t.Fatalf("seed: read ids: %v", err)
	}
	bySlug := map[string]int64{}
	for _, g := range got {
		bySlug[g.Slug] = g.ID
	}
	ids := make([]int64, len(specs))
	var links []shows.ShowTag
	for i, s := range specs {
		ids[i] = bySlug[rows[i].Slug]
		if len(s.tags) > 0 {
			tags, err := users.EnsureTags(f.ctx, db, s.tags)
			if err != nil {
				t.Fatalf("seed tags: %v", err)
			}
			for _, tag := range tags {
				links = append(links, shows.ShowTag{ShowID: ids[i], TagID: tag.ID, Start: rows[i].Start})
			}
		}
	}
	if len(links) > 0 {
		if _, err := db.NewInsert().Model(&links).Exec(f.ctx); err != nil {
			t.Fatalf("seed show_tags: %v", err)
		}
		// Each show's copy of its tag ids, as Create would have written it.
		if err := shows.FillTagIDs(f.ctx, db); err != nil {
			t.Fatalf("seed tag ids: %v", err)
		}
	}
	// The name filter's index, as Create would have written it (on
	// SQLite the FTS5 triggers did).
	var grams []shows.ShowGram
	for i := range rows {
		if !app.IsMySQL(db) {
			break
		}
		for _, g := range shows.NameGrams(rows[i].Name) {
			grams = append(grams, shows.ShowGram{Gram: g, ShowID: ids[i], Name: rows[i].Name, Start: rows[i].Start,
				Public: !rows[i].Private && !rows[i].Off})
		}
	}
	if len(grams) > 0 {
		if _, err := db.NewInsert().Model(&grams).Exec(f.ctx); err != nil {
			t.Fatalf("seed show_grams: %v", err)
		}
	}
	// Rows written around the service: the maintained counts are rebuilt.
	if err := shows.RebuildCounts(f.ctx, db); err != nil {
		t.Fatalf("seed counts: %v", err)
	}
	return ids
}

type counter struct {
	mu sync.Mutex
	n  int
}

func (c *counter) next() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return c.n
}

var seedCounter counter

// form builds a urlencoded body.
func form(kv ...string) url.Values {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Add(kv[i], kv[i+1])
	}
	return v
}

// multipartBody builds a multipart/form-data body and its content type.
func multipartBody(kv ...string) (string, string) {
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for i := 0; i+1 < len(kv); i += 2 {
		w.WriteField(kv[i], kv[i+1])
	}
	w.Close()
	return b.String(), w.FormDataContentType()
}

func (f *fixture) doMultipart(t *testing.T, method, path, token string, kv ...string) *onairtest.Response {
	t.Helper()
	body, ct := multipartBody(kv...)
	return f.env.DoWith(method, path, token, body, http.Header{"Content-Type": {ct}})
}

// openAPIChecker validates recorded responses against /v1/openapi.json:
// every status answered must be documented, and every JSON body must fit
// its schema.
type openAPIChecker struct {
	doc    *openapi3.T
	routes []route
	mu     sync.Mutex
	errs   []string
}

type route struct {
	re   *regexp.Regexp
	item *openapi3.PathItem
}

func newOpenAPIChecker(t *testing.T, f *fixture) *openAPIChecker {
	t.Helper()
	r := f.do(t, "GET", "/v1/openapi.json", "", nil).Expect(t, http.StatusOK)
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(r.Body)
	if err != nil {
		t.Fatalf("openapi: %v", err)
	}
	c := &openAPIChecker{doc: doc}
	for path, item := range doc.Paths.Map() {
		if !strings.HasPrefix(path, "/v1/shows") && !strings.HasSuffix(path, "/shows") {
			continue
		}
		pattern := "^" + regexp.MustCompile(`\\\{[^}]+\\\}`).ReplaceAllString(regexp.QuoteMeta(path), `[^/]+`) + "$"
		c.routes = append(c.routes, route{regexp.MustCompile(pattern), item})
	}
	return c
}

func (c *openAPIChecker) record(req *http.Request, resp *http.Response, body []byte) {
	var item *openapi3.PathItem
	for _, r := range c.routes {
		if r.re.MatchString(req.URL.Path) {
			item = r.item
		}
	}
	if item == nil {
		return
	}
	fail := func(format string, args ...any) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.errs = append(c.errs, fmt.Sprintf("%s %s → %d: ", req.Method, req.URL.Path, resp.StatusCode)+fmt.Sprintf(format, args...))
	}
	op := item.GetOperation(req.Method)
	if op == nil {
		if resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMethodNotAllowed {
			fail("operation not documented")
		}
		return
	}
	ref := op.Responses.Status(resp.StatusCode)
	if ref == nil || ref.Value == nil {
		fail("status not documented")
		return
	}
	mt := ref.Value.Content.Get("application/json")
	if mt == nil || mt.Schema == nil {
		return
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		fail("body is not JSON: %v", err)
		return
	}
	if err := mt.Schema.Value.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
		fail("body does not fit the schema: %v", err)
	}
}

func (c *openAPIChecker) check(t *testing.T) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, e := range c.errs {
		if i == 10 {
			t.Errorf("… and %d more", len(c.errs)-10)
			break
		}
		t.Error(e)
	}
}
