package notify_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/notify"
	"github.com/onair/onair/modules/shows"
)

// refuseMails makes the database refuse every go-live mail of one show,
// as it refused a follower gone's on SQLite (de5bb10): an insert that
// fails for that show at every try.
func refuseMails(t *testing.T, env *onairtest.Env, backend string, show int64) {
	t.Helper()
	q := fmt.Sprintf(`CREATE TRIGGER notify_mails_refused BEFORE INSERT ON notify_mails
		WHEN NEW.show_id = %d BEGIN SELECT RAISE(ABORT, 'mails of this show refused'); END`, show)
	if backend == "mysql" {
		q = fmt.Sprintf(`CREATE TRIGGER notify_mails_refused BEFORE INSERT ON notify_mails FOR EACH ROW
			BEGIN IF NEW.show_id = %d THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'mails of this show refused'; END IF; END`, show)
	}
	if _, err := env.Core.DB.ExecContext(context.Background(), q); err != nil {
		t.Fatal(err)
	}
}

// A show whose go-live job fails at every try holds back no other show's
// mails, though it comes first (a lower show id): the other show's job is
// expanded and its mail sent. The failing job is tried again after 1, 4,
// 16 and 64 minutes (the boot's clock moved), not before, then given up
// at the fifth failure, logged with the show id; a later go-live mails
// again. On the old code the first failure stopped every pass at that job.
func TestFailingJobHoldsUpNoOther(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		env, smtp := withSMTP(t, backend, nil)
		clock := onairtest.NewFakeClock(time.Now().UTC())
		env.Core.Clock.Set(clock.Now)
		m, _ := onairtest.Module[*notify.Module](env)
		stuckDJ, stuckToken := env.CreateUser("Stuck Jay")
		otherDJ, otherToken := env.CreateUser("Other Jay")
		fan, fanToken := env.CreateUser("Fan Of Both")
		for _, dj := range []int64{stuckDJ.ID, otherDJ.ID} {
			env.Do("POST", fmt.Sprintf("/v1/users/%d/follow", dj), fanToken, nil).Expect(t, http.StatusOK)
		}
		job := func(show int64, what string, cond func(j notify.Job) error) notify.Job {
			t.Helper()
			var j notify.Job
			testload.Poll(t, what, func() error {
				j = notify.Job{}
				if err := env.Core.DB.NewSelect().Model(&j).Where("show_id = ?", show).Scan(ctx); err != nil {
					return err
				}
				return cond(j)
			})
			return j
		}
		// logged waits for a line of the server's log (written after
		// the row it tells of).
		logged := func(line string) {
			t.Helper()
			testload.Poll(t, "logged: "+line, func() error {
				if !strings.Contains(env.Logs(), line) {
					return fmt.Errorf("not in the log")
				}
				return nil
			})
		}
		tries := func(n int) func(j notify.Job) error {
			return func(j notify.Job) error {
				if j.Attempts != n {
					return fmt.Errorf("attempts %d, want %d", j.Attempts, n)
				}
				return nil
			}
		}

		stuck := onairtest.CreateShow(t, env, stuckToken, map[string]any{"name": "Refused", "description": "d"}).ID
		refuseMails(t, env, backend, stuck)
		u := "/media/shows/x/master.m3u8"
		onairtest.PublishShow(t, env, stuck, shows.Media{AudioURL: &u})
		failedAt := clock.Now().Truncate(time.Second)
		logged("mails of this show refused")

		// Half a minute on, the other show's job (queued behind the
		// stuck one, a higher id) is expanded and sent.
		clock.Add(30 * time.Second)
		other := goLive(t, env, otherToken, "Goes Through")
		if other <= stuck {
			t.Fatalf("show %d not behind show %d", other, stuck)
		}
		if msg := smtp.Next(); len(msg.To) != 1 || msg.To[0] != fan.Email || !strings.Contains(msg.Mail.Header.Get("Subject"), "Goes Through") {
			t.Fatalf("mail to %v %q, want %s about Goes Through", msg.To, msg.Mail.Header.Get("Subject"), fan.Email)
		}
		if states := settled(t, env, other); states[notify.StatusSent] != 1 || len(states) != 1 {
			t.Errorf("mails of the other show: %v, want one sent", states)
		}

		// The stuck job was tried once, and is not due yet.
		j := job(stuck, "the first try recorded", tries(1))
		if j.ExpandedAt != nil || j.FailedAt != nil || !strings.Contains(j.LastError, "mails of this show refused") {
			t.Fatalf("after one failure: %+v", j)
		}
		logged(fmt.Sprintf(`msg="notify: go-live job failed" show=%d attempt=1`, stuck))

		// Each retry comes due after its backoff; the fifth failure gives
		// the job up.
		for n, wait := range []time.Duration{time.Minute, 4 * time.Minute, 16 * time.Minute, 64 * time.Minute} {
			j := job(stuck, fmt.Sprintf("try %d recorded", n+1), tries(n+1))
			if j.NextAt == nil || !j.NextAt.Equal(failedAt.Add(wait)) {
				t.Fatalf("after try %d next_at %v, want %v", n+1, j.NextAt, failedAt.Add(wait))
			}
			clock.Add(failedAt.Add(wait).Sub(clock.Now()))
			failedAt = clock.Now().Truncate(time.Second)
			m.Wake()
		}
		j = job(stuck, "the job given up", func(j notify.Job) error {
			if j.FailedAt == nil {
				return fmt.Errorf("attempts %d, not given up", j.Attempts)
			}
			return nil
		})
		if j.Attempts != 5 || j.ExpandedAt == nil || !j.FailedAt.Equal(failedAt) {
			t.Errorf("given up: %+v, want 5 attempts at %v", j, failedAt)
		}
		logged(fmt.Sprintf(`msg="notify: go-live job given up" show=%d attempts=5`, stuck))

		// Hours later the given-up job is still left alone, and a new
		// go-live still mails.
		clock.Add(3 * time.Hour)
		late := goLive(t, env, otherToken, "Later On")
		if msg := smtp.Next(); !strings.Contains(msg.Mail.Header.Get("Subject"), "Later On") {
			t.Fatalf("mail %q, want Later On", msg.Mail.Header.Get("Subject"))
		}
		settled(t, env, late)
		if j := job(stuck, "the given-up job", tries(5)); !j.FailedAt.Equal(failedAt) {
			t.Errorf("given-up job changed: %+v", j)
		}
		if more := smtp.Waiting(); len(more) != 0 {
			t.Errorf("%d more mails, the first to %v", len(more), more[0].To)
		}
	})
}
