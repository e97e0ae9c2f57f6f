package chat_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/chat"
)

// marked is the context key of the calls whose round trips count.
type marked struct{}

// tripLog records the statements and Redis commands made on a marked
// context, in order, and holds the round trips of each meeting until
// the other side of it has begun (or meetWait passed).
type tripLog struct {
	mu       sync.Mutex
	trips    []string
	meetings []*meeting
}

// A meeting is two round trips a post should make at once: each side,
// when it begins, waits for the other to begin. Made in turn, the first
// would wait meetWait in vain and missed says so.
type meeting struct {
	name    string
	sides   [2]func(string) bool // does a round trip's text belong to side i
	begun   [2]chan struct{}
	once    [2]sync.Once
	missed  atomic.Bool
	reached atomic.Int32
}

// meetWait is how long a side waits for the other; a post that makes
// them in turn fails the test after it.
const meetWait = 10 * time.Second

func newMeeting(name string, a, b func(string) bool) *meeting {
	return &meeting{name: name, sides: [2]func(string) bool{a, b}, begun: [2]chan struct{}{make(chan struct{}), make(chan struct{})}}
}

// begin is a round trip's start: when it is a side of m, mark it begun
// and wait for the other side.
func (m *meeting) begin(what string) {
	for i, side := range m.sides {
		if !side(what) {
			continue
		}
		m.once[i].Do(func() { close(m.begun[i]); m.reached.Add(1) })
		select {
		case <-m.begun[1-i]:
		case <-time.After(meetWait):
			m.missed.Store(true)
		}
		return
	}
}

func (l *tripLog) begin(ctx context.Context, what string) {
	if ctx.Value(marked{}) == nil {
		return
	}
	for _, m := range l.meetings {
		m.begin(what)
	}
}

func (l *tripLog) add(ctx context.Context, what string) {
	if ctx.Value(marked{}) == nil {
		return
	}
	l.mu.Lock()
	l.trips = append(l.trips, what)
	l.mu.Unlock()
}

func (l *tripLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.trips
	l.trips = nil
	return t
}

func (l *tripLog) BeforeQuery(ctx context.Context, ev *bun.QueryEvent) context.Context {
	l.begin(ctx, "sql: "+ev.Query)
	return ctx
}

func (l *tripLog) AfterQuery(ctx context.Context, ev *bun.QueryEvent) {
	q := ev.Query
	if len(q) > 90 {
		q = q[:90] + "…"
	}
	l.add(ctx, "sql: "+q)
}

// The go-redis hook: one round trip per command or pipeline.
func (*tripLog) DialHook(next redis.DialHook) redis.DialHook { return next }

func (l *tripLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		l.begin(ctx, "redis: "+cmd.Name())
		l.add(ctx, "redis: "+cmd.Name())
		return next(ctx, cmd)
	}
}

func (l *tripLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		l.add(ctx, "redis: pipeline")
		return next(ctx, cmds)
	}
}

var _ redis.Hook = (*tripLog)(nil)

// TestPostRoundTrips pins the database statements and Redis commands of
// one chat post (Service.Post, what POST /v1/shows/:id/chats runs after
// authentication and the per-token limiter): on a loaded machine each
// round trip waits for the run queue, so a new one is a cost every post
// pays. On MySQL with Redis it is the cluster path.
//
// Two pairs of them go at once, so that a post waits for one of each
// pair: the show's row and the author's, and (with Redis) the publish
// and the count's update. The hooks hold each side until the other has
// begun: made in turn, the post would wait meetWait and fail here.
func TestPostRoundTrips(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		withRedis := backend == "mysql" && os.Getenv(onairtest.RedisEnv) != ""
		isUpdate := func(s string) bool {
			return strings.HasPrefix(s, "sql: UPDATE") && strings.Contains(s, "comments_count")
		}
		reads := newMeeting("the show's row and the author's",
			func(s string) bool { return strings.HasPrefix(s, "sql: SELECT") && strings.Contains(s, "FROM `shows`") },
			func(s string) bool { return strings.HasPrefix(s, "sql: SELECT") && strings.Contains(s, "chat_banned") })
		log := &tripLog{}
		if backend == "mysql" {
			// SQLite's one connection takes the reads in turn.
			log.meetings = append(log.meetings, reads)
		}
		if withRedis {
			log.meetings = append(log.meetings, newMeeting("the publish and the count", func(s string) bool { return s == "redis: publish" }, isUpdate))
		}
		opts := onairtest.Options{Backend: backend, QueryHooks: []bun.QueryHook{log}}
		opts.Redis = withRedis
		env := onairtest.New(t, opts)
		if withRedis {
			env.Core.Redis.AddHook(log)
		}
		mod, ok := onairtest.Module[*chat.Module](env)
		if !ok {
			t.Fatal("no chat module")
		}
		_, ownerTok := env.CreateUser("Rita Roundtrip")
		fan, _ := env.CreateUser("Fay Fan")
		showID := onairtest.CreateShow(t, env, ownerTok, nil).ID
		by := &app.Principal{UserID: fan.ID, Roles: []string{"user"}}
		ctx := context.WithValue(context.Background(), marked{}, true)
		m, err := mod.Service.Post(ctx, showID, by, "hello")
		if err != nil {
			t.Fatal(err)
		}
		if m.User == nil || m.User.Name != "Fay Fan" {
			t.Errorf("the message's author is %+v", m.User)
		}
		trips := log.take()
		t.Logf("%d round trips:\n%s", len(trips), strings.Join(trips, "\n"))
		var sqlN, redisN int
		var statements []string
		for _, tr := range trips {
			if strings.HasPrefix(tr, "redis: ") {
				redisN++
			} else {
				sqlN++
				statements = append(statements, tr)
			}
		}
		// The show's comments_count moves in a statement of its own after
		// the message's commit: no transaction holds the show's row lock
		// across a round trip.
		if n := len(statements); n < 2 || !strings.Contains(statements[n-2], "COMMIT") || !isUpdate(statements[n-1]) {
			t.Errorf("the comments_count update does not follow the commit")
		}
		// The pairs went at once: each side began while the other was
		// held (and the room's publish did not wait for the count).
		for _, m := range log.meetings {
			if n := m.reached.Load(); n != 2 || m.missed.Load() {
				t.Errorf("%s: %d of 2 began, one waited %v for the other: %v", m.name, n, meetWait, m.missed.Load())
			}
		}
		if withRedis && !slices.Contains(trips, "redis: publish") {
			t.Errorf("the message was not published")
		}
		wantSQL, wantRedis := 7, 0
		if withRedis {
			wantRedis = 2
		}
		if sqlN != wantSQL || redisN != wantRedis {
			t.Errorf("a post made %d statements and %d Redis commands, want %d and %d", sqlN, redisN, wantSQL, wantRedis)
		}
	})
}

// TestCountFailsAfterCommit: the show's comments_count moves after the
// message's commit (Service.count), so when that update fails (here a
// real trigger on the database refuses it) the message is kept and
// answered 201, and the failure is logged; the poster has nothing to
// send again.
func TestCountFailsAfterCommit(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env := onairtest.New(t, onairtest.Options{Backend: backend})
		_, ownerTok := env.CreateUser("Cora Count")
		_, fanTok := env.CreateUser("Finn Fan")
		showID := onairtest.CreateShow(t, env, ownerTok, nil).ID
		ctx := context.Background()
		trigger := "CREATE TRIGGER refuse_count BEFORE UPDATE ON shows FOR EACH ROW WHEN NEW.comments_count <> OLD.comments_count BEGIN SELECT RAISE(ABORT, 'count refused'); END"
		if backend == "mysql" {
			trigger = "CREATE TRIGGER refuse_count BEFORE UPDATE ON shows FOR EACH ROW BEGIN IF NEW.comments_count <> OLD.comments_count THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'count refused'; END IF; END"
		}
		if _, err := env.Core.DB.ExecContext(ctx, trigger); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { env.Core.DB.ExecContext(context.Background(), "DROP TRIGGER IF EXISTS refuse_count") })

		got := env.Do("POST", chatPath(showID, "/chats"), fanTok, map[string]any{"message": "kept"}).Expect(t, http.StatusCreated).JSON(t)["chat"].(map[string]any)
		if got["message"] != "kept" {
			t.Errorf("answered %v", got)
		}
		n, err := env.Core.DB.NewSelect().Model((*chat.Message)(nil)).Where("show_id = ?", showID).Count(ctx)
		if err != nil || n != 1 {
			t.Fatalf("%d messages stored (%v), want 1", n, err)
		}
		if logs := env.Logs(); !strings.Contains(logs, "comments_count was not moved") || !strings.Contains(logs, "count refused") {
			t.Errorf("the failed update is not logged:\n%s", logs)
		}
		s := env.Do("GET", fmt.Sprintf("/v1/shows/%d", showID), fanTok, nil).Expect(t, http.StatusOK).JSON(t)["show"].(map[string]any)
		if s["comments_count"].(float64) != 0 {
			t.Errorf("comments_count %v, want 0 (the update was refused)", s["comments_count"])
		}
	})
}
