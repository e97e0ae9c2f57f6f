package shows

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
)

// The lifecycle of a show, the one place its state rules live:
//
//	created   live=false complete=false, "Starting Soon", start = scheduled
//	          start or created_at
//	GoLive    a publisher connects with the key: live=true, start = actual
//	          start, media URLs set, "Live". Refused for complete, deleted
//	          and off shows.
//	PublisherLeft  the publisher dropped: the show stays live; the same key
//	          resumes it (GoLive again keeps start). After the reconnect
//	          window the janitor stops it as the system. Radio shows stay
//	          open across drops and stop after RadioMaxRun.
//	Stop      live → complete, duration = run length, "Finished".
//	Archive   complete non-radio show → archive=true, VOD media URLs, label
//	          HH:MM:SS of the duration.
//	SetOff    staff take a show off (a live one is stopped) or restore it.
//	SetFeatured  staff feature a show.
//	Delete    owner or staff; stops it if live; the row is removed.
//
// Every change runs in a transaction on the locked row, which also writes
// its events to the outbox and runs the SubscribeTx hooks (events.go); the
// events are sent to subscribers after the commit.

// RadioMaxRun is how long a radio show may stay live.
const RadioMaxRun = 24 * time.Hour

// Media are the HLS playlists of a show (absolute URLs or paths on the
// public base). A nil field is "none".
type Media struct {
	VideoURL, AudioURL *string
	// Start, given to GoLive, is the wall-clock time of the first media
	// sample: the show's start, and so the origin of chat positions, is
	// when the broadcast begins, not when its first segment is ready.
	Start *time.Time
	// Duration, given to Archive, is the recording's duration measured on
	// the media; it replaces the run length Stop recorded.
	Duration *time.Duration
}

// GoLive is called by the live module when a publisher is accepted. The
// first call makes the show live with start = media.Start (now when
// unset); a call while the show is
// already live is a resume inside the reconnect window and keeps start
// (media URLs given replace the old ones).
func (s *Service) GoLive(ctx context.Context, showID int64, media Media) (*Show, error) {
	var evs []Event
	err := inTx(ctx, s.db, func(ctx context.Context, tx bun.Tx) error {
		event, before, err := goLive(ctx, tx, showID, media, s.clock.Stamp())
		if err != nil {
			return err
		}
		evs, err = s.record(ctx, tx, showID, nil, &before, event)
		return err
	})
	if err != nil {
		return nil, wrapLifecycle("go live", showID, err)
	}
	s.deliver(ctx, evs)
	return lastShow(evs), nil
}

// GoingLive is one show of GoLiveMany.
type GoingLive struct {
	ShowID int64
	Media  Media
}

// GoLiveMany is GoLive for several shows in one transaction: hundreds of
// publishers arriving together (a node restart) cost a few commits, and a
// few turns at the rows every change of a show updates (the counts, the
// lists' generation), not one each. A show that may not go live (deleted,
// complete, off) gets its error in errs and the others go live; any other
// failure rolls the whole batch back and is err.
func (s *Service) GoLiveMany(ctx context.Context, batch []GoingLive) (errs []error, err error) {
	var evs []Event
	err = inTx(ctx, s.db, func(ctx context.Context, tx bun.Tx) error {
		evs, errs = nil, make([]error, len(batch))
		for i, g := range batch {
			event, before, err := goLive(ctx, tx, g.ShowID, g.Media, s.clock.Stamp())
			if errors.Is(err, ErrRefused) || errors.Is(err, ErrNotFound) {
				// Refused before its first write: the others go on.
				errs[i] = wrapLifecycle("go live", g.ShowID, err)
				continue
			}
			var e []Event
			if err == nil {
				e, err = s.record(ctx, tx, g.ShowID, nil, &before, event)
			}
			if err != nil {
				return fmt.Errorf("show %d: %w", g.ShowID, err)
			}
			evs = append(evs, e...)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("shows: go live (%d shows): %w", len(batch), err)
	}
	s.deliver(ctx, evs)
	return errs, nil
}

// goLive makes GoLive's change to the show's row in tx at now and returns
// its event and the counts before it, for record. A refusal comes before
// any write.
func goLive(ctx context.Context, tx bun.Tx, showID int64, media Media, now time.Time) (event string, before countState, err error) {
	event = EventLive
	sh, err := lockShow(ctx, tx, showID)
	if err != nil {
		return "", before, err
	}
	if sh.Complete || sh.Off {
		return "", before, ErrRefused
	}
	if before, err = countSnapshot(ctx, tx, sh); err != nil {
		return "", before, err
	}
	if sh.AudioOnly {
		// Only the audio is the show's: a publication that began
		// packaging video before the show became audio-only does
		// not give it a video_url.
		media.VideoURL = nil
	}
	cols := []string{"disconnected_at", "updated_at"}
	sh.DisconnectedAt, sh.UpdatedAt = nil, now
	if sh.Live {
		event = EventResumed
		if media.VideoURL != nil {
			sh.VideoURL = media.VideoURL
			cols = append(cols, "video_url")
		}
		if media.AudioURL != nil {
			sh.AudioURL = media.AudioURL
			cols = append(cols, "audio_url")
		}
	} else {
		sh.Live, sh.Start, sh.WentLiveAt = true, now, &now
		if media.Start != nil && !media.Start.IsZero() && media.Start.Before(now) {
			sh.Start = *media.Start
			sh.WentLiveAt = media.Start
		}
		sh.VideoURL, sh.AudioURL = media.VideoURL, media.AudioURL
		sh.ThumbnailLabel = LabelLive
		cols = append(cols, "live", "start", "went_live_at", "video_url", "audio_url", "thumbnail_label")
	}
	if _, err := tx.NewUpdate().Model(sh).Column(cols...).WherePK().Exec(ctx); err != nil {
		return "", before, err
	}
	if event == EventLive {
		if err := syncTagStart(ctx, tx, sh); err != nil {
			return "", before, err
		}
	}
	return event, before, nil
}

// PublisherLeft records that the publisher dropped. The show stays live:
// the same key resumes it; the janitor completes it once the reconnect
// window has passed (never for radio shows, which stay open).
func (s *Service) PublisherLeft(ctx context.Context, showID int64) error {
	now := s.clock.Stamp()
	_, err := s.db.NewUpdate().Model((*Show)(nil)).
		Set("disconnected_at = ?", now).Set("updated_at = ?", now).
		Where("id = ?", showID).Where("live = ?", true).Where("disconnected_at IS NULL").
		Exec(ctx)
	if err != nil {
		return fmt.Errorf("shows: publisher left %d: %w", showID, err)
	}
	return nil
}

// Stop completes a live show: complete=true, duration = run length in
// seconds, "Finished". by is the caller (owner or staff, else 403; a
// show by cannot see is 404); nil is the system (reconnect window or radio
// run expired). A show that is not live is ErrNotLive (409).
func (s *Service) Stop(ctx context.Context, showID int64, by *app.Principal) (*Show, error) {
	now := s.clock.Stamp()
	var evs []Event
	err := inTx(ctx, s.db, func(ctx context.Context, tx bun.Tx) error {
		sh, err := s.access.lockFor(ctx, tx, showID, by, "stop")
		if err != nil {
			return err
		}
		if !sh.Live {
			return ErrNotLive
		}
		before, err := countSnapshot(ctx, tx, sh)
		if err != nil {
			return err
		}
		if err := saveStop(ctx, tx, sh, now); err != nil {
			return err
		}
		evs, err = s.record(ctx, tx, showID, by, &before, EventStopped)
		return err
	})
	if err != nil {
		return nil, wrapLifecycle("stop", showID, err)
	}
	s.deliver(ctx, evs)
	return lastShow(evs), nil
}

// applyStop moves a live show to complete in memory.
func applyStop(sh *Show, now time.Time) {
	end := now
	// A publisher that dropped stopped broadcasting then.
	if sh.DisconnectedAt != nil && sh.DisconnectedAt.Before(now) {
		end = *sh.DisconnectedAt
	}
	began := sh.Start
	if sh.WentLiveAt != nil {
		began = *sh.WentLiveAt
	}
	d := max(int(end.Sub(began)/time.Second), 0)
	sh.Live, sh.Complete = false, true
	sh.Duration, sh.EndedAt, sh.DisconnectedAt = &d, &end, nil
	sh.ThumbnailLabel = LabelFinished
	sh.UpdatedAt = now
}

func saveStop(ctx context.Context, tx bun.IDB, sh *Show, now time.Time) error {
	applyStop(sh, now)
	_, err := tx.NewUpdate().Model(sh).
		Column("live", "complete", "duration", "ended_at", "disconnected_at", "thumbnail_label", "updated_at").
		WherePK().Exec(ctx)
	return err
}

// Archive records the finalised recording of a complete show: archive=true,
// media URLs point at the VOD playlists, the duration is the media's
// (media.Duration, rounded to the second) when given, the label is the
// duration as HH:MM:SS. Radio shows never archive (ErrRadioArchive).
func (s *Service) Archive(ctx context.Context, showID int64, media Media) (*Show, error) {
	now := s.clock.Stamp()
	var evs []Event
	err := inTx(ctx, s.db, func(ctx context.Context, tx bun.Tx) error {
		sh, err := lockShow(ctx, tx, showID)
		if err != nil {
			return err
		}
		switch {
		case sh.Radio:
			return ErrRadioArchive
		case !sh.Complete:
			return ErrNotComplete
		}
		before, err := countSnapshot(ctx, tx, sh)
		if err != nil {
			return err
		}
		if sh.AudioOnly {
			media.VideoURL = nil // as in GoLive
		}
		sh.Archive, sh.VideoURL, sh.AudioURL = true, media.VideoURL, media.AudioURL
		if media.Duration != nil {
			d := int(media.Duration.Round(time.Second) / time.Second)
			sh.Duration = &d
		}
		sh.ThumbnailLabel = clock(derefInt(sh.Duration))
		sh.UpdatedAt = now
		if _, err := tx.NewUpdate().Model(sh).Column("archive", "video_url", "audio_url", "duration", "thumbnail_label", "updated_at").WherePK().Exec(ctx); err != nil {
			return err
		}
		evs, err = s.record(ctx, tx, showID, nil, &before, EventArchived)
		return err
	})
	if err != nil {
		return nil, wrapLifecycle("archive", showID, err)
	}
	s.deliver(ctx, evs)
	return lastShow(evs), nil
}

// SetOff takes a show off (staff only; a live show is stopped first) or
// restores it. An off show is hidden from everyone but its owner and staff
// and its key is refused.
func (s *Service) SetOff(ctx context.Context, id int64, off bool, by *app.Principal) (*Show, error) {
	if by != nil {
		if err := s.access.can(by, nil, "off"); err != nil {
			return nil, err
		}
	}
	now := s.clock.Stamp()
	var evs []Event
	err := inTx(ctx, s.db, func(ctx context.Context, tx bun.Tx) error {
		sh, err := lockShow(ctx, tx, id)
		if err != nil {
			return err
		}
		before, err := countSnapshot(ctx, tx, sh)
		if err != nil {
			return err
		}
		types := []string{EventOff}
		if off && sh.Live {
			types = []string{EventStopped, EventOff}
			if err := saveStop(ctx, tx, sh, now); err != nil {
				return err
			}
		}
		sh.Off, sh.UpdatedAt = off, now
		if _, err := tx.NewUpdate().Model(sh).Column("off", "updated_at").WherePK().Exec(ctx); err != nil {
			return err
		}
		evs, err = s.record(ctx, tx, id, by, &before, types...)
		return err
	})
	if err != nil {
		return nil, wrapLifecycle("off", id, err)
	}
	s.deliver(ctx, evs)
	return lastShow(evs), nil
}

// SetFeatured features a show or stops featuring it (staff only).
func (s *Service) SetFeatured(ctx context.Context, id int64, featured bool, by *app.Principal) (*Show, error) {
	if by != nil {
		if err := s.access.can(by, nil, "feature"); err != nil {
			return nil, err
		}
	}
	var evs []Event
	err := inTx(ctx, s.db, func(ctx context.Context, tx bun.Tx) error {
		sh, err := lockShow(ctx, tx, id)
		if err != nil {
			return err
		}
		before, err := countSnapshot(ctx, tx, sh)
		if err != nil {
			return err
		}
		_, err = tx.NewUpdate().Model((*Show)(nil)).
			Set("featured = ?", featured).Set("updated_at = ?", s.clock.Stamp()).Where("id = ?", id).Exec(ctx)
		if err != nil {
			return err
		}
		evs, err = s.record(ctx, tx, id, by, &before, EventUpdated)
		return err
	})
	if err != nil {
		return nil, wrap("feature", id, err)
	}
	s.deliver(ctx, evs)
	return lastShow(evs), nil
}

// SetThumbnails sets the show's image and animated preview (nil leaves one
// unchanged). The live module calls it once it has grabbed frames.
func (s *Service) SetThumbnails(ctx context.Context, id int64, image, gif *string) error {
	var evs []Event
	err := inTx(ctx, s.db, func(ctx context.Context, tx bun.Tx) error {
		q := tx.NewUpdate().Model((*Show)(nil)).Set("updated_at = ?", s.clock.Stamp()).Where("id = ?", id)
		if image != nil {
			q = q.Set("image_url = ?", *image)
		}
		if gif != nil {
			q = q.Set("gif_url = ?", *gif)
		}
		res, err := q.Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrNotFound
		}
		evs, err = s.record(ctx, tx, id, nil, nil, EventUpdated)
		return err
	})
	if err != nil {
		return wrap("thumbnails", id, err)
	}
	s.deliver(ctx, evs)
	return nil
}

// Delete removes a show (owner or staff; by nil is the system). A live show
// is stopped first. It returns the show as it was when deleted; its rows
// (tags, favorites) go with it, and its key is refused from then on because
// the row is gone. Subscribers get "stopped" (if it was live) and
// "deleted", so the live module can drop the media and chat its messages.
func (s *Service) Delete(ctx context.Context, id int64, by *app.Principal) (*Show, error) {
	now := s.clock.Stamp()
	var evs []Event
	err := inTx(ctx, s.db, func(ctx context.Context, tx bun.Tx) error {
		var err error
		evs, err = deleteInTx(ctx, s, tx, id, by, now)
		return err
	})
	if err != nil {
		return nil, wrapLifecycle("delete", id, err)
	}
	// The image goes with the show (the live module drops the rest of
	// its media on the "deleted" event).
	if sh := lastShow(evs); sh != nil && sh.ImageKey != nil {
		s.images.dropImages(ctx, []string{*sh.ImageKey}, "")
	}
	s.deliver(ctx, evs)
	return lastShow(evs), nil
}

// deleteInTx is Delete's change inside tx: it returns the events to
// deliver once tx commits (the caller also drops the show's image then).
func deleteInTx(ctx context.Context, s *Service, tx bun.IDB, id int64, by *app.Principal, now time.Time) ([]Event, error) {
	if _, err := s.access.lockFor(ctx, tx, id, by, "delete"); err != nil {
		return nil, err
	}
	sh, err := getShow(ctx, tx, id)
	if err != nil {
		return nil, err
	}
	before, err := countSnapshot(ctx, tx, sh)
	if err != nil {
		return nil, err
	}
	if err := moveCounts(ctx, tx, before, countState{}); err != nil {
		return nil, err
	}
	types := []string{EventDeleted}
	if sh.Live {
		types = []string{EventStopped, EventDeleted}
		applyStop(sh, now)
	}
	for _, model := range []any{(*ShowTag)(nil), (*Favorite)(nil), (*ShowGram)(nil)} {
		if _, err := tx.NewDelete().Model(model).Where("show_id = ?", id).Exec(ctx); err != nil {
			return nil, err
		}
	}
	if _, err := tx.NewDelete().Model((*Show)(nil)).Where("id = ?", id).Exec(ctx); err != nil {
		return nil, err
	}
	return s.recordShow(ctx, tx, sh, by, types...)
}

// inTx runs a change in a transaction, again when MySQL reports a
// deadlock (two changes meeting on show_counts rows they both create).
func inTx(ctx context.Context, db *bun.DB, fn func(ctx context.Context, tx bun.Tx) error) error {
	return app.RunInTxRetry(ctx, db, 3, func(ctx context.Context, tx bun.Tx, _ int) error { return fn(ctx, tx) })
}

// lockFor locks a show for an action by a caller: a show the caller cannot
// see is 404, an action Casbin refuses is 403. by nil is the system.
func (a access) lockFor(ctx context.Context, tx bun.IDB, id int64, by *app.Principal, act string) (*Show, error) {
	sh, err := lockShow(ctx, tx, id)
	if err != nil {
		return nil, err
	}
	if by == nil {
		return sh, nil
	}
	if !canView(sh, by) {
		return nil, ErrNotFound
	}
	if err := a.can(by, sh, act); err != nil {
		return nil, app.Forbidden(fmt.Sprintf("only the owner of the show or staff may %s it", act))
	}
	return sh, nil
}

// lastShow is the show as a committed change (its events) left it.
func lastShow(evs []Event) *Show { return evs[len(evs)-1].Show }

// Sweep completes, as the system, the live shows whose publisher has been
// gone longer than the reconnect window, and radio shows live longer than
// RadioMaxRun. The janitor calls it every few seconds; it is safe on many
// nodes at once (a show already stopped is skipped).
func (s *Service) Sweep(ctx context.Context, now time.Time) (int, error) {
	var ids []int64
	err := s.db.NewSelect().Model((*Show)(nil)).Column("id").Where("live = ?", true).
		WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
			return q.WhereGroup(" OR ", func(q *bun.SelectQuery) *bun.SelectQuery {
				return q.Where("radio = ?", false).Where("disconnected_at <= ?", now.Add(-s.window))
			}).WhereGroup(" OR ", func(q *bun.SelectQuery) *bun.SelectQuery {
				return q.Where("radio = ?", true).Where("went_live_at <= ?", now.Add(-RadioMaxRun))
			})
		}).Scan(ctx, &ids)
	if err != nil {
		return 0, fmt.Errorf("shows: sweep: %w", err)
	}
	n := 0
	for _, id := range ids {
		if _, err := s.Stop(ctx, id, nil); err != nil {
			if errors.Is(err, ErrNotLive) || errors.Is(err, ErrNotFound) {
				continue
			}
			return n, err
		}
		n++
	}
	return n, nil
}

// wrapLifecycle keeps the sentinel and API errors recognisable.
func wrapLifecycle(op string, id int64, err error) error {
	if errors.Is(err, ErrRefused) {
		return ErrRefused
	}
	return wrap(op, id, err)
}

// clock formats seconds as HH:MM:SS.
func clock(sec int) string {
	return fmt.Sprintf("%02d:%02d:%02d", sec/3600, sec/60%60, sec%60)
}

func derefInt(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}
