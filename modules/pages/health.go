package pages

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/app"
	"github.com/onair/onair/modules/shows"
)

// Stream health in the studio: the figures of shows.Module.HealthOf
// (measured by the live module) on the show's studio page, kept current by
// server-sent events, so a DJ sees at once whether OnAir receives them.

// healthEvery is how often the event stream sends the health; healthFor
// how long one stream lasts before the browser reconnects (EventSource
// does it by itself), below the server's write timeout.
const (
	healthEvery = 2 * time.Second
	healthFor   = 50 * time.Second
)

// healthView is the health as the page shows it.
type healthView struct {
	Receiving, Video, Audio, Size, FPS, Keyframes, Viewers, Peak, Timing, Since string
	Warnings                                                                    []string
	// Destinations are the restream destinations in words (destinationLine).
	Destinations []string
	On           bool
}

func viewHealth(h shows.Health) healthView {
	v := healthView{Receiving: "no", Video: "—", Audio: "—", Size: "—", FPS: "—", Keyframes: "—", Viewers: strconv.Itoa(h.Viewers),
		Peak: strconv.Itoa(h.PeakViewers), Timing: "—", Since: "—", Warnings: h.Warnings, On: h.Receiving}
	for _, d := range h.Destinations {
		v.Destinations = append(v.Destinations, destinationLine(d))
	}
	if h.Receiving {
		v.Receiving = "yes"
		v.Timing = timing(h)
	}
	if h.VideoCodec != "" {
		v.Video = fmt.Sprintf("%s, %d kb/s", h.VideoCodec, h.VideoBitrate)
	}
	if h.AudioCodec != "" {
		v.Audio = fmt.Sprintf("%s, %d kb/s", h.AudioCodec, h.AudioBitrate)
	}
	if h.Width > 0 && h.Height > 0 {
		v.Size = fmt.Sprintf("%d×%d", h.Width, h.Height)
	}
	if h.FPS > 0 {
		v.FPS = strconv.FormatFloat(h.FPS, 'f', -1, 64) + " fps"
	}
	if h.KeyframeInterval > 0 {
		v.Keyframes = "every " + strconv.FormatFloat(h.KeyframeInterval, 'f', -1, 64) + " s"
	}
	if h.Since != nil {
		v.Since = utc(time.Time(*h.Since))
	}
	return v
}

// destinationLine is a restream destination's state in words (onair.js
// says it the same way).
func destinationLine(d shows.DestinationHealth) string {
	line := d.Name + ": " + d.State
	if d.State == "connected" {
		line += fmt.Sprintf(", %d kb/s", d.Bitrate)
	}
	if d.Error != nil {
		line += " (" + *d.Error + ")"
	}
	return line
}

// timing says whether the media arrives in real time: how far behind it
// fell, and the gaps in its timestamps (onair.js says it the same way).
func timing(h shows.Health) string {
	t := "on time"
	if h.BehindSeconds >= 1 {
		t = strconv.FormatFloat(h.BehindSeconds, 'f', -1, 64) + " s behind real time"
	}
	if h.TimestampGaps > 0 {
		t += ", " + plural(h.TimestampGaps, "gap", "gaps") + " in the last minute"
	}
	return t
}

// health is GET /studio/shows/:id/health: the owner's show's health as
// JSON (the API's figures), or with Accept: text/event-stream a stream of
// them every two seconds, with the show's state as it connects and as it
// changes ("event: state", follow.go).
func (m *Module) health(c *fiber.Ctx, v *visitor) error {
	if !v.signedIn() {
		return fiber.ErrUnauthorized
	}
	sh, err := m.ownShow(c, v)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	if c.Get(fiber.HeaderAccept) != "text/event-stream" {
		return c.JSON(fiber.Map{"health": m.healthOf(sh).WithSchedule(sh, m.clock.Stamp())})
	}
	// The stream holds its connection: through a trusted proxy it counts
	// for its client under ONAIR_MAX_CONNS_PER_IP.
	release, err := app.HoldClient(c)
	if err != nil {
		return err
	}
	fl := m.following.add(sh.ID)
	state := stateKey(shows.Event{Show: sh}, m.clock.Stamp())
	streamEvents(c, func() { m.following.remove(fl); release() }, func(w *bufio.Writer) error {
		return stateLine(w, state)
	}, fl.ch, func(w *bufio.Writer, ev shows.Event) error {
		if ev.Type != shows.EventDeleted {
			sh = ev.Show // the health of a show gone live counts its viewers
		}
		return stateLine(w, stateKey(ev, m.clock.Stamp()))
	}, func(w *bufio.Writer) error {
		data, err := json.Marshal(m.healthOf(sh).WithSchedule(sh, m.clock.Stamp()))
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "data: %s\n\n", data)
		return err
	})
	return nil
}
