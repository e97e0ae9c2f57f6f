package pages

import (
	"errors"
	"sort"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // the studio reads times in the visitor's zone, by IANA name, whatever the host has installed

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/app"
	"github.com/onair/onair/modules/shows"
	"github.com/onair/onair/site"
)

// The studio (/studio) is where a broadcaster runs their shows from the
// browser: the list of their shows, a form to create and edit one, stop,
// delete (after a confirmation page), the stream url and key, and an OBS
// guide. Every write goes through shows.Service, the same rules as the API.
// Every show of the studio is the visitor's own: anyone else's is a 404,
// staff included (staff use the console).

// studioShows is how many of their shows the studio lists.
const studioShows = 200

// studioData is GET /studio.
type studioData struct {
	SignedIn             bool
	Deleted              bool // just after a delete (?deleted=1)
	Live, Upcoming, Past []studioRow
	StreamURL            string
}

// studioRow is one show in the studio's lists.
type studioRow struct {
	ID, Name, Path, Studio, Viewers, Peak, Duration, Recording string
	Start                                                      time.Time
	End                                                        showEnd
	State                                                      state
	Private, Off, AudioOnly, ChatOff                           bool
}

// studioForm is the create and edit form. StartsAt and EndsAt are the
// values of the datetime-local fields; StartUTC (EndUTC), when set, says
// that value is in UTC and the script shows it in the visitor's zone.
type studioForm struct {
	Action, Submit, CSRF                            string
	Name, Description, Tags                         string
	StartsAt, StartUTC, EndsAt, EndUTC, TZ          string
	Private, Radio, Headline, AudioOnly, ChatOn     bool
	Downloadable                                    bool
	CanRadio, StartLocked, RadioLocked, AudioLocked bool
	// Image is the show's image_url now (edit), shown beside the file
	// input "image"; MaxImageKB the upload limit.
	Image      string
	MaxImageKB string
	Errors     map[string]string
	Problem    string
}

// studioShowData is GET /studio/shows/:id.
type studioShowData struct {
	ID, Name, Path, CSRF, StreamURL, Key, Viewers, Peak, Duration, Recording string
	State                                                                    state
	Start                                                                    time.Time
	End                                                                      showEnd
	Saved, KeyNew                                                            bool
	Form                                                                     studioForm
	Health                                                                   healthView
	Stats                                                                    *statsView
	// Ingest lists every address the show may be published to.
	Ingest []ingestRow
}

// ingestRow is one ingest address with the OBS settings for it.
type ingestRow struct{ Protocol, Name, Server, OBS string }

// ingestRows lists the server's ingest addresses for key ("" while the
// key is hidden: the SRT URL then names it instead of carrying it).
func (m *Module) ingestRows(key string) []ingestRow {
	in := m.shows.Views.IngestOf(key)
	rows := []ingestRow{{Protocol: "rtmp", Name: "RTMP", Server: in.RTMP,
		OBS: "OBS: Settings → Stream → Service: Custom…; Server: this address; Stream Key: your stream key."}}
	if in.RTMPS != "" {
		rows = append(rows, ingestRow{Protocol: "rtmps", Name: "RTMPS (encrypted)", Server: in.RTMPS,
			OBS: "OBS: Service: Custom…; Server: this address; Stream Key: your stream key. The key crosses the internet encrypted."})
	}
	if in.SRT != "" {
		server := in.SRT
		if key == "" {
			server += "(your stream key)"
		}
		rows = append(rows, ingestRow{Protocol: "srt", Name: "SRT (recovers lost packets)", Server: server,
			OBS: "OBS: Service: Custom…; Server: this whole address, key included; Stream Key: empty. Add &latency=2000000 (microseconds: 2 s) on a bad uplink; add &passphrase=… if your operator set one. Output: keyframe interval 2 s."})
	}
	return rows
}

// studio is GET /studio: the visitor's shows, live first, then upcoming
// (soonest first), then past (newest first). Signed out, it says how to
// get in.
func (m *Module) studio(c *fiber.Ctx, v *visitor) error {
	d := studioData{SignedIn: v.signedIn(), StreamURL: m.rtmp, Deleted: c.Query("deleted") == "1"}
	if v.signedIn() {
		list, _, err := m.shows.Lists.List(c.UserContext(), shows.ListQuery{Viewer: v.p, UserID: v.user.ID, Page: app.Page{Number: 1, Size: studioShows}})
		if err != nil {
			return err
		}
		for i := range list {
			sh := &list[i]
			row, err := m.studioRow(c, sh)
			if err != nil {
				return err
			}
			switch {
			case row.State.live:
				d.Live = append(d.Live, row)
			case sh.Complete:
				d.Past = append(d.Past, row)
			default:
				d.Upcoming = append(d.Upcoming, row)
			}
		}
		sort.SliceStable(d.Upcoming, func(i, j int) bool { return d.Upcoming[i].Start.Before(d.Upcoming[j].Start) })
	}
	site.NoStore(c)
	return m.render(c, fiber.StatusOK, studioPage(m.layout(c, v, "Studio", ""), d))
}

func (m *Module) studioRow(c *fiber.Ctx, sh *shows.Show) (studioRow, error) {
	id := strconv.FormatInt(sh.ID, 10)
	row := studioRow{
		ID: id, Name: sh.Name, Studio: "/studio/shows/" + id, Start: sh.Start, State: stateOf(sh, m.clock.Stamp()),
		Private: sh.Private, Off: sh.Off, Recording: recording(sh), End: endOf(sh, m.clock.Stamp()),
		AudioOnly: sh.AudioOnly, ChatOff: sh.ChatDisabled,
	}
	if sh.User != nil {
		row.Path = "/" + sh.User.Slug + "/" + sh.Slug
	}
	if sh.Duration != nil {
		row.Duration = hms(*sh.Duration)
	}
	switch {
	case row.State.live:
		// The players fetching the live playlists (the live module's
		// count, as in the health panel and the console), and the most
		// at once since it went live.
		h := m.healthOf(sh)
		row.Viewers = plural(h.Viewers, "viewer", "viewers")
		row.Peak = "peak " + strconv.Itoa(h.PeakViewers)
	case ran(sh):
		row.Peak = "peak " + plural(sh.PeakViewers, "viewer", "viewers")
	}
	return row, nil
}

// recording says what became of a show's recording.
func recording(sh *shows.Show) string {
	switch {
	case sh.Radio:
		return "not recorded (radio)"
	case sh.Archive:
		return "recording ready"
	case sh.Complete:
		return "recording being prepared"
	case sh.Live:
		return "recording"
	default:
		return "recorded when it goes live"
	}
}

// plural is "1 viewer", "2 viewers".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// newShowForm is GET /studio/shows/new.
func (m *Module) newShowForm(c *fiber.Ctx, v *visitor) error {
	if !v.signedIn() {
		return site.Redirect(c, "/signin?next=/studio/shows/new")
	}
	f := studioForm{Action: "/studio/shows", Submit: "Create the show", CSRF: v.csrf(), TZ: "UTC", CanRadio: v.user.Radio, ChatOn: true, Downloadable: true, MaxImageKB: m.maxImageKB()}
	return m.render(c, fiber.StatusOK, studioNewPage(m.layout(c, v, "New show", ""), f))
}

// createShow is POST /studio/shows: the show, then its studio page; or the
// form again with the problems beside the fields.
func (m *Module) createShowForm(c *fiber.Ctx, v *visitor) error {
	if err := m.signedInPost(c, v); err != nil {
		return err
	}
	f := m.formFrom(c, v)
	f.Action, f.Submit = "/studio/shows", "Create the show"
	in, ok := f.input(nil)
	if ok {
		if err := m.formImage(c, &f, &in); err != nil {
			return err
		}
	}
	if ok && len(f.Errors) == 0 {
		sh, err := m.shows.Create(c.UserContext(), v.p, in)
		if err == nil {
			return site.Redirect(c, "/studio/shows/"+strconv.FormatInt(sh.ID, 10)+"?saved=1")
		}
		if !f.absorb(err) {
			return err
		}
	}
	f.restart()
	return m.render(c, fiber.StatusUnprocessableEntity, studioNewPage(m.layout(c, v, "New show", ""), f))
}

// studioShow is GET /studio/shows/:id.
func (m *Module) studioShow(c *fiber.Ctx, v *visitor) error {
	if !v.signedIn() {
		return site.Redirect(c, "/signin?next="+queryEscape(c.Path()))
	}
	sh, err := m.ownShow(c, v)
	if err != nil {
		return err
	}
	return m.renderStudioShow(c, v, sh, m.formOf(v, sh), fiber.StatusOK, "", false)
}

// updateShowForm is POST /studio/shows/:id.
func (m *Module) updateShowForm(c *fiber.Ctx, v *visitor) error {
	if err := m.signedInPost(c, v); err != nil {
		return err
	}
	sh, err := m.ownShow(c, v)
	if err != nil {
		return err
	}
	f := m.formFrom(c, v)
	f.StartLocked, f.RadioLocked, f.AudioLocked = ran(sh), ran(sh), ran(sh)
	in, ok := f.input(sh)
	if ok {
		if err := m.formImage(c, &f, &in); err != nil {
			return err
		}
	}
	if ok && len(f.Errors) == 0 {
		_, err := m.shows.Update(c.UserContext(), sh.ID, v.p, in)
		if err == nil {
			return site.Redirect(c, "/studio/shows/"+strconv.FormatInt(sh.ID, 10)+"?saved=1")
		}
		if !f.absorb(err) {
			return err
		}
	}
	f.restart()
	return m.renderStudioShow(c, v, sh, f, fiber.StatusUnprocessableEntity, "", false)
}

// stopShowForm is POST /studio/shows/:id/stop.
func (m *Module) stopShowForm(c *fiber.Ctx, v *visitor) error {
	if err := m.signedInPost(c, v); err != nil {
		return err
	}
	sh, err := m.ownShow(c, v)
	if err != nil {
		return err
	}
	if _, err := m.shows.Stop(c.UserContext(), sh.ID, v.p); err != nil {
		return err
	}
	return site.Redirect(c, "/studio/shows/"+strconv.FormatInt(sh.ID, 10))
}

// deleteShowConfirm is GET /studio/shows/:id/delete: the confirmation
// step, a page with one button, so deleting needs no script.
func (m *Module) deleteShowConfirm(c *fiber.Ctx, v *visitor) error {
	if !v.signedIn() {
		return site.Redirect(c, "/signin?next="+queryEscape(c.Path()))
	}
	sh, err := m.ownShow(c, v)
	if err != nil {
		return err
	}
	row, err := m.studioRow(c, sh)
	if err != nil {
		return err
	}
	return m.render(c, fiber.StatusOK, studioDeletePage(m.layout(c, v, "Delete "+sh.Name, ""), row, v.csrf()))
}

// deleteShowForm is POST /studio/shows/:id/delete.
func (m *Module) deleteShowForm(c *fiber.Ctx, v *visitor) error {
	if err := m.signedInPost(c, v); err != nil {
		return err
	}
	sh, err := m.ownShow(c, v)
	if err != nil {
		return err
	}
	if _, err := m.shows.Delete(c.UserContext(), sh.ID, v.p); err != nil {
		return err
	}
	return site.Redirect(c, "/studio?deleted=1")
}

// studioKey is POST /studio/shows/:id/key: the page with the key shown.
func (m *Module) studioKey(c *fiber.Ctx, v *visitor) error {
	sh, err := m.keyShow(c, v, false)
	if err != nil {
		return err
	}
	return m.renderStudioShow(c, v, sh, m.formOf(v, sh), fiber.StatusOK, sh.StreamKey, false)
}

// studioRegenerate is POST /studio/shows/:id/key/regenerate: a new key,
// shown once.
func (m *Module) studioRegenerate(c *fiber.Ctx, v *visitor) error {
	sh, err := m.keyShow(c, v, true)
	if err != nil {
		return err
	}
	return m.renderStudioShow(c, v, sh, m.formOf(v, sh), fiber.StatusOK, sh.StreamKey, true)
}

func (m *Module) renderStudioShow(c *fiber.Ctx, v *visitor, sh *shows.Show, f studioForm, status int, key string, keyNew bool) error {
	row, err := m.studioRow(c, sh)
	if err != nil {
		return err
	}
	id := strconv.FormatInt(sh.ID, 10)
	f.Action, f.Submit = "/studio/shows/"+id, "Save changes"
	f.Image = m.shows.View(sh, false).ImageURL
	d := studioShowData{
		ID: id, Name: sh.Name, Path: row.Path, CSRF: v.csrf(), StreamURL: m.rtmp, Key: key, KeyNew: keyNew,
		Viewers: row.Viewers, Peak: row.Peak, Duration: row.Duration, Recording: row.Recording, State: row.State, Start: sh.Start, End: row.End,
		Saved: c.Query("saved") == "1" && status == fiber.StatusOK, Form: f, Health: viewHealth(m.healthOf(sh).WithSchedule(sh, m.clock.Stamp())),
		Ingest: m.ingestRows(key),
	}
	if d.Stats, err = m.statsOf(c.UserContext(), sh); err != nil {
		return err
	}
	site.NoStore(c)
	return m.render(c, status, studioShowPage(m.layout(c, v, sh.Name+" · Studio", ""), d))
}

// ---- The form ----------------------------------------------------------

// datetimeLocal is the value format of <input type="datetime-local">.
const datetimeLocal = "2006-01-02T15:04"

// ran: the show has gone live, so its start, radio and audio_only are
// settled.
func ran(sh *shows.Show) bool { return sh.Live || sh.Complete || sh.WentLiveAt != nil }

// formOf fills the form with a show as it is; the start is in UTC and the
// script shows it in the visitor's zone.
func (m *Module) formOf(v *visitor, sh *shows.Show) studioForm {
	f := studioForm{
		CSRF: v.csrf(), Name: sh.Name, Description: sh.Description, TZ: "UTC",
		StartsAt: sh.Start.UTC().Format(datetimeLocal), StartUTC: iso(sh.Start),
		Private: sh.Private, Radio: sh.Radio, Headline: sh.Headline, AudioOnly: sh.AudioOnly, ChatOn: !sh.ChatDisabled,
		Downloadable: !sh.DownloadsOff,
		CanRadio:     v.user.Radio || sh.Radio, StartLocked: ran(sh), RadioLocked: ran(sh), AudioLocked: ran(sh),
		MaxImageKB: m.maxImageKB(),
	}
	if sh.EndsAt != nil {
		f.EndsAt, f.EndUTC = sh.EndsAt.UTC().Format(datetimeLocal), iso(*sh.EndsAt)
	}
	names := make([]string, 0, len(sh.Tags))
	for _, t := range sh.Tags {
		names = append(names, t.Name)
	}
	f.Tags = strings.Join(names, ", ")
	return f
}

// formFrom reads a posted form. Check boxes are sent only when ticked.
func (m *Module) formFrom(c *fiber.Ctx, v *visitor) studioForm {
	return studioForm{
		CSRF: v.csrf(), Name: c.FormValue("name"), Description: c.FormValue("description"), Tags: c.FormValue("tags"),
		StartsAt: strings.TrimSpace(c.FormValue("starts_at")), EndsAt: strings.TrimSpace(c.FormValue("ends_at")), TZ: c.FormValue("tz"),
		Private: checked(c, "private"), Radio: checked(c, "radio"), Headline: checked(c, "headline"),
		AudioOnly: checked(c, "audio_only"), ChatOn: checked(c, "chat_enabled"),
		Downloadable: checked(c, "downloadable"),
		CanRadio:     v.user.Radio, MaxImageKB: m.maxImageKB(), Errors: map[string]string{},
	}
}

// formImage reads the form's image file (multipart field "image", empty
// for no change) into in. An image over the limit goes on the form
// (f.Errors); any other error (a malformed body) is returned.
func (m *Module) formImage(c *fiber.Ctx, f *studioForm, in *shows.Input) error {
	data, err := m.users.ReadUpload(c, shows.ShowImage)
	if err != nil && !f.absorb(err) {
		return err
	}
	in.Image = data
	return nil
}

func checked(c *fiber.Ctx, name string) bool {
	switch c.FormValue(name) {
	case "", "0", "false", "off":
		return false
	}
	return true
}

// input turns the form into the service's Input. sh is the show being
// edited (nil when creating): an unchanged or locked start is not sent, so
// saving a show whose start has passed does not trip "must be in the
// future". ok is false when the form itself is unreadable (f.Errors says
// why).
func (f *studioForm) input(sh *shows.Show) (shows.Input, bool) {
	if f.Errors == nil {
		f.Errors = map[string]string{}
	}
	tags := splitTags(f.Tags)
	in := shows.Input{Name: &f.Name, Description: &f.Description, Private: &f.Private, Headline: &f.Headline, Tags: &tags, ChatEnabled: &f.ChatOn,
		Downloadable: &f.Downloadable, DescriptionOptional: true}
	if !f.AudioLocked {
		in.AudioOnly = &f.AudioOnly
	}
	if sh == nil || !f.RadioLocked {
		in.Radio = &f.Radio
		if sh != nil && !f.CanRadio && !sh.Radio {
			in.Radio = nil // the box is not on the page
		}
	}
	if f.StartsAt != "" && !f.StartLocked {
		t, err := parseLocal(f.StartsAt, f.TZ)
		if err != nil {
			f.Errors["starts_at"] = "must be a date and time"
			return in, false
		}
		if sh == nil || !t.Equal(sh.Start.UTC().Truncate(time.Minute)) {
			s := t.UTC().Format(app.TimeLayout)
			in.Start = &s
		}
	}
	// An unchanged end is not sent either: a show that went live after
	// its planned end can still be saved. An emptied field removes it.
	switch {
	case f.EndsAt != "":
		t, err := parseLocal(f.EndsAt, f.TZ)
		if err != nil {
			f.Errors["ends_at"] = "must be a date and time"
			return in, false
		}
		if sh == nil || sh.EndsAt == nil || !t.Equal(sh.EndsAt.UTC().Truncate(time.Minute)) {
			s := t.UTC().Format(app.TimeLayout)
			in.EndsAt = &s
		}
	case sh != nil && sh.EndsAt != nil:
		none := ""
		in.EndsAt = &none
	}
	return in, true
}

// parseLocal reads a datetime-local value in the zone the script sent
// (an IANA name; UTC without the script, which the form then says).
func parseLocal(value, tz string) (time.Time, error) {
	loc := time.UTC
	if tz != "" && tz != "UTC" {
		l, err := time.LoadLocation(tz)
		if err != nil {
			return time.Time{}, err
		}
		loc = l
	}
	for _, layout := range []string{datetimeLocal, datetimeLocal + ":05"} {
		if t, err := time.ParseInLocation(layout, value, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, errors.New("not a datetime-local value")
}

// splitTags reads "deep house, live" as two tags.
func splitTags(s string) []string {
	out := []string{}
	for _, t := range strings.Split(s, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// studioFields maps the service's field names to the form's.
var studioFields = map[string]string{"start": "starts_at"}

// absorb puts a service's validation or permission error on the form;
// false for any other error (the caller returns it).
func (f *studioForm) absorb(err error) bool {
	var apiErr *app.Error
	if !errors.As(err, &apiErr) {
		return false
	}
	switch {
	case len(apiErr.Fields) > 0:
		for k, p := range apiErr.Fields {
			if alias, ok := studioFields[k]; ok {
				k = alias
			}
			f.Errors[k] = p
		}
	case apiErr.Status == fiber.StatusForbidden || apiErr.Status == fiber.StatusConflict:
		f.Problem = apiErr.Message
	default:
		return false
	}
	return true
}

// restart re-renders a refused form: a start or end that parsed is shown
// in UTC for the script to bring back to the visitor's zone.
func (f *studioForm) restart() {
	tz := f.TZ
	for _, t := range []struct{ value, utc *string }{{&f.StartsAt, &f.StartUTC}, {&f.EndsAt, &f.EndUTC}} {
		if *t.value == "" {
			continue
		}
		if at, err := parseLocal(*t.value, tz); err == nil {
			*t.value, *t.utc, f.TZ = at.UTC().Format(datetimeLocal), iso(at), "UTC"
		}
	}
}

// maxImageKB is the image upload limit as the form's hint says it.
func (m *Module) maxImageKB() string { return strconv.Itoa(m.users.MaxImageBytes() >> 10) }
