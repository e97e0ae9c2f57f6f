package onairtest

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/shows"
)

// The test kit: what the modules' tests do again and again, in one place.

// Object is a JSON object of an answer, decoded as encoding/json decodes
// into any (numbers are float64).
type Object map[string]any

// ID is the object's "id" as the int64 it is on the wire. An object
// without a numeric id panics: the test is wrong, not the server.
func (o Object) ID() int64 {
	f, ok := o["id"].(float64)
	if !ok {
		panic(fmt.Sprintf("onairtest: no numeric id in %v", map[string]any(o)))
	}
	return int64(f)
}

// ID is Object(m).ID(): the "id" of a decoded JSON object.
func ID(m map[string]any) int64 { return Object(m).ID() }

// Object decodes the body and returns its member key, a JSON object
// (failing the test otherwise): r.Object(t, "show").
func (r *Response) Object(t testing.TB, key string) Object {
	t.Helper()
	o, ok := r.JSON(t)[key].(map[string]any)
	if !ok {
		t.Fatalf("no object %q in the answer: %s", key, r.Body)
	}
	return o
}

// Show is a show created through the API, with its owner's token at hand.
type Show struct {
	Env   *Env
	Token string // its owner's
	ID    int64
	Key   string // its stream key
	Path  string // its page on the site, /{user slug}/{show slug}
	// RTMP is the live module's RTMP URL, rtmp://host:port/live, the key
	// to be appended ("" when the live module does not run; for a server
	// in another process, the stream_url it answered, which NewProcess
	// points at its listener).
	RTMP string
	// Object is the show as POST /v1/shows answered it (the write form).
	Object Object
}

var showSeq atomic.Int64

// rtmpModule is the live module as the kit sees it, without importing it.
type rtmpModule interface {
	app.Module
	RTMPAddr() string
}

// CreateShow creates a show owned by token's user with POST /v1/shows and
// fails the test unless the answer is 201 with the show alone. fields are
// sent on top of a name unique in the test binary and a description, which
// they may replace. The env's CheckShow, when set, checks the answer.
func CreateShow(t testing.TB, env *Env, token string, fields map[string]any) *Show {
	t.Helper()
	body := map[string]any{"name": "Test Show " + strconv.FormatInt(showSeq.Add(1), 10), "description": "A test show."}
	for k, v := range fields {
		body[k] = v
	}
	r := env.Do("POST", "/v1/shows", token, body).Expect(t, http.StatusCreated)
	if m := r.JSON(t); len(m) != 1 {
		t.Fatalf("want {\"show\": {...}}, got %s", r.Body)
	}
	sh := r.Object(t, "show")
	if env.CheckShow != nil {
		env.CheckShow(t, sh)
	}
	u, err := url.Parse(sh["url"].(string))
	if err != nil {
		t.Fatalf("show url: %v", err)
	}
	key, _ := sh["stream_key"].(string)
	s := &Show{Env: env, Token: token, ID: sh.ID(), Key: key, Path: u.Path, Object: sh}
	if env.Core == nil { // a server in another process (Process.Client)
		s.RTMP, _ = sh["stream_url"].(string)
		return s
	}
	if m, ok := app.Lookup[rtmpModule](env.Core); ok {
		s.RTMP = "rtmp://" + m.RTMPAddr() + "/live"
	}
	return s
}

// Get reads the show as its owner (GetShow).
func (s *Show) Get(t testing.TB) Object {
	t.Helper()
	return GetShow(t, s.Env, s.Token, s.ID)
}

// Await reads the show as its owner until cond holds (AwaitShow).
func (s *Show) Await(t testing.TB, what string, cond func(map[string]any) bool) Object {
	t.Helper()
	return AwaitShow(t, s.Env, s.Token, s.ID, what, cond)
}

// Health is the show's stream health, GET /v1/shows/{id}/health as its
// owner.
func (s *Show) Health(t testing.TB) map[string]any {
	t.Helper()
	return s.Env.Do("GET", "/v1/shows/"+strconv.FormatInt(s.ID, 10)+"/health", s.Token, nil).Expect(t, http.StatusOK).Object(t, "health")
}

// PublishShow makes a show live as the live module does when it accepts a
// publisher (shows.Service.GoLive), without media flowing; media gives its
// playlists (none when zero).
func PublishShow(t testing.TB, env *Env, id int64, media shows.Media) *shows.Show {
	t.Helper()
	sh, err := shows.From(env.Core).GoLive(context.Background(), id, media)
	if err != nil {
		t.Fatalf("show %d goes live: %v", id, err)
	}
	return sh
}

// GetShow reads show id through the API as token's user and fails the
// test unless the answer is 200.
func GetShow(t testing.TB, env *Env, token string, id int64) Object {
	t.Helper()
	return env.Do("GET", "/v1/shows/"+strconv.FormatInt(id, 10), token, nil).Expect(t, http.StatusOK).Object(t, "show")
}

// AwaitShow reads show id (GetShow) until cond holds; testload.Patience
// bounds a hang.
func AwaitShow(t testing.TB, env *Env, token string, id int64, what string, cond func(map[string]any) bool) Object {
	t.Helper()
	var sh Object
	testload.Poll(t, "show "+what, func() error {
		if sh = GetShow(t, env, token, id); !cond(sh) {
			return fmt.Errorf("show is %v", map[string]any(sh))
		}
		return nil
	})
	return sh
}
