package pages

import (
	"context"
	"fmt"
	"html/template"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/internal/svgchart"
	"github.com/onair/onair/modules/shows"
	"github.com/onair/onair/site"
)

// The studio's statistics of a show (like Twitch's stream summary): its
// bitrate, frame rate and viewers over time, charted from the stats
// module's points, with the summary of the run. While the show is live
// the script refreshes the panel from /studio/shows/:id/stats every
// sampling interval.

// statsView is the statistics panel of a show that has run.
type statsView struct {
	ID   string
	Live bool
	// Every is the refresh interval of a live show's panel, in ms.
	Every                                       string
	Charts                                      []template.HTML
	Peak, Average, Watch, ChatMessages, Follows string
}

// statsOf builds a show's panel; nil before the show has run (or when the
// binary has no stats module).
func (m *Module) statsOf(ctx context.Context, sh *shows.Show) (*statsView, error) {
	if m.stats == nil || !ran(sh) {
		return nil, nil
	}
	st, err := m.stats.Of(ctx, sh)
	if err != nil {
		return nil, err
	}
	var video, audio, fps, viewers []svgchart.Point
	for _, p := range st.Points {
		t := time.Time(p.T)
		video = append(video, svgchart.Point{T: t, V: float64(p.VideoBitrate)})
		audio = append(audio, svgchart.Point{T: t, V: float64(p.AudioBitrate)})
		fps = append(fps, svgchart.Point{T: t, V: p.FPS})
		viewers = append(viewers, svgchart.Point{T: t, V: float64(p.Viewers)})
	}
	return &statsView{
		ID: strconv.FormatInt(sh.ID, 10), Live: sh.Live, Every: strconv.FormatInt(m.stats.Every().Milliseconds(), 10),
		Charts: []template.HTML{
			svgchart.Render(svgchart.Chart{ID: "bitrate", Title: "Bitrate", Unit: "kb/s",
				Series: []svgchart.Series{{Name: "Video", Points: video}, {Name: "Audio", Points: audio}}}),
			svgchart.Render(svgchart.Chart{ID: "fps", Title: "Frame rate", Unit: "fps",
				Series: []svgchart.Series{{Name: "Frames a second", Points: fps}}}),
			svgchart.Render(svgchart.Chart{ID: "viewers", Title: "Viewers",
				Series: []svgchart.Series{{Name: "Viewers", Points: viewers}}}),
		},
		Peak: strconv.Itoa(st.PeakViewers), Average: strconv.FormatFloat(st.AverageViewers, 'f', 1, 64),
		Watch: watchTime(st.WatchSeconds), ChatMessages: strconv.Itoa(st.ChatMessages), Follows: strconv.Itoa(st.NewFollowers),
	}, nil
}

// watchTime writes seconds of watching as "2 h 05 min", "4 min 10 s".
func watchTime(s int) string {
	switch {
	case s >= 3600:
		return fmt.Sprintf("%d h %02d min", s/3600, s%3600/60)
	case s >= 60:
		return fmt.Sprintf("%d min %02d s", s/60, s%60)
	default:
		return fmt.Sprintf("%d s", s)
	}
}

// showStats is GET /studio/shows/:id/stats: the statistics panel alone,
// for the script that keeps a live show's panel current.
func (m *Module) showStats(c *fiber.Ctx, v *visitor) error {
	if !v.signedIn() {
		return fiber.ErrUnauthorized
	}
	sh, err := m.ownShow(c, v)
	if err != nil {
		return err
	}
	sv, err := m.statsOf(c.UserContext(), sh)
	if err != nil {
		return err
	}
	site.NoStore(c)
	return m.render(c, fiber.StatusOK, statsPanel(sv))
}
