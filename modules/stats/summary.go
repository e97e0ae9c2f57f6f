package stats

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/app"
	"github.com/onair/onair/modules/shows"
)

// Stats are a show's points and the summary of its run so far (or of the
// whole run once it ended).
type Stats struct {
	Points []PointView `json:"points"`
	// PeakViewers is the most viewers at once: the show's recorded peak
	// (sampled every 2 s by the live module) or the highest point.
	PeakViewers int `json:"peak_viewers"`
	// AverageViewers is the mean of the points' viewers.
	AverageViewers float64 `json:"average_viewers"`
	// WatchSeconds is viewers × the seconds each point stands for (the
	// interval, or less after a publication's first point), summed: how
	// long the audience watched in all.
	WatchSeconds int `json:"watch_seconds"`
	// ChatMessages and NewFollowers count what happened between the
	// show going live and its end (or now).
	ChatMessages int `json:"chat_messages"`
	NewFollowers int `json:"new_followers"`
}

// PointView is a point as the API shows it.
type PointView struct {
	T                app.Timestamp `json:"t"`
	Seconds          float64       `json:"seconds"`
	Viewers          int           `json:"viewers"`
	VideoBitrate     int           `json:"video_bitrate"`
	AudioBitrate     int           `json:"audio_bitrate"`
	FPS              float64       `json:"fps"`
	KeyframeInterval float64       `json:"keyframe_interval"`
	BehindSeconds    float64       `json:"behind_seconds"`
	TimestampGaps    int           `json:"timestamp_gaps"`
	ChatMessages     int           `json:"chat_messages"`
}

// Of computes a show's statistics. The caller has checked who may see
// them (getStats, or the studio's own check).
func (m *Module) Of(ctx context.Context, sh *shows.Show) (*Stats, error) {
	var points []Point
	if err := m.core.DB.NewSelect().Model(&points).Where("show_id = ?", sh.ID).Order("t").Scan(ctx); err != nil {
		return nil, fmt.Errorf("stats: points of show %d: %w", sh.ID, err)
	}
	st := &Stats{Points: make([]PointView, len(points)), PeakViewers: sh.PeakViewers}
	var viewers int
	var watch float64
	for i, p := range points {
		st.Points[i] = PointView{T: app.Timestamp(p.T), Seconds: p.Seconds, Viewers: p.Viewers, VideoBitrate: p.VideoBitrate, AudioBitrate: p.AudioBitrate,
			FPS: p.FPS, KeyframeInterval: p.KeyframeInterval, BehindSeconds: p.BehindSeconds, TimestampGaps: p.TimestampGaps, ChatMessages: p.ChatMessages}
		st.PeakViewers = max(st.PeakViewers, p.Viewers)
		viewers += p.Viewers
		watch += float64(p.Viewers) * p.Seconds
	}
	if len(points) > 0 {
		st.AverageViewers = math.Round(float64(viewers)/float64(len(points))*10) / 10
	}
	st.WatchSeconds = int(math.Round(watch))
	if sh.WentLiveAt == nil {
		return st, nil
	}
	from, to := *sh.WentLiveAt, time.Now()
	if sh.EndedAt != nil {
		to = *sh.EndedAt
	}
	// The end is inclusive of its second: the counts read whole seconds
	// on MySQL.
	to = to.Add(time.Second)
	var err error
	if c := m.chat(); c != nil {
		if st.ChatMessages, err = c.ChatMessages(ctx, sh.ID, from, to); err != nil {
			return nil, err
		}
	}
	if f := m.follows(); f != nil {
		if st.NewFollowers, err = f.NewFollowers(ctx, sh.UserID, from, to); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// getStats is GET /v1/shows/:id/stats (an extension beyond v1): the
// owner's and staff's. A show the caller cannot see is 404, as any
// private show; a show they see but do not own is 403.
func (m *Module) getStats(c *fiber.Ctx) error {
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil || id < 1 {
		return shows.ErrNotFound
	}
	by := app.CurrentPrincipal(c)
	sh, err := m.shows.Visible(c.UserContext(), id, by)
	if err != nil {
		return err
	}
	if err := m.CanRead(sh, by); err != nil {
		return err
	}
	st, err := m.Of(c.UserContext(), sh)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(fiber.Map{"stats": st})
}

// CanRead: the owner and staff read a show's statistics (Casbin's
// "stats read"); anyone else gets 403.
func (m *Module) CanRead(sh *shows.Show, by *app.Principal) error {
	if by != nil && by.UserID == sh.UserID {
		return m.core.Authz.Can(by, "stats", "read", "owner")
	}
	return m.core.Authz.Can(by, "stats", "read")
}
