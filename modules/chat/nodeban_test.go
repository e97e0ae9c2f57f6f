package chat_test

import (
	"context"
	"net/http"
	"os"
	"strconv"
	"testing"

	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/chat"
)

// TestModerationAcrossNodes: a post reads bans and slow mode from the
// database on every post (nothing cached), so what a moderator sets
// through node A holds for the very next post through node B: a ban on
// every chat refuses it, the unban lets it through, and under a slow mode
// of 30 s the window B opens for a post is 30 s (the Retry-After node A
// answers next), not the default second.
func TestModerationAcrossNodes(t *testing.T) {
	if os.Getenv(onairtest.MySQLEnv) == "" || os.Getenv(onairtest.RedisEnv) == "" {
		testload.Skip(t, "needs %s and %s (the README's test command sets both)", onairtest.MySQLEnv, onairtest.RedisEnv)
	}
	dsn := onairtest.FreshMySQL(t)
	prefix := "onairtest:" + strconv.FormatInt(int64(os.Getpid()), 10) + ":" + t.Name() + ":"
	a := onairtest.New(t, onairtest.Options{DatabaseURL: dsn, Redis: true, RedisPrefix: prefix})
	b := onairtest.New(t, onairtest.Options{DatabaseURL: dsn, Redis: true, RedisPrefix: prefix})
	modA, _ := onairtest.Module[*chat.Module](a)
	_, ownerTok := a.CreateUser("Nora Node")
	_, modTok := a.CreateUser("Mo Derator", onairtest.Role("moderator"))
	fan, fanTok := a.CreateUser("Fay Fan")
	_, latecomerTok := a.CreateUser("Lee Later")
	show := onairtest.CreateShow(t, a, ownerTok, nil).ID
	mod := principal(t, a, modTok)
	ctx := context.Background()

	if _, err := modA.Service.Ban(ctx, fan.ID, 0, "spam", mod); err != nil {
		t.Fatal(err)
	}
	b.Do("POST", chatPath(show, "/chats"), fanTok, map[string]any{"message": "let me in"}).Expect(t, http.StatusForbidden)
	if err := modA.Service.Unban(ctx, fan.ID, 0, mod); err != nil {
		t.Fatal(err)
	}
	b.Do("POST", chatPath(show, "/chats"), fanTok, map[string]any{"message": "sorry"}).Expect(t, http.StatusCreated)

	if err := modA.Service.SetSlowMode(ctx, show, 30, mod); err != nil {
		t.Fatal(err)
	}
	b.Do("POST", chatPath(show, "/chats"), latecomerTok, map[string]any{"message": "hi"}).Expect(t, http.StatusCreated)
	r := a.Do("POST", chatPath(show, "/chats"), latecomerTok, map[string]any{"message": "hi again"}).Expect(t, http.StatusTooManyRequests)
	// Under the default second the answer would be Retry-After: 1.
	if ra, _ := strconv.Atoi(r.Header.Get("Retry-After")); ra < 2 || ra > 30 {
		t.Errorf("Retry-After %q: node B did not open a 30 s slow-mode window", r.Header.Get("Retry-After"))
	}
}
