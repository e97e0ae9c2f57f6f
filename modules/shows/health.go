package shows

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/app"
)

// Stream health: what the ingest measures of a live show's publication,
// for its owner (the studio, GET /v1/shows/:id/health) and staff (the
// console). The live module reports it (HealthReporter); this package only
// defines the figures and who may see them.

// Health is a show's stream health. Bitrates are in kb/s over the last few
// seconds, KeyframeInterval in seconds, Since is when the publication
// began (nil when nobody publishes). Zero values are unknown: an encoder
// that announces no size leaves Width and Height 0.
type Health struct {
	Receiving bool `json:"receiving"`
	// Protocol is the publisher's: "rtmp", "rtmps" or "srt"; "" when
	// nobody publishes.
	Protocol string `json:"protocol"`
	// SRT is the SRT connection's state, for an SRT publisher only.
	SRT *SRTHealth `json:"srt,omitempty"`
	// Transcode is the show's transcoding ladder (ONAIR_TRANSCODE), for a
	// show that has one.
	Transcode        *TranscodeHealth `json:"transcode,omitempty"`
	VideoCodec       string           `json:"video_codec"`
	AudioCodec       string           `json:"audio_codec"`
	Width            int              `json:"width"`
	Height           int              `json:"height"`
	FPS              float64          `json:"fps"`
	VideoBitrate     int              `json:"video_bitrate"`
	AudioBitrate     int              `json:"audio_bitrate"`
	KeyframeInterval float64          `json:"keyframe_interval"`
	Viewers          int              `json:"viewers"`
	// PeakViewers is the most viewers at once since the show went live.
	PeakViewers int `json:"peak_viewers"`
	// BehindSeconds is how far the media has fallen behind the wall
	// clock since the publication was furthest ahead: an encoder or an
	// upload that cannot keep up sends slower than real time (stats.go).
	BehindSeconds float64 `json:"behind_seconds"`
	// TimestampGaps counts the jumps in the video timestamps over the last
	// minute: frames the encoder dropped before sending (stats.go).
	TimestampGaps int            `json:"timestamp_gaps"`
	Since         *app.Timestamp `json:"since"`
	Warnings      []string       `json:"warnings"`
	// Destinations are the platforms the show is restreamed to from the
	// node that ingests it (the restream module); empty otherwise.
	Destinations []DestinationHealth `json:"destinations"`
}

// DestinationHealth is the state of one restream destination of a live
// show: State is connecting, connected, retrying or failed; Bitrate the
// kb/s sent over the last few seconds; Error the last failure, if any.
type DestinationHealth struct {
	ID      int64   `json:"id"`
	Name    string  `json:"name"`
	State   string  `json:"state"`
	Bitrate int     `json:"bitrate"`
	Error   *string `json:"error"`
}

// HealthAdder is a module that adds to a show's health what it does with
// the publication (the restream module: its destinations).
type HealthAdder interface {
	AddHealth(showID int64, h *Health)
}

// SRTHealth is the state of an SRT publisher's connection: what SRT had
// to recover, and what it could not.
type SRTHealth struct {
	// RTTMillis is the smoothed round-trip time, in milliseconds.
	RTTMillis float64 `json:"rtt_ms"`
	// PacketsReceived counts the data packets received, retransmissions
	// included; PacketsLost those found missing (then asked again);
	// PacketsRetransmitted the retransmissions received; PacketsDropped
	// those that never came in time (lost for good).
	PacketsReceived      uint64 `json:"packets_received"`
	PacketsLost          uint64 `json:"packets_lost"`
	PacketsRetransmitted uint64 `json:"packets_retransmitted"`
	PacketsDropped       uint64 `json:"packets_dropped"`
	// LossPercent is the share of the packets sent that the network lost
	// (found missing, whether recovered or not), in percent.
	LossPercent float64 `json:"loss_percent"`
}

// HealthReporter is a module that measures publications (the live
// module). Health answers ok=false when no publisher is sending the show.
type HealthReporter interface {
	Health(showID int64) (h Health, ok bool)
}

// HealthOf returns the show's health from the module that measures it, or
// a health with receiving=false when nobody publishes (or no module
// measures). The peak is the recorded one when the live figures are
// lower (PeakOf). The caller has checked who may see it (CanSeeHealth).
func (m *Module) HealthOf(sh *Show) Health {
	h := m.measure(sh.ID)
	if !sh.Live && !h.Receiving {
		// A player still polling a stopped show's playlist is no viewer.
		h.Viewers = 0
	}
	h.PeakViewers = PeakOf(sh, h)
	h.Destinations = []DestinationHealth{}
	if m.core != nil {
		for _, mod := range m.core.Modules {
			if a, ok := mod.(HealthAdder); ok {
				a.AddHealth(sh.ID, &h)
			}
		}
	}
	return h
}

// Audience is the number of playback sessions of a show being published
// now (the figure the studio and the show page call viewers), and whether
// a publisher is sending it; the chat's rooms tell their pages (chat's
// audience events).
func (m *Module) Audience(showID int64) (viewers int, live bool) {
	h := m.measure(showID)
	return h.Viewers, h.Receiving
}

func (m *Module) measure(showID int64) Health {
	if m.core != nil {
		for _, mod := range m.core.Modules {
			if r, ok := mod.(HealthReporter); ok {
				if h, ok := r.Health(showID); ok {
					return h
				}
				h := Health{Warnings: []string{}}
				if vc, ok := mod.(viewerCounter); ok {
					h.Viewers = vc.Viewers(showID)
				}
				return h
			}
		}
	}
	return Health{Warnings: []string{}}
}

// healthShow is the show whose health by asks for: a show's health is its
// owner's and the staff's; anyone else gets ErrNotFound, as for a private
// show.
func (m *Module) healthShow(ctx context.Context, id int64, by *app.Principal) (*Show, error) {
	sh, err := m.Service.Visible(ctx, id, by)
	if err != nil {
		return nil, err
	}
	if by == nil || by.UserID == sh.UserID || by.IsStaff() {
		return sh, nil
	}
	return nil, ErrNotFound
}

// health is GET /v1/shows/:id/health (an extension beyond v1).
func (m *Module) health(c *fiber.Ctx) error {
	id, err := showID(c)
	if err != nil {
		return err
	}
	sh, err := m.healthShow(c.UserContext(), id, app.CurrentPrincipal(c))
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(fiber.Map{"health": m.HealthOf(sh).WithSchedule(sh, m.Service.clock.Stamp())})
}

// WithSchedule adds a warning when a live show has run past its scheduled
// end. It is informative only: nothing stops the show then, as a Twitch
// schedule's end stops nobody (docs/show-options.md).
func (h Health) WithSchedule(sh *Show, now time.Time) Health {
	if !sh.Live || sh.EndsAt == nil || !now.After(*sh.EndsAt) {
		return h
	}
	over := int(now.Sub(*sh.EndsAt) / time.Minute)
	h.Warnings = append(slices.Clip(h.Warnings), fmt.Sprintf("the scheduled end (%s UTC) passed %d min ago; the show goes on until you stop it",
		sh.EndsAt.UTC().Format("2006-01-02 15:04"), over))
	return h
}

// SinceOf is a health's Since for a start time.
func SinceOf(t time.Time) *app.Timestamp {
	ts := app.Timestamp(t)
	return &ts
}

// TranscodeHealth is the state of a live show's transcoding ladder.
type TranscodeHealth struct {
	// Speed is the transcoder's speed over the last seconds: media time
	// made per second of wall time (1 keeps up with real time); 0 while
	// it is not running.
	Speed float64 `json:"speed"`
	// Rungs are the renditions being made, highest first.
	Rungs []RungHealth `json:"rungs"`
	// Dropped lists the heights of the rungs given up because the
	// transcoder was slower than real time.
	Dropped []int `json:"dropped"`
	// Restarts counts the times ffmpeg stopped and was started again.
	Restarts int `json:"restarts"`
}

// RungHealth is one rung of a ladder: its height, its measured bit rate
// (video and audio, kb/s, the average of its segments), the video bit
// rate asked of the encoder and its frame rate.
type RungHealth struct {
	Height        int     `json:"height"`
	Bitrate       int     `json:"bitrate"`
	TargetBitrate int     `json:"target_bitrate"`
	FPS           float64 `json:"fps"`
}
