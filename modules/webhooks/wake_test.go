package webhooks_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/webhooks"
)

// hourPoll makes the safety poll an hour: whatever arrives within the
// test's patience was sent because the worker was woken or knew when.
func hourPoll(c *app.Config) { c.Set(webhooks.SettingPoll, time.Hour) }

// A node's workers sleep on work, not on the poll: with a poll of an hour,
// every kind of change this node commits (a ping, a show change, a chat
// message, a follow) is delivered at once, and a failed attempt's retry
// at its time (5 s ± 20 %).
func TestWorkersWakeOnWorkWithoutPolling(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env := newEnv(t, backend, hourPoll)
		rcv := newReceiver(t, 500)
		star, tok := env.CreateUser("Wendy Wake")
		_, fanTok := env.CreateUser("Fergus Fan")
		id, _ := createWebhook(t, env, tok, rcv.URL, "ping", "show.created", "chat.message.created", "user.followed")

		env.Do("POST", fmt.Sprintf("/v1/webhooks/%d/ping", id), tok, nil).Expect(t, 202)
		first := rcv.waitFor(1)[0] // answered 500: retried in about 5 s
		show := onairtest.CreateShow(t, env, tok, nil).ID
		env.Do("POST", fmt.Sprintf("/v1/shows/%d/chats", show), fanTok, map[string]any{"message": "awake?"}).Expect(t, 201)
		env.Do("POST", fmt.Sprintf("/v1/users/%d/follow", star.ID), fanTok, nil).Expect(t, 200)
		got := rcv.waitFor(5)
		types := rcv.types()
		slices.Sort(types)
		if want := []string{"chat.message.created", "ping", "ping", "show.created", "user.followed"}; !slices.Equal(types, want) {
			t.Fatalf("events %v, want %v", types, want)
		}
		for _, g := range got[1:] {
			if g.Event.Type == "ping" {
				if wait := g.At.Sub(first.At); wait < 3*time.Second {
					t.Fatalf("the retry came %v after the failed attempt, before its time (5 s ± 20 %%)", wait)
				}
			}
		}
	})
}

// A delivery another node committed and did not send (its workers
// stopped, as a node that died after its commit) is sent by a node that
// was never told of it, at its safety poll (ONAIR_WEBHOOK_POLL): the bound
// docs/webhooks.md gives for work across nodes.
func TestSafetyPollSendsAnotherNodesDeliveries(t *testing.T) {
	if os.Getenv("ONAIR_TEST_MYSQL_DSN") == "" {
		testload.Skip(t, "needs ONAIR_TEST_MYSQL_DSN")
	}
	dsn := onairtest.FreshMySQL(t)
	a := onairtest.New(t, onairtest.Options{DatabaseURL: dsn, Configure: configure(hourPoll)})
	b := onairtest.New(t, onairtest.Options{DatabaseURL: dsn, Configure: configure(func(c *app.Config) {
		c.Set(webhooks.SettingPoll, time.Second)
	})})
	rcv := newReceiver(t)
	_, tok := a.CreateUser("Nora Node")
	id, _ := createWebhook(t, a, tok, rcv.URL, "ping", "show.created")
	// B's first round ran at its start; let it fall asleep before A's work.
	if err := module(t, a).Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	a.Do("POST", fmt.Sprintf("/v1/webhooks/%d/ping", id), tok, nil).Expect(t, 202)
	onairtest.CreateShow(t, a, tok, nil)
	rcv.waitFor(2)
	if sa, sb := sent(t, a.Core.Metrics), sent(t, b.Core.Metrics); sa != 0 {
		t.Fatalf("node A, stopped, sent %v; B %v", sa, sb)
	}
	testload.Poll(t, "node B counted its two attempts", func() error {
		if sb := sent(t, b.Core.Metrics); sb != 2 {
			return fmt.Errorf("node B sent %v", sb)
		}
		return nil
	})
}
