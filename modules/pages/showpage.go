package pages

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/app"
	"github.com/onair/onair/modules/shows"
	"github.com/onair/onair/modules/users"
)

// playerData is what the player component needs.
type playerData struct {
	ShowID, Kind, Src, HLS, Image, Name, Notice string
	// LiveAudio: listen mode on a show that is (or will be) live, whose
	// player has no seek bar.
	LiveAudio bool
	// Session is the page's playback session token (shows.ViewerToken),
	// on a show that is or will be live: Src carries it as ?vs=, and the
	// script adds it to the live URL a show event brings.
	Session string
	// Live: a show that is (or will be) live, whose player gets the DVR
	// seek bar and the Live button.
	Live bool
}

// chatData is what the chat component needs.
type chatData struct {
	ShowID, WS, Mode, ReplayURL, Present string
	Messages                             []chatLine
	CanPost                              bool
	PostURL, CSRF, SignInPath            string
	// OwnerID marks the host's messages; Moderate (the owner or staff,
	// not on the embed) shows delete and ban on every message.
	OwnerID  string
	Moderate bool
	// ChatOff: the show's chat takes no messages (chat_enabled=false);
	// "the chat is off" replaces the input, the history stays.
	ChatOff bool
}

// showData is the show page.
type showData struct {
	Name, Description, Path, OwnerName, OwnerPath, OwnerImage, Duration string
	Start                                                               time.Time
	Tags                                                                []string
	State                                                               state
	Private, Off, IsOwner, Listen, HasVideo, HasAudio, AudioOnly        bool
	// End is when it ends or ended (endOf).
	End showEnd
	// Viewers counts the players of a live show ("" otherwise), the
	// playback sessions the studio and the console count too; Audience
	// is what they do: "listening" on an audio-only show, "watching" on
	// any other. The chat counts the people in it apart.
	Viewers, Audience string
	Player            playerData
	Chat              chatData
}

// recentChat is how many messages a live show's page starts with.
const recentChat = 50

// userBySlug finds the user whose page is /{slug}; nil when there is none
// (or the slug is one of the server's own paths).
func (m *Module) userBySlug(c *fiber.Ctx, slug string) (*users.User, error) {
	if slug == "" || m.users.ReservedSlug(slug) || len(slug) > 120 {
		return nil, nil
	}
	list, _, err := m.users.List(c.UserContext(), users.ListQuery{Slug: slug, Page: app.Page{Number: 1, Size: 1}})
	if err != nil || len(list) == 0 {
		return nil, err
	}
	return &list[0], nil
}

// showPage is GET /{user_slug}/{show_slug}, a show's url. A private or off
// show is a 404 for anyone but its owner and staff, like a missing one.
func (m *Module) showPage(c *fiber.Ctx, v *visitor) error {
	owner, err := m.userBySlug(c, c.Params("user"))
	if err != nil {
		return err
	}
	if owner == nil {
		return m.next(c, v)
	}
	// Find the id as the system, then apply the visitor's visibility.
	list, _, err := m.shows.Lists.List(c.UserContext(), shows.ListQuery{UserID: owner.ID, Slug: c.Params("show"), Page: app.Page{Number: 1, Size: 1}})
	if err != nil {
		return err
	}
	if len(list) == 0 {
		return shows.ErrNotFound
	}
	sh, err := m.shows.Visible(c.UserContext(), list[0].ID, v.p)
	if err != nil {
		return err
	}
	view := m.shows.View(sh, false)
	st := stateOf(sh, m.clock.Stamp())
	listen := listenMode(c, sh, view)
	d := showData{
		Name: sh.Name, Description: sh.Description, Path: "/" + owner.Slug + "/" + sh.Slug,
		OwnerName: owner.Name, OwnerPath: "/" + owner.Slug,
		OwnerImage: users.NewView(m.public, owner, users.ForShowRead).ImageURL,
		Start:      sh.Start, State: st, Private: sh.Private, Off: sh.Off,
		IsOwner: v.signedIn() && v.user.ID == sh.UserID, Listen: listen,
		HasVideo: view.VideoURL != nil || (!st.live && !st.archive && !sh.AudioOnly), HasAudio: view.AudioURL != nil,
		AudioOnly: sh.AudioOnly, End: endOf(sh, m.clock.Stamp()),
	}
	for _, t := range sh.Tags {
		d.Tags = append(d.Tags, t.Name)
	}
	if sh.Duration != nil {
		d.Duration = hms(*sh.Duration)
	}
	d.Player = m.playerFor(sh, view, listen)
	d.Audience = "watching"
	if sh.AudioOnly {
		d.Audience = "listening"
	}
	if st.live {
		d.Viewers = strconv.Itoa(m.healthOf(sh).Viewers)
	}
	if d.Chat, err = m.chatFor(c, v, sh, st, true); err != nil {
		return err
	}
	m.ensureViewerCookie(c)
	l := m.layout(c, v, sh.Name, excerpt(sh.Description, 160))
	l.Canonical, l.Image = view.URL, view.ImageURL
	return m.render(c, fiber.StatusOK, showPageView(l, d))
}

// listenMode: the player plays the audio-only playlist, when asked with
// ?listen=1, for an audio-only show, and when there is no video.
func listenMode(c *fiber.Ctx, sh *shows.Show, view *shows.View) bool {
	return c.Query("listen") == "1" || sh.AudioOnly || (view.VideoURL == nil && view.AudioURL != nil)
}

// playerFor picks what the player plays: the video playlist, or the
// audio-only one in listen mode. A show that has not gone live, or has
// ended without an archive, has nothing to play yet.
func (m *Module) playerFor(sh *shows.Show, view *shows.View, listen bool) playerData {
	p := playerData{ShowID: strconv.FormatInt(sh.ID, 10), Kind: "video", HLS: m.assets.URL("hls.light.min.js"), Image: view.ImageURL, Name: sh.Name}
	if listen {
		p.Kind = "audio"
		// The artwork beside the audio controls is no button: the
		// placeholder comes without its play mark.
		if strings.HasSuffix(p.Image, "/placeholder.svg") {
			p.Image += "?mark=none"
		}
	}
	st := stateOf(sh, m.clock.Stamp())
	switch {
	case st.live || st.archive:
		if listen && view.AudioURL != nil {
			p.Src = *view.AudioURL
		} else if view.VideoURL != nil {
			p.Src = *view.VideoURL
		} else if view.AudioURL != nil {
			p.Src, p.Kind = *view.AudioURL, "audio"
		}
	case st.ended && sh.Radio:
		p.Notice = "This radio show has ended. Radio shows are not recorded."
	case st.ended:
		p.Notice = "This show has ended. The recording is being prepared and plays here when it is ready."
	case st.scheduled:
		p.Notice = "This show starts " + utc(sh.Start) + ". The player starts by itself when it goes live."
	default:
		p.Notice = "This show is not live yet. The player starts by itself when it goes live."
	}
	p.Live = !st.archive && !st.ended
	p.LiveAudio = p.Kind == "audio" && p.Live
	if p.Live {
		p.Session = m.shows.Views.ViewerToken(sh.ID)
		if st.live && p.Src != "" && p.Session != "" {
			p.Src = withQuery(p.Src, "vs", p.Session)
		}
	}
	return p
}

// withQuery adds a query parameter to a URL.
func withQuery(u, name, value string) string {
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	return u + sep + name + "=" + url.QueryEscape(value)
}

// chatFor prepares the chat of a show: the last messages of a live (or
// upcoming) show, or the replay of an archive. canPost is false on the
// embed, whose chat is read-only.
func (m *Module) chatFor(c *fiber.Ctx, v *visitor, sh *shows.Show, st state, canPost bool) (chatData, error) {
	id := strconv.FormatInt(sh.ID, 10)
	d := chatData{ShowID: id, WS: "/ws/shows/" + id, Mode: "live", ReplayURL: "/chat/" + id + "/replay", OwnerID: strconv.FormatInt(sh.UserID, 10),
		ChatOff: sh.ChatDisabled}
	d.Moderate = canPost && v.signedIn() && (v.user.ID == sh.UserID || v.p.IsStaff())
	if d.Moderate {
		d.CSRF = v.csrf()
	}
	// Who is here now: the socket's presence events keep it current, but a
	// viewer whose new socket overlaps their old one gets none.
	present, err := m.chat.ChatUsers(c, sh.ID)
	if err != nil {
		return d, err
	}
	d.Present = strconv.Itoa(len(present))
	if st.archive {
		d.Mode = "replay"
	} else {
		msgs, _, err := m.chat.List(c.UserContext(), sh.ID, v.p, app.Page{Number: 1, Size: recentChat})
		if err != nil && !errors.Is(err, shows.ErrNotFound) {
			return d, err
		}
		for i := len(msgs) - 1; i >= 0; i-- {
			d.Messages = append(d.Messages, line(&msgs[i], sh.UserID, d.Moderate, v.p.UserID))
		}
	}
	if canPost {
		if v.signedIn() {
			d.CanPost, d.PostURL, d.CSRF = true, "/chat/"+id, v.csrf()
		} else {
			d.SignInPath = "/signin?next=" + queryEscape(string(c.Request().URI().RequestURI()))
		}
	}
	return d, nil
}

// showEnd is how a show's end reads: Label, the time At, and a Note in
// brackets ("" for none).
type showEnd struct {
	Label, Note string
	At          *time.Time
}

// endOf says when a show ends. A show to come ends at its planned end,
// with the length that plans ("1 h 57 min planned"). A live show's start
// is when it went live, which may be an hour early, so its note is the
// time left, never a length counted from the start. A show that ran ended
// at its start plus its duration, whatever was planned. nil At: nothing
// to say.
func endOf(sh *shows.Show, now time.Time) showEnd {
	switch {
	case sh.Complete:
		if sh.Duration == nil {
			return showEnd{}
		}
		end := sh.Start.Add(time.Duration(*sh.Duration) * time.Second)
		return showEnd{Label: "ended at", At: &end}
	case sh.EndsAt == nil:
		return showEnd{}
	case sh.Live:
		if left := sh.EndsAt.Sub(now); left >= 30*time.Second {
			return showEnd{Label: "ends at", At: sh.EndsAt, Note: length(left) + " left"}
		}
		return showEnd{Label: "planned to end at", At: sh.EndsAt, Note: "running past it"}
	}
	d := sh.EndsAt.Sub(sh.Start)
	if d < 30*time.Second {
		return showEnd{Label: "planned to end at", At: sh.EndsAt, Note: "before its start"}
	}
	return showEnd{Label: "ends at", At: sh.EndsAt, Note: length(d) + " planned"}
}

// length is a duration for people, to the minute: "2 h 5 min", "45 min".
func length(d time.Duration) string {
	d = d.Round(time.Minute)
	h, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
	switch {
	case h == 0:
		return fmt.Sprintf("%d min", m)
	case m == 0:
		return fmt.Sprintf("%d h", h)
	}
	return fmt.Sprintf("%d h %d min", h, m)
}
