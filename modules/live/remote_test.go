package live_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/shows"
)

// TestRemoteChangeDisconnectsPublisher: two nodes on one MariaDB database
// and one Redis; an encoder publishes to node A. A stop, a take-off or a
// delete sent to node B cuts A's publisher within 2 s (the show event
// reaches A through the events stream), and A archives a stopped show.
func TestRemoteChangeDisconnectsPublisher(t *testing.T) {
	if os.Getenv(onairtest.MySQLEnv) == "" || os.Getenv(onairtest.RedisEnv) == "" {
		testload.Skip(t, "needs %s and %s (the README's test command sets both)", onairtest.MySQLEnv, onairtest.RedisEnv)
	}
	requireTools(t, "ffmpeg")
	db := onairtest.FreshMySQL(t)
	prefix := fmt.Sprintf("onairtest:%d:", time.Now().UnixNano())
	a := onairtest.New(t, onairtest.Options{DatabaseURL: db, Redis: true, RedisPrefix: prefix})
	b := onairtest.New(t, onairtest.Options{DatabaseURL: db, Redis: true, RedisPrefix: prefix})
	t.Cleanup(func() { a.Core.Redis.Del(context.Background(), prefix+shows.EventsStream) })
	_, token := a.CreateUser("Remote Cut")
	staff, _ := a.CreateUser("Remote Staff", onairtest.Role("moderator"))
	staffBy := &app.Principal{UserID: staff.ID, Roles: []string{"user", "moderator"}}

	for _, tc := range []struct {
		name string
		do   func(t *testing.T, id int64)
	}{
		{"stop", func(t *testing.T, id int64) {
			b.Do("POST", fmt.Sprintf("/v1/shows/%d/stop", id), token, nil).Expect(t, http.StatusOK)
		}},
		{"take off", func(t *testing.T, id int64) {
			if _, err := shows.From(b.Core).SetOff(context.Background(), id, true, staffBy); err != nil {
				t.Fatal(err)
			}
		}},
		{"delete", func(t *testing.T, id int64) {
			b.Do("DELETE", fmt.Sprintf("/v1/shows/%d", id), token, nil).Expect(t, http.StatusOK)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bc := onairtest.CreateShow(t, a, token, nil)
			_, done := publish(t, bc.RTMP+"/"+bc.Key, 60, false)
			bc.Await(t, "live", isLive)
			sent := time.Now()
			tc.do(t, bc.ID)
			exited(t, "ffmpeg on A after the "+tc.name+" on B", done)
			if took := time.Since(sent); took > 2*time.Second {
				t.Errorf("A's publisher was cut %s after the %s on B, want within 2 s", took, tc.name)
			}
			if tc.name == "stop" {
				// A, which holds the recording, archives the show.
				bc.Await(t, "archived", func(s map[string]any) bool { return s["archive"] == true })
			}
		})
	}
}
